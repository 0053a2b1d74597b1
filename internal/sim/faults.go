package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/store/storefake"
)

// changed turns each write into a Firestore event, as Eventarc would: lost,
// duplicated or late while faults are on. It also records what the API
// shows, for the generation invariant.
func (w *World) changed(c storefake.Change) {
	w.traceWrite(c)
	w.phaseChanged(c)
	if n := c.New; n != nil {
		if g := n.Status.ObservedGeneration; g < w.obsGen[n.UID] {
			w.violation("document %s (uid %s) went back from generation %d to %d", c.Key, n.UID, w.obsGen[n.UID], g)
		} else {
			w.obsGen[n.UID] = g
		}
		if n.Spec.IPPolicy == proxy.IPStatic && n.Status.Phase == proxy.PhaseReady {
			// A Static proxy's address survives every replacement.
			if first, ok := w.staticEndpoint[n.UID]; !ok {
				w.staticEndpoint[n.UID] = n.Status.Endpoint
			} else if first != n.Status.Endpoint {
				w.violation("Static proxy %s (uid %s) moved from %s to %s", c.Key, n.UID, first, n.Status.Endpoint)
			}
		}
		// A proxy's credentials are made once and kept across every VM
		// (replacements, rotations, claims alike) until the user asks for
		// new ones (:rotateCredentials).
		if cr := n.Reconciler.Credentials; cr.Username != "" {
			if last, ok := w.credentials[n.UID]; !ok || n.UID == w.rotatingCreds {
				w.credentials[n.UID] = cr
			} else if last != cr {
				w.violation("proxy %s (uid %s) changed its credentials from user %s to %s", c.Key, n.UID, last.Username, cr.Username)
			}
		}
		if c.Key.Pool != "" {
			w.memberOf[n.UID] = c.Key.Pool
		}
		w.revoked(c.Key, n)
	}
	if w.pools != nil {
		w.owners(context.Background())
	}
	w.ageRotation(c.Old, c.New)
	copies := 1
	if w.faults {
		drop := 0.08
		if rotateAsked(c) {
			// A rotate request's event is lost more often than others:
			// rotations are rare in a schedule (the namespace's budget
			// refuses most), and one whose only event is lost is what
			// the collector's sweep must catch (RotationByEventOnly).
			drop = 0.5
		}
		switch r := w.rng.Float64(); {
		case r < drop:
			w.stats.Dropped++
			return
		case r < drop+0.10:
			w.stats.Duplicated++
			copies = 2 + w.rng.IntN(2)
		}
	}
	for range copies {
		w.enqueue(delivery{key: c.Key, trigger: reconcile.Trigger{Reason: proxy.ReasonWritten}}, w.delay())
	}
}

// rotateAsked reports whether the write is a rotate request's: a new
// rotateRequestTime on a document that was there before.
func rotateAsked(c storefake.Change) bool {
	if c.Old == nil || c.New == nil || c.New.RotateRequestTime == nil {
		return false
	}
	return c.Old.RotateRequestTime == nil || !c.Old.RotateRequestTime.Equal(*c.New.RotateRequestTime)
}

// callHome is a VM's call-home on proxy-reconcile: lost, duplicated or
// late while faults are on, as a Pub/Sub message may be.
func (w *World) callHome(c mock.CallHome) {
	msg := proxy.ReconcileMessage{Namespace: c.Namespace, Pool: c.Pool, Name: c.Name, UID: c.UID, Reason: proxy.ReasonReady}
	if c.BootError != "" {
		msg.Reason = proxy.ReasonBootFailed
	}
	copies := 1
	if w.faults {
		switch r := w.rng.Float64(); {
		case r < 0.1:
			w.stats.CallHomesLost++
			return
		case r < 0.2:
			w.stats.CallHomesDuplicated++
			copies = 2
		}
	}
	for range copies {
		d := w.delay()
		if d > 5*time.Second {
			w.stats.CallHomesDelayed++
		}
		w.enqueue(delivery{key: proxy.Key{Namespace: c.Namespace, Name: c.Name}, trigger: reconcile.TriggerOf(msg)}, d)
	}
}

// maybeFault injects at most one fault or user action, and, from a
// stream of its own, now and then a resource of another deployment.
func (w *World) maybeFault() {
	if w.shared.Float64() < 0.006 {
		w.foreignResource()
	}
	w.revocation()
	for i, c := range w.clouds {
		if f, ok := c.Fault(); ok {
			w.cloudFault(i, f)
		}
	}
	switch r := w.rng.Float64(); {
	case r < 0.04:
		w.userAction()
	case r < 0.05:
		w.stats.ProviderFaults++
		err := provider.NewError(provider.KindTransient, "sim", "", errors.New("503"))
		if w.rng.IntN(2) == 0 {
			err = provider.NewError(provider.KindRateLimited, "sim", "", errors.New("429"))
		}
		w.mock.FailNext([]mock.Method{mock.MethodCreate, mock.MethodGet, mock.MethodDelete}[w.rng.IntN(3)], 1, err)
	case r < 0.055:
		w.stats.ProviderFaults++
		w.mock.FailNextAfterEffect(mock.MethodCreate, 1, provider.NewError(provider.KindTransient, "sim", "", errResponseLost))
	case r < 0.06:
		if ins := w.own(); len(ins) > 0 {
			w.stats.Lost++
			id := ins[w.rng.IntN(len(ins))].ID
			w.harmed(id)
			w.mock.Lose(id)
		}
	case r < 0.065:
		if ins := w.own(); len(ins) > 0 {
			w.stats.Stopped++
			id := ins[w.rng.IntN(len(ins))].ID
			w.harmed(id)
			w.mock.Stop(id, provider.StateStopped)
		}
	case r < 0.07:
		w.stats.NeverReady++
		w.mock.NeverReady(1)
	case r < 0.075:
		if ins := w.own(); len(ins) > 0 {
			w.stats.BootErrors++
			id := ins[w.rng.IntN(len(ins))].ID
			w.harmed(id)
			w.mock.FailBoot(id, "tinyproxy does not answer")
		}
	case r < 0.0875:
		w.stats.AsyncCreateFailures++
		kind, msg := provider.KindQuota, "QUOTA_EXCEEDED: Quota 'CPUS' exceeded. Limit: 8.0 in region us-central1."
		if w.rng.IntN(4) == 0 {
			kind, msg = provider.KindPermanent, "RESOURCE_NOT_FOUND: The resource 'projects/debian-cloud/global/images/family/debian-99' was not found"
		}
		w.mock.FailCreatesAsync("", 1, kind, msg)
	case r < 0.09:
		z := zones[w.rng.IntN(len(zones))]
		if !slices.Contains(w.stockedOut, z) {
			w.stats.Stockouts++
			w.stockedOut = append(w.stockedOut, z)
			w.mock.Stockout(z)
		}
	case r < 0.095:
		// A message no VM sent: for the name's uid, or for one it never had.
		w.stats.CallHomesForged++
		name := names[w.rng.IntN(len(names))]
		t := reconcile.Trigger{Reason: proxy.ReasonReady, UID: fmt.Sprintf("%08x-0000-4000-8000-000000000000", w.rng.Uint32())}
		if uids := w.uids[name]; len(uids) > 0 && w.rng.IntN(2) == 0 {
			t.UID = uids[len(uids)-1]
		}
		w.enqueue(delivery{key: proxy.Key{Namespace: namespace, Name: name}, trigger: t}, w.delay())
	case r < 0.0975:
		w.stats.ReconfigureErrors++
		err := provider.NewError(provider.KindTransient, "sim", "", errors.New("503"))
		if w.rng.IntN(2) == 0 {
			w.mock.FailNextAfterEffect(mock.MethodReconfigure, 1, provider.NewError(provider.KindTransient, "sim", "", errResponseLost))
		} else {
			w.mock.FailNext(mock.MethodReconfigure, 1, err)
		}
	case r < 0.1:
		w.stats.ReconfigureStuck++
		w.stuck++
	case r < 0.11:
		w.poolAction()
	}
}

// errResponseLost is the error of a provider call that took effect and
// whose answer was lost (mock.FailNextAfterEffect): what the call did,
// it did.
var errResponseLost = errors.New("response lost")

// revocation, from a stream of its own (so that the other faults'
// schedules are as they were until one of these happens), now and then:
// arms a refusal (the next running VM handed a configuration refuses it,
// rolls back and says so at once: egress/error and a call-home); asks
// for the rotation of a Ready proxy a pool serves, which a warm VM makes
// before it breaks; and rotates the credentials of a proxy whose
// make-before-break rotation still keeps its old VM, as a user who finds
// the password leaked right then does.
func (w *World) revocation() {
	ctx := context.Background()
	switch r := w.revocations.Float64(); {
	case r < 0.004:
		w.refuse = true
	case r < 0.1:
		for _, key := range w.store.Keys() {
			p, err := w.store.Get(ctx, key)
			if err != nil || key.Pool != "" || p.Status.Phase != proxy.PhaseReady || !w.warmFor(ctx, p.Spec) {
				continue
			}
			switch p, err := w.store.RequestRotation(ctx, key, w.clock.Now(), limits); {
			case err == nil:
				w.stats.Rotations++
				w.caused(p.UID, "rotate request")
			case errors.Is(err, proxy.ErrCreatesPerHour):
				w.stats.Refused429++
			}
			return
		}
	case r < 0.3:
		for _, key := range w.store.Keys() {
			p, err := w.store.Get(ctx, key)
			if err != nil || p.Reconciler.Retiring == "" || p.DeleteRequestTime != nil {
				continue
			}
			w.rotatingCreds = p.UID
			if _, err := w.store.RotateCredentials(ctx, key, w.clock.Now(), limits); err == nil {
				w.stats.CredentialRotations++
				w.stats.RevokedWhileRetiring++
			}
			w.rotatingCreds = ""
			return
		}
	}
}

// warmFor reports whether a pool that serves spec has a warm member now:
// a rotation then makes its new VM before it breaks the old one.
func (w *World) warmFor(ctx context.Context, spec proxy.Spec) bool {
	for _, name := range poolNames {
		if ps, ok := w.poolSpecs[name]; !ok || !ps.Serves(spec) {
			continue
		}
		members, _ := w.store.Members(ctx, name)
		for _, m := range members {
			if rules.Warm(m) {
				return true
			}
		}
	}
	return false
}

// own are this deployment's VMs: the ones the faults above lose, stop and
// fail. Another deployment's live their own life.
func (w *World) own() []provider.Instance {
	var out []provider.Instance
	for _, in := range w.mock.Instances() {
		if in.Deployment == provider.DefaultDeployment {
			out = append(out, in)
		}
	}
	return out
}

// foreignResource plants, in the same project, a VM (and, a third of the
// time, its static address) of a second deployment, whose documents this
// one never sees, or a managed VM without the deployment label, as a
// release before the label made it. The collector must never delete one:
// each would be an orphan of old age here.
func (w *World) foreignResource() {
	uid := fmt.Sprintf("%08x-0000-4000-9000-%012x", w.shared.Uint32(), w.shared.Uint64()&0xffffffffffff)
	if w.shared.IntN(4) == 0 {
		w.stats.Unlabelled++
		w.foreign = append(w.foreign, w.mock.AddForeign(provider.NameFromUID(uid), map[string]string{
			provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid}))
		return
	}
	id, err := w.other.Create(context.Background(), provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "other-deployment", ProxyName: "p",
		Placement: provider.Placement{Region: "us-central1"}, StaticIP: w.shared.IntN(3) == 0,
	})
	if err != nil {
		return // a provider fault met it: nothing was made
	}
	in, err := w.other.Get(context.Background(), id)
	if err != nil {
		return // accepted and failed since: nothing runs
	}
	w.stats.OtherDeployment++
	w.foreign = append(w.foreign, id)
	if in.AddressID != "" {
		w.foreign = append(w.foreign, in.AddressID)
	}
}

// userAction creates an absent name (with a new uid, as the API does), or
// asks for a present one's rotation or deletion.
func (w *World) userAction() {
	w.stats.UserActions++
	name := names[w.rng.IntN(len(names))]
	key := proxy.Key{Namespace: namespace, Name: name}
	ctx := context.Background()
	if _, err := w.store.Get(ctx, key); errors.Is(err, proxy.ErrNotFound) {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", w.rng.Uint32(), w.rng.Uint64()&0xffffffffffff)
		w.uids[name] = append(w.uids[name], uid)
		now := w.clock.Now()
		spec := proxy.Spec{Provider: mock.Type, Port: proxy.DefaultPort, AllowedSourceRanges: []string{"203.0.113.0/24"},
			IPPolicy: proxy.IPEphemeral, Placement: proxy.Placement{Region: "us-central1"}}
		if w.rng.IntN(3) == 0 {
			w.stats.StaticProxies++
			spec.IPPolicy = proxy.IPStatic
		}
		if w.rng.IntN(3) == 0 {
			// Pinned: no other zone is tried.
			spec.Placement.Zone = zones[w.rng.IntN(len(zones))]
		}
		if w.budget.IntN(3) == 0 {
			spec.MaxAge = simMaxAge.String()
		}
		w.offer(&spec)
		err := w.create(ctx, &proxy.Proxy{
			Namespace: namespace, Name: name, UID: uid, Generation: 1,
			Spec:       spec,
			Status:     proxy.Status{Phase: proxy.PhasePending},
			CreateTime: now, Reconciler: proxy.Bookkeeping{ProgressTime: now},
		}, w.racer(ctx, name))
		switch {
		case err == nil:
			w.caused(uid, "create")
		case errors.Is(err, proxy.ErrCreatesPerHour):
			w.stats.Refused429++
		}
		return
	}
	switch w.rng.IntN(6) {
	case 0, 5:
		switch p, err := w.store.RequestRotation(ctx, key, w.clock.Now(), limits); {
		case err == nil:
			w.stats.Rotations++
			w.caused(p.UID, "rotate request")
		case errors.Is(err, proxy.ErrCreatesPerHour):
			w.stats.Refused429++
		}
	case 1:
		// A PATCH of the ranges and ports: a new generation when it
		// changed them.
		before, _ := w.store.Get(ctx, key)
		ranges := [][]string{{"203.0.113.0/24"}, {"198.51.100.0/24"}, {"203.0.113.0/24", "192.0.2.0/24"}}[w.rng.IntN(3)]
		ports := [][]int32{nil, {443}, {443, 8443}}[w.rng.IntN(3)]
		after, err := w.store.UpdateSpec(ctx, key, w.clock.Now(), limits, func(s proxy.Spec) (proxy.Spec, error) {
			s.AllowedSourceRanges, s.ConnectPorts = ranges, ports
			return s, nil
		})
		if err == nil && before != nil && after.Generation > before.Generation {
			w.stats.Patches++
		}
	case 2:
		if p, err := w.store.Get(ctx, key); err == nil {
			w.rotatingCreds = p.UID
			if _, err := w.store.RotateCredentials(ctx, key, w.clock.Now(), limits); err == nil {
				w.stats.CredentialRotations++
			}
			w.rotatingCreds = ""
		}
	default:
		w.store.RequestDeletion(ctx, key, w.clock.Now())
	}
}

// tableEdges are the changes of phase reconcile.Transitions lists, in its
// order; inTable, the same as a set.
var (
	tableEdges = reconcile.Edges()
	inTable    = func() map[reconcile.Edge]bool {
		m := map[reconcile.Edge]bool{}
		for _, e := range tableEdges {
			m[e] = true
		}
		return m
	}()
)

// phaseChanged counts each change of a document's phase (created, changed,
// deleted), and holds it to the reconciler's table: a change the table
// does not list is a violation, so the table (and the state diagram drawn
// from it) cannot drift from the code.
func (w *World) phaseChanged(c storefake.Change) {
	e := reconcile.Edge{From: reconcile.Start, To: reconcile.Gone}
	if c.Old != nil {
		e.From = c.Old.Status.Phase
	}
	if c.New != nil {
		e.To = c.New.Status.Phase
	}
	if e.From == e.To {
		return
	}
	w.edges[e]++
	if !inTable[e] {
		w.violation("document %s went from %s to %s, a change of phase reconcile.Transitions does not list", c.Key, e.From, e.To)
	}
}
