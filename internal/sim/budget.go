package sim

import (
	"context"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// The namespace's budget of VMs (NAMESPACE_CREATES_PER_HOUR) and its
// invariant: no namespace causes more VMs per hour than its budget,
// replacements of lost VMs excepted.
//
// A VM is caused when an action or the spec of its namespace asks for it:
// a create, a rotate request, a rotation by maxAge (seen as the document's
// rotations growing with no request behind it). It is born later: a
// Create that makes an instance, or a claim of a warm one. The world
// checks, without asking the stores' counts:
//
//   - every VM born to a proxy answers to a cause of that proxy not yet
//     answered for, or replaces a VM the world harmed (lost, stopped,
//     failed its boot, never ready, never served a change), one birth per
//     harm;
//   - the causes of a namespace fall at most createsPerHour in any hour.

// createsPerHour is the sim namespace's budget: small, so that the
// proxies' creates, rotate requests and rotations by maxAge meet it within
// a schedule and some wait.
const createsPerHour = 6

// budgetWindow is the window createsPerHour counts in: a VM the budget
// holds back waits at most this long.
const budgetWindow = time.Hour

// simMaxAge is the maxAge of a third of the proxies: short, so that they
// rotate by age several times within a schedule.
const simMaxAge = 5 * time.Minute

// limits are what the world's API calls are held to. The interval
// between rotate requests is left out: rotations are rare in a schedule,
// and the ones that lose their only event are what RotationByEventOnly
// needs found.
var limits = tenancy.Limits{Quota: 100, CreatesPerHour: createsPerHour, InPlace: func(string) bool { return true }}

// cause is a VM a namespace's action or spec asked for.
type cause struct {
	at       time.Time
	uid      string
	what     string
	answered bool
}

// caused records a cause at now.
func (w *World) caused(uid, what string) {
	w.stats.Causes++
	w.causes = append(w.causes, &cause{at: w.clock.Now(), uid: uid, what: what})
}

// ageRotation records a rotation by maxAge when a document's rotations
// grew (a Replacing written, or a warm VM claimed) with no rotate request
// behind it.
func (w *World) ageRotation(old, n *proxy.Proxy) {
	if old == nil || n == nil || n.Pool != "" {
		return
	}
	if t := n.Status.RotationWaitUntil; t != nil && (old.Status.RotationWaitUntil == nil || !t.Equal(*old.Status.RotationWaitUntil)) {
		w.stats.Waits++
	}
	if n.Status.Rotations <= old.Status.Rotations || proxy.RotationRequested(old.RotateRequestTime, old.Reconciler.BootStart) {
		return
	}
	w.stats.AgeRotations++
	w.caused(n.UID, "rotation by maxAge")
}

// harmed records that the world harmed VM id (lost, stopped, failed its
// boot, hung, stuck on a change): the proxy that holds it owes one
// replacement no cause answers for. Whose it is: the live document that
// names it, or else the uid it is labelled with (a VM whose create's
// record is not written yet, a pool member's).
func (w *World) harmed(id string) {
	ctx := context.Background()
	for _, key := range w.store.Keys() {
		if p, err := w.store.Get(ctx, key); err == nil && p.ClaimedBy == nil && p.Status.ProviderID == id {
			w.owed[p.UID]++
			return
		}
	}
	for _, in := range w.mock.Instances() {
		if in.ID == id {
			w.owed[in.UID]++
			return
		}
	}
}

// born records a VM born to uid at now, a Create's or a claim's. One that
// replaces a harmed VM answers to the harm (a replacement whose create
// failed later falls back to a claim, so a claim may too); any other
// answers to the oldest cause of its proxy not yet answered for, or
// breaks the invariant. A pool member's VMs answer to no namespace.
func (w *World) born(id, uid string, member bool) {
	if w.owed[uid] > 0 {
		w.owed[uid]--
		w.stats.Excused++
		return
	}
	if member {
		return
	}
	for _, c := range w.causes {
		if c.uid == uid && !c.answered {
			c.answered = true
			return
		}
	}
	w.violation("VM %s was born to uid %s at %s, but no create, rotate request or maxAge of its namespace asked for it, and it replaces no lost VM",
		id, uid, w.clock.Now().Format(time.TimeOnly))
}

// claimed is a claim committed: the claimed VM is born to the proxy, and a
// harm the world did to it while it was the member's is the proxy's to be
// excused now.
func (w *World) claimed(ctx context.Context, member, claimed *proxy.Proxy) {
	w.owed[claimed.UID] += w.owed[member.UID]
	delete(w.owed, member.UID)
	w.born(claimed.Status.ProviderID, claimed.UID, false)
}

// birthOf is called around a Create: before it, it reads the instance of
// req's name; the func it returns, called after it, takes a new instance
// of that name (none before, or one made at another time) as a birth.
func (w *World) birthOf(req provider.CreateRequest) (after func()) {
	id := "mock://" + req.Name
	before, existed := w.instance(id)
	return func() {
		in, ok := w.instance(id)
		if !ok || (existed && in.CreatedAt.Equal(before.CreatedAt)) {
			return
		}
		w.born(id, req.UID, req.Pool != "")
		if w.mock.Hangs(id) {
			// It will never boot: its replacement is owed.
			w.owed[req.UID]++
		}
	}
}

func (w *World) instance(id string) (provider.Instance, bool) {
	i := slices.IndexFunc(w.mock.Instances(), func(in provider.Instance) bool { return in.ID == id })
	if i < 0 {
		return provider.Instance{}, false
	}
	return w.mock.Instances()[i], true
}

// checkBudget states that the namespace's causes fall at most
// createsPerHour in any hour: the window of each cause, the hour up to
// it, holds no more.
func (w *World) checkBudget() {
	for i, c := range w.causes {
		n := 0
		for _, d := range w.causes[:i+1] {
			if d.at.After(c.at.Add(-budgetWindow)) {
				n++
			}
		}
		if n > createsPerHour {
			w.violation("namespace %s caused %d VMs in the hour up to %s (the last: %s of uid %s), over its budget of %d", namespace, n,
				c.at.Format(time.TimeOnly), c.what, c.uid, createsPerHour)
			return
		}
	}
}
