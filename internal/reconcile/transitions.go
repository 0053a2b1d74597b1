package reconcile

import (
	"slices"

	"github.com/egress-proxies/egress/internal/proxy"
)

// Transition is one row of a proxy's state machine: in one of From, a run
// that sees Sees does Does and leaves the document in one of To.
type Transition struct {
	// From are the phases the row applies in; none: every phase.
	From []proxy.Phase
	Sees string
	Does string
	// To are the phases the row may leave the document in; none: the phase
	// it was in. Gone: the document is deleted.
	To []proxy.Phase
	// By is who writes the change when it is not the reconciler: the API
	// or a pool's reconcile (package pools).
	By string
	// Label names the change in the state diagram
	// (docs/concepts/phases.md); "" for a row that changes no phase.
	Label string
}

// Start and Gone are the table's two ends: before a document exists,
// and after it was deleted. They are no phase a document holds.
const (
	Start proxy.Phase = "(start)"
	Gone  proxy.Phase = "(gone)"
)

// Writers of the rows that the reconciler does not write.
const (
	ByAPI  = "the API"
	ByPool = "a pool"
)

// Transitions is a proxy's state machine, as step dispatches it (phase ×
// what the run sees → what it does → the next phase), with the changes
// the API and the pools make to the same documents (a pool's members are
// proxy documents, reconciled as any proxy's). `make docs` draws it in
// docs/concepts/phases.md, and the simulation holds the code to it: every
// change of phase the simulation makes is an edge of this table
// (internal/sim), and `make sim` fails on an edge of the table its 10,000
// seeds never made unless it is named there with the reason.
var Transitions = []Transition{
	{From: []proxy.Phase{Start}, Sees: "a POST (or a pool's missing member)", Does: "store the document",
		To: []proxy.Phase{proxy.PhasePending}, By: ByAPI + " or " + ByPool, Label: "POST"},
	{From: []proxy.Phase{proxy.PhasePending, proxy.PhaseCreating, proxy.PhaseProvisioning, proxy.PhaseReady, proxy.PhaseReconfiguring, proxy.PhaseReplacing, proxy.PhaseFailed},
		Sees: "a DELETE (or a member its pool no longer keeps)", Does: "record the deletion request and Deleting, in one write",
		To: []proxy.Phase{proxy.PhaseDeleting}, By: ByAPI + " or " + ByPool, Label: "DELETE"},

	{From: []proxy.Phase{proxy.PhaseDeleting}, Sees: "deletion requested",
		Does: "Delete the VM; once Get says gone, release a Static address, delete the document",
		To:   []proxy.Phase{Gone}, Label: "VM gone"},
	{Sees: "a call-home of another uid", Does: "nothing (one read)"},
	{Sees: "another run's lease", Does: "nothing"},
	{From: []proxy.Phase{proxy.PhaseReady}, Sees: "a pool's member claimed by a proxy (a tombstone)",
		Does: "nothing: the VM is the proxy's; a deletion request deletes the document only",
		To:   []proxy.Phase{proxy.PhaseReady, Gone}, Label: "claimed member deleted"},
	{From: []proxy.Phase{proxy.PhaseReady}, Sees: "its member claimed over TombstoneTTL ago, or its claim done while the pool is deleted",
		Does: "delete the member's document, never its VM", To: []proxy.Phase{Gone}, By: ByPool, Label: "claimed member deleted"},

	{From: []proxy.Phase{proxy.PhasePending, proxy.PhaseCreating},
		Sees: "a warm pool serves the spec and has a warm member; no create pending",
		Does: "in one transaction take the VM and mark the member claimed; Reconfigure (configuration and uid); ask the pool to refill",
		To:   []proxy.Phase{proxy.PhaseProvisioning}, Label: "claim a warm VM"},
	{From: []proxy.Phase{proxy.PhasePending}, Sees: "no VM",
		Does: "record Creating, the create-pending name and the credentials",
		To:   []proxy.Phase{proxy.PhaseCreating}, Label: "create"},
	{From: []proxy.Phase{proxy.PhaseCreating}, Sees: "no providerID",
		Does: "Create; record the providerID",
		To:   []proxy.Phase{proxy.PhaseProvisioning}, Label: "Create"},
	{From: []proxy.Phase{proxy.PhaseCreating, proxy.PhaseProvisioning},
		Sees: "the create failed, at once or in its operation (a Get of the missing VM): the zone is full, the provider chooses zones and one is left",
		Does: "note the zone; a new attempt in another one",
		To:   []proxy.Phase{proxy.PhaseCreating}, Label: "zone full: another"},
	{From: []proxy.Phase{proxy.PhaseCreating, proxy.PhaseProvisioning},
		Sees: "the create failed for quota, or no capacity anywhere",
		Does: "record why, and NotBefore: events do nothing until the sweep's retry",
		To:   []proxy.Phase{proxy.PhaseCreating}, Label: "quota, stockout: retry"},
	{From: []proxy.Phase{proxy.PhaseReplacing},
		Sees: "the create of the replacement failed for capacity or quota",
		Does: "the same, staying Replacing"},

	{From: []proxy.Phase{proxy.PhaseProvisioning}, Sees: "a write's event",
		Does: "nothing: the VM calls home, or the sweep looks"},
	{From: []proxy.Phase{proxy.PhaseProvisioning}, Sees: "a request; Running with an IP, and serving the generation",
		Does: "record the endpoint and observedGeneration",
		To:   []proxy.Phase{proxy.PhaseReady}, Label: "serving"},
	{From: []proxy.Phase{proxy.PhaseProvisioning}, Sees: "a request; still booting, or serving another generation",
		Does: "nothing; for a VM that cannot call home (provider.Polled), look again every PollInterval within the run's wait budget, then hand on to the next run, as after its Create"},
	{From: []proxy.Phase{proxy.PhaseProvisioning}, Sees: "booting past BootTimeout (and past ReconfigureTimeout since a configuration it was handed), or a BootError",
		Does: "count a boot failure; replace it, or at MaxBootFailures fail with its console's last lines",
		To:   []proxy.Phase{proxy.PhaseReplacing, proxy.PhaseFailed}, Label: "boot failed"},
	{From: []proxy.Phase{proxy.PhaseProvisioning}, Sees: "not found, within NotFoundGrace",
		Does: "record when it went missing"},
	{From: []proxy.Phase{proxy.PhaseReady}, Sees: "a write's event, or a request and Running",
		Does: "nothing"},
	{From: []proxy.Phase{proxy.PhaseReady}, Sees: "the collector's request for its cost (status.cost spend.Refresh old, or of another month); settled, no rotation due",
		Does: "write status.cost only, with no look at the VM"},

	{From: []proxy.Phase{proxy.PhaseReady, proxy.PhaseReconfiguring},
		Sees: "a new generation (a PATCH, new credentials); the provider is a Reconfigurer and the spec has no cloud-init of its own",
		Does: "render it with the document's credentials, Reconfigure, record SentGeneration; endpoint, IP and rotations stay; a Retiring VM is given it too (RetiringGeneration), or deleted at once if it cannot be",
		To:   []proxy.Phase{proxy.PhaseReconfiguring}, Label: "PATCH, new credentials"},
	{From: []proxy.Phase{proxy.PhaseProvisioning},
		Sees: "a new generation (a VM claimed from a warm pool: SentGeneration 0; a change while booting)",
		Does: "the same"},
	{From: []proxy.Phase{proxy.PhaseProvisioning, proxy.PhaseReady, proxy.PhaseReconfiguring},
		Sees: "a new generation; no Reconfigurer, or the spec's own cloud-init",
		Does: "record Replacing (neither a rotation nor a replacement), Delete the VM",
		To:   []proxy.Phase{proxy.PhaseReplacing}, Label: "change needs a new VM"},
	{From: []proxy.Phase{proxy.PhaseReconfiguring}, Sees: "a write's event",
		Does: "nothing: the VM calls home once it serves it, or the sweep looks"},
	{From: []proxy.Phase{proxy.PhaseReconfiguring}, Sees: "a request; the VM serves the generation",
		Does: "record observedGeneration", To: []proxy.Phase{proxy.PhaseReady}, Label: "serving it"},
	{From: []proxy.Phase{proxy.PhaseReconfiguring}, Sees: "a request; it serves another, within ReconfigureTimeout",
		Does: "nothing"},
	{From: []proxy.Phase{proxy.PhaseReconfiguring},
		Sees: "the VM refused the generation it was given and serves the previous one (RefusedGeneration: egress/error)",
		Does: "count a replacement, record Replacing with the VM's reason, Delete the VM: at once, not at the timeout",
		To:   []proxy.Phase{proxy.PhaseReplacing}, Label: "change refused"},
	{From: []proxy.Phase{proxy.PhaseProvisioning},
		Sees: "the VM refused the generation it was given (a claimed warm VM)",
		Does: "count a boot failure; replace it, or at MaxBootFailures fail",
		To:   []proxy.Phase{proxy.PhaseReplacing, proxy.PhaseFailed}, Label: "boot failed"},
	{From: []proxy.Phase{proxy.PhaseReconfiguring}, Sees: "past ReconfigureTimeout",
		Does: "count a replacement, record Replacing, Delete the VM",
		To:   []proxy.Phase{proxy.PhaseReplacing}, Label: "not served in time"},

	{From: []proxy.Phase{proxy.PhaseProvisioning, proxy.PhaseReady, proxy.PhaseReconfiguring},
		Sees: "a rotate request after the VM was made, or the VM older than maxAge; a warm pool serves the spec and has a warm member",
		Does: "count a rotation; claim the warm VM and keep the old one in Retiring (make before break)",
		To:   []proxy.Phase{proxy.PhaseProvisioning}, Label: "rotate: claim a warm VM"},
	{From: []proxy.Phase{proxy.PhaseProvisioning, proxy.PhaseReady, proxy.PhaseReconfiguring},
		Sees: "a rotate request after the VM was made, or the VM older than maxAge; no warm VM",
		Does: "count a rotation, record Replacing, Delete the VM (break before make)",
		To:   []proxy.Phase{proxy.PhaseReplacing}, Label: "rotate"},
	{From: []proxy.Phase{proxy.PhaseReady}, Sees: "a Retiring VM",
		Does: "Delete it, forget it"},
	{From: []proxy.Phase{proxy.PhaseProvisioning, proxy.PhaseReady, proxy.PhaseReconfiguring},
		Sees: "stopped or terminated; not found (past the grace, or once Ready); Reconfigure says not found",
		Does: "count a replacement, record Replacing, Delete the VM",
		To:   []proxy.Phase{proxy.PhaseReplacing}, Label: "VM lost"},
	{From: []proxy.Phase{proxy.PhaseReplacing}, Sees: "the old VM still there",
		Does: "Delete it again, wait for it to go"},
	{From: []proxy.Phase{proxy.PhaseReplacing}, Sees: "the old VM gone",
		Does: "Create again, a new attempt (request id); a Static proxy's address reused",
		To:   []proxy.Phase{proxy.PhaseProvisioning}, Label: "Create again"},
	{From: []proxy.Phase{proxy.PhaseReplacing},
		Sees: "the old VM gone, and a Retiring VM (the claim of a make-before-break rotation was lost)",
		Does: "Delete the Retiring VM (it may carry the name the Create uses), wait for it to go, forget it; then Create"},

	{Sees: "a provider call queued by the account's budget (`queued: N calls ahead`) or refused by the cloud's rate limit",
		Does: "record Ready False, reason Queued, with the queue's message (a Ready proxy stays Ready); no attempt counted; retry no sooner than the wait it was given"},
	{Sees: "another retryable provider error", Does: "record it, retry after a backoff"},
	{From: []proxy.Phase{proxy.PhasePending, proxy.PhaseCreating, proxy.PhaseProvisioning, proxy.PhaseReady, proxy.PhaseReconfiguring, proxy.PhaseReplacing},
		Sees: "a permanent provider error (or a create's operation that says so), or its provider not configured",
		Does: "record Failed with the provider's message, still naming the VM; then as Failed with a VM",
		To:   []proxy.Phase{proxy.PhaseFailed}, Label: "permanent error"},
	{From: []proxy.Phase{proxy.PhaseFailed}, Sees: "a VM still named (the run that failed it, or one cut short)",
		Does: "Delete it; once Get says gone, forget it (a Static proxy's address stays); a refused Delete waits for the sweep"},
	{From: []proxy.Phase{proxy.PhaseFailed}, Sees: "no VM",
		Does: "nothing, until the proxy is deleted"},
}

// Edge is a change of phase: From and To differ.
type Edge struct{ From, To proxy.Phase }

// Edges are the changes of phase the table's rows make, each once, in the
// order of the rows.
func Edges() []Edge {
	var out []Edge
	for _, t := range Transitions {
		for _, e := range t.Edges() {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// Edges are the changes of phase the row makes: each of From (every phase
// when none) to each of To (the same when none) that differs.
func (t Transition) Edges() []Edge {
	from := t.From
	if len(from) == 0 {
		from = proxy.Phases
	}
	var out []Edge
	for _, f := range from {
		for _, to := range t.To {
			if f != to {
				out = append(out, Edge{f, to})
			}
		}
	}
	return out
}
