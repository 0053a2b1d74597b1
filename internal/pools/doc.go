// Package pools keeps warm pools filled: the pool reconcile, which the
// Reconcile function runs for a pool document's events, for a message
// naming pools/{pool} on proxy-reconcile (a claim, a member that became
// Ready, failed or went) and for every pool on each run of the collector.
//
// A pool's members are proxy documents beneath it,
// pools/{pool}/proxies/{name}. The proxy reconciler (package reconcile)
// boots, proves, replaces and deletes each member's VM as it does any
// proxy's, with generation 0 and no users; this package only decides how
// many members there are. A member a proxy claimed (ClaimedBy) is a
// tombstone: its VM is the proxy's, and the member's uid claims it for the
// collector until the proxy's run has relabelled it.
//
// It is level-triggered: a run reads the pool and its members and does
// what closes the gap, as the table Runs (runs.go) says: pool × what the
// run sees → what it does. `make docs` writes it into
// docs/concepts/warm-pools.md.
//
// Live members are the unclaimed ones neither failed nor being deleted.
// Every step is idempotent and safe under duplicate and concurrent runs: a
// deletion request is idempotent and never marks a claimed member (package
// rules), the creates are one transaction, the deletions carry update-time
// preconditions, and two runs choose the same excess members (booting
// first, then by name). The status is written only when it changed, with
// an update-time precondition, so the event of the run's own write finds
// nothing to do.
//
// Within one process a pool has one run at a time: a run asked for while
// one runs is folded into one more run after it, and the invocation that
// asked returns at once. Twenty claims at once each ask the pool to
// refill; twenty runs at once would each read every member and race their
// creates' transactions, which Firestore makes retry after backing off
// (and the Firestore emulator, while a transaction that queried is open,
// holds every other write), where one run and one more do the same.
//
// The package imports neither Firestore nor Compute: it sees the documents
// through Store and time through an injected clock.
package pools
