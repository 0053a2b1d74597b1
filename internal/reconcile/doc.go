// Package reconcile drives one proxy document towards its VM: it is the
// logic the Reconcile function runs for every event, and the simulation runs
// under faults.
//
// It is level-triggered. An event only says which document to look at; a
// run reads the document fresh, looks at the VM through the provider where
// it must, and does the one next thing that closes the gap. No run waits
// for a VM to boot: after Create it records Provisioning and returns, and
// the VM's call-home (its startup script's self-test passed) or the garbage
// collector's sweep brings the run that sees it ready.
//
// The state machine is the table Transitions (transitions.go): phase ×
// what the run sees → what it does → the next phase, as step dispatches
// it, with the changes the API and the pools make to the same documents.
// `make docs` draws it in docs/concepts/phases.md, and the simulation
// holds the code to it (every change of phase it makes is an edge of the
// table).
//
// Generations. A change of the configuration a VM serves (a PATCH of
// allowedSourceRanges, connectPorts, bandwidthLimit or accessLog, a
// :rotateCredentials) is a new generation of the document. Bookkeeping.SentGeneration is the generation
// the current VM was given, at its Create or by the last Reconfigure; a
// document whose generation differs has a change to hand over, and that is
// the one thing a write's event acts on in Ready, Provisioning and
// Reconfiguring. A VM of the default bootstrap reports the generation it
// serves (provider.Instance.Generation), and "serving the generation" is:
// it reports the document's; or the reconciler renders no configuration
// for it (a spec's own cloud-init, or no Options.Bootstrap), so there is
// none to report; or the proxy is Ready already (a report that lags, as
// after a restart, does not unmake it); or it reports 0 and its provider
// is no Reconfigurer (a provider from before generations, whose VMs are
// made with the document's generation). status.observedGeneration is the
// generation the proxy serves: written when it is Ready, never on the way.
// A Ready document from before SentGeneration was recorded (0) was made
// with its observedGeneration, which the reconciler of then wrote on every
// write.
//
// A Failed proxy costs nothing: Failed is written while the document still
// names the VM, and the VM is deleted after, so a run cut short between
// the two leaves a Failed document that names a VM, which the write's event
// or the sweep finishes (a Failed proxy with a VM is not settled). The
// garbage collector would not: the Failed document claims its uid.
//
// A run waits inside itself only for what takes seconds: a VM on its way
// out (deletion, replacement, failure) and a provider call to retry. Those waits use
// capped exponential backoff with jitter within a budget; when the budget
// runs out the run hands its lease on through a message on proxy-reconcile.
//
// What makes it safe under Eventarc's at-least-once, unordered delivery:
//
//   - Every write carries the update time the run read (an update-time
//     precondition). A run whose document changed under it reads again and
//     decides again; no write is lost or applied over a newer document.
//   - Status is written only when it changed (the whole status and
//     bookkeeping compared, not a list of fields), so the event of a run's
//     own write finds nothing to do and the chain ends.
//   - A run that is about to act (create, replace) takes a lease in the
//     document, in the same write that records its intent. A concurrent or
//     duplicate run sees the lease and stops after one read.
//   - A call-home is only a hint: the run checks the uid it names and asks
//     the provider, so a forged or repeated one costs a read and a Get.
//
// The package imports neither Firestore nor Compute: it sees the document
// through Store, the VM through provider.Provider, and time through an
// injected clock.
package reconcile
