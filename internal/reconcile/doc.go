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
// The state machine, as step dispatches it (phase × what the run sees →
// what it does → the next phase):
//
//	phase          sees                                does                                   next
//	(any)          deletion requested                  Delete the VM; once Get says gone,     (gone)
//	                                                   release a Static address, delete the
//	                                                   document
//	(any)          a call-home of another uid          nothing (one read)                     same
//	(any)          another run's lease                 nothing                                same
//	(a member)     claimed by a proxy (a tombstone)    nothing: the VM is the proxy's; a      same, or
//	                                                   deletion deletes the document only     (gone)
//	Pending,       a warm pool serves the spec and     in one transaction take the VM and     Provisioning
//	Creating       has a warm member; no create        mark the member claimed; Reconfigure
//	               pending                             (configuration and uid, below); ask
//	                                                   the pool to refill
//	Pending        —                                   record Creating and the create-pending Creating
//	Creating       (no providerID)                     name (and the credentials), Create     → Provisioning
//	Creating       the zone is full, the provider      note the zone; Create in another one   → Provisioning
//	               chooses zones and one is left
//	Creating       quota, or no capacity anywhere      record why, and NotBefore: events do   Creating
//	                                                   nothing until the sweep's retry
//	Provisioning   a write's event                     nothing: the VM calls home, or the     Provisioning
//	                                                   sweep looks
//	Provisioning   a request; Running with an IP, and  record the endpoint and                 Ready
//	               serving the generation (below)      observedGeneration
//	Provisioning   a request; still booting, or        nothing                                Provisioning
//	               serving another generation
//	Provisioning   booting past BootTimeout, or a      count a boot failure; replace, or at   Replacing
//	               BootError                           MaxBootFailures fail (below) with its  or Failed
//	                                                   console's last lines
//	Provisioning   not found, within NotFoundGrace     record when it went missing            Provisioning
//	Ready          a write's event                     nothing                                Ready
//	Ready          a request; Running                  nothing                                Ready
//	Ready,         a new generation (any event: a      render it with the document's          Reconfiguring
//	Reconfiguring  PATCH, new credentials); the        credentials, Reconfigure, record
//	               provider is a Reconfigurer and the  SentGeneration; endpoint, IP and
//	               spec has no cloud-init of its own   rotations stay; a Retiring VM is
//	                                                   given it too (RetiringGeneration),
//	                                                   or deleted at once if it cannot be
//	Provisioning   a new generation (a VM claimed      the same                               Provisioning
//	               from a warm pool: SentGeneration
//	               0; a change while booting)
//	Provisioning,  a new generation; no Reconfigurer,  record Replacing (neither a rotation   Replacing
//	Ready,         or the spec's own cloud-init        nor a replacement), Delete it
//	Reconfiguring
//	Reconfiguring  a write's event                     nothing: the VM calls home once it     Reconfiguring
//	                                                   serves it, or the sweep looks
//	Reconfiguring  a request; the VM serves the        record observedGeneration              Ready
//	               generation
//	Reconfiguring  a request; it serves another,       nothing                                Reconfiguring
//	               within ReconfigureTimeout
//	Reconfiguring  the VM refused the generation it    count a replacement, record            Replacing
//	               was given and serves the previous   Replacing with the VM's reason, Delete
//	               (RefusedGeneration, egress/error)   it: at once, not at the timeout
//	Provisioning   the VM refused the generation it    count a boot failure; replace, or at   Replacing
//	               was given (a claimed warm VM)       MaxBootFailures fail                   or Failed
//	Reconfiguring  past ReconfigureTimeout             count a replacement, record            Replacing
//	                                                   Replacing, Delete it
//	Provisioning,  a rotate request after the VM was   count a rotation; a warm pool's VM:    Provisioning
//	Ready,         made, or the VM older than maxAge   claim it, keep the old in Retiring
//	Reconfiguring                                      (make before break); else record       or Replacing
//	                                                   Replacing, Delete it (break before
//	                                                   make)
//	Ready          a Retiring VM                       Delete it, forget it                   Ready
//	Provisioning,  stopped or terminated; not found    count a replacement, record Replacing, Replacing
//	Ready,         (past the grace, or once Ready);    Delete it
//	Reconfiguring  Reconfigure says not found
//	Replacing      the old VM still there              Delete it again, wait for it to go     Replacing
//	Replacing      the old VM gone                     Create again, a new attempt (request   Provisioning
//	                                                   id); a Static proxy's address reused
//	Replacing      the old VM gone, a Retiring VM      Delete the Retiring VM (it may carry   Replacing
//	               (the claim of a make-before-break   the name the Create uses), wait for
//	               rotation was lost)                  it to go, forget it, then Create
//	(any)          a retryable provider error          record it, retry after a backoff       same
//	(any)          a permanent provider error (or a    record Failed with the provider's      Failed
//	               create's operation that says so)    message, still naming the VM; then
//	                                                   as Failed with a VM
//	Failed         a VM still named (the run that      Delete it; once Get says gone, forget  Failed
//	               failed it, or one cut short)        it (a Static proxy's address stays);
//	                                                   a refused Delete waits for the sweep
//	Failed         no VM                               nothing, until the proxy is deleted    Failed
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
