package pools

// Run is one row of what a pool's reconcile does: for a pool in state
// Pool, a run that sees Sees does Does.
type Run struct {
	// Pool is the pool's state: live, being deleted (a deletion was
	// requested), or "" for either.
	Pool string
	Sees string
	Does string
}

// The states of a pool the table names.
const (
	Live         = "live"
	BeingDeleted = "being deleted"
)

// Runs is the pool reconcile, in the order Reconcile takes the rows (pool
// × what the run sees → what it does). `make docs` writes it into
// docs/concepts/warm-pools.md.
var Runs = []Run{
	{Sees: "no pool document", Does: "nothing"},
	{Sees: "a member claimed over TombstoneTTL ago", Does: "delete its document (never its VM)"},
	{Pool: BeingDeleted, Sees: "a member whose claim is done (the proxy relabelled the VM, moved on or is gone)",
		Does: "delete its document (never its VM)"},
	{Sees: "a Failed unclaimed member",
		Does: "request its deletion (its reconcile deletes the VM, then the document); RefillAfter = now + RefillBackoff"},
	{Pool: Live, Sees: "fewer live members than size, a member failed less than RefillBackoff ago",
		Does: "nothing until RefillAfter (the sweep brings the run after it); the message says why"},
	{Pool: Live, Sees: "fewer live members than size",
		Does: "create the missing ones, in one transaction with the query of the members (never overfilled)"},
	{Pool: Live, Sees: "more live members than size", Does: "request the deletion of the excess, booting ones first"},
	{Pool: BeingDeleted, Sees: "unclaimed members", Does: "request the deletion of each"},
	{Pool: BeingDeleted, Sees: "no member document left", Does: "delete the pool document"},
	{Sees: "a status that differs from what it sees", Does: "write it (warm, booting, claimsLastHour in all and by namespace, message)"},
}
