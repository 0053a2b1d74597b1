package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The world's warm pools: "region" serves the proxies placed in the region
// (no zone pinned, Ephemeral), "zone-a" the ones pinned to its zone;
// Static proxies and the other zones' are served by none and boot cold.
var poolPlacements = map[string]proxy.Placement{
	"region": {Region: "us-central1"},
	"zone-a": {Region: "us-central1", Zone: zones[0]},
}

// poolNames are poolPlacements' names, in a fixed order.
var poolNames = []string{"region", "zone-a"}

// seeded reads bytes from a seeded generator: uuid's source in the
// simulation, so members' uids replay with the seed.
type seeded struct{ r *rand.Rand }

func (s seeded) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(s.r.Uint32())
	}
	return len(b), nil
}

// bootstrapConfig is the sim's BootstrapFunc: the engine configuration a
// VM serves, generation and credentials as the reconciler renders them
// (the password unhashed: the mock runs no engine, and the check compares
// it with the document's).
func bootstrapConfig(spec proxy.Spec, creds proxy.Credentials, generation int64) (string, *vmconfig.Config, error) {
	c := &vmconfig.Config{Generation: generation, Listen: ":3128", AllowedSourceRanges: spec.AllowedSourceRanges}
	for _, p := range spec.ConnectPorts {
		c.ConnectPorts = append(c.ConnectPorts, int(p))
	}
	if !creds.IsZero() {
		c.Users = []vmconfig.User{{Name: creds.Username, PasswordHash: creds.Password}}
	}
	return "#!/bin/sh\n", c, nil
}

// addPools creates the world's pools at the start, with sizes of 1 to 3.
func (w *World) addPools() {
	for _, name := range poolNames {
		w.putPool(name, 1+w.rng.IntN(3))
	}
}

// putPool creates a pool or sets its size, as an admin's PUT does, and
// delivers its document's event.
func (w *World) putPool(name string, size int) {
	spec := proxy.PoolSpec{Provider: mock.Type, Placement: poolPlacements[name], Size: size}
	p, created, err := w.store.PutPool(context.Background(), name, spec, w.clock.Now())
	if err != nil {
		// A pool being deleted takes no new size; that is the API's 409.
		return
	}
	if created {
		w.stats.PoolCreations++
		delete(w.deletedPools, name)
	}
	w.poolSpecs[name] = p.Spec
	w.poolChanged(name)
}

// poolChanged is the Firestore event of a pool document's write: lost,
// duplicated or late while faults are on, as a proxy document's.
func (w *World) poolChanged(name string) {
	copies := 1
	if w.faults {
		switch r := w.rng.Float64(); {
		case r < 0.08:
			w.stats.PoolEventsDropped++
			return
		case r < 0.18:
			w.stats.PoolEventsDuplicated++
			copies = 2
		}
	}
	for range copies {
		w.enqueue(delivery{pool: name, trigger: reconcile.Trigger{Reason: proxy.ReasonWritten}}, w.delay())
	}
}

// poolAction is an admin's change of a pool: a new size (smaller or
// larger, 0 included), its deletion, or, for a deleted one, its
// re-creation.
func (w *World) poolAction() {
	w.stats.UserActions++
	name := poolNames[w.rng.IntN(len(poolNames))]
	ctx := context.Background()
	pl, err := w.store.GetPool(ctx, name)
	switch {
	case errors.Is(err, proxy.ErrNotFound):
		w.putPool(name, 1+w.rng.IntN(3))
	case err != nil || pl.DeleteRequestTime != nil:
	case w.rng.IntN(5) == 0:
		if _, err := w.store.RequestPoolDeletion(ctx, name, w.clock.Now()); err == nil {
			w.stats.PoolDeletions++
			w.deletedPools[name] = true
			w.poolChanged(name)
		}
	default:
		size := w.rng.IntN(4)
		if size == pl.Spec.Size {
			return
		}
		w.stats.PoolResizes++
		if size < pl.Spec.Size {
			w.stats.Shrinks++
		}
		w.putPool(name, size)
	}
}

// owners checks, after every write, that no VM is named by two documents
// that are not tombstones (a claimed member's): one owner per VM. A
// document names its VM (status.providerID) and the old VM of a
// make-before-break rotation (Retiring).
func (w *World) owners(ctx context.Context) {
	owner := map[string]proxy.Key{}
	for _, key := range w.store.Keys() {
		p, err := w.store.Get(ctx, key)
		if err != nil || p.ClaimedBy != nil {
			continue
		}
		for _, id := range []string{p.Status.ProviderID, p.Reconciler.Retiring} {
			if id == "" {
				continue
			}
			if other, ok := owner[id]; ok && other != key {
				w.violation("VM %s is named by two live documents that are not tombstones: %s and %s", id, other, key)
			}
			owner[id] = key
		}
	}
}

// deleting flags a reconcile run's delete of a VM that a live document
// other than the run's own owns: labelled with its uid, or named by it
// (providerID or Retiring). A tombstone owns nothing; GC is checked by
// collecting.
func (w *World) deleting(ctx context.Context, id, uid string) {
	in, _ := ctx.Value(invKey{}).(*inv)
	if in == nil || in.gc {
		return
	}
	for _, key := range w.store.Keys() {
		if key == in.key {
			continue
		}
		p, err := w.store.Get(ctx, key)
		if err != nil || p.ClaimedBy != nil {
			continue
		}
		if p.UID == uid || p.Status.ProviderID == id || p.Reconciler.Retiring == id {
			w.violation("invocation %d (of %s) deleted VM %s, which live document %s (uid %s) owns", in.id, in.key, id, key, p.UID)
		}
	}
}

// relabelling flags a Reconfigure of a VM its caller's document does not
// own as committed: a warm VM changes hands by the claim's transaction,
// and only then is it relabelled. A document owns its VM and the VM its
// make-before-break rotation is retiring, which is handed every change
// too.
func (w *World) relabelling(ctx context.Context, id string, req provider.ReconfigureRequest) {
	in, _ := ctx.Value(invKey{}).(*inv)
	if in == nil {
		return
	}
	p, err := w.store.Get(ctx, in.key)
	if err != nil || p.DeleteRequestTime != nil {
		return // going: its deletion ignores the lease, and may have won
	}
	if p.UID != req.UID || (p.Status.ProviderID != id && p.Reconciler.Retiring != id) {
		w.violation("invocation %d reconfigured VM %s for %s (uid %s), whose document (uid %s) names %q: a VM is relabelled only by its owner", in.id, id, in.key, req.UID, p.UID, p.Status.ProviderID)
	}
}

// retiringOf reports whether VM id is the one the calling run's document
// is retiring.
func (w *World) retiringOf(ctx context.Context, id string) bool {
	in, _ := ctx.Value(invKey{}).(*inv)
	if in == nil {
		return false
	}
	p, err := w.store.Get(ctx, in.key)
	return err == nil && p.Reconciler.Retiring == id
}

// revoked checks, at every write of a document, that the VM its
// make-before-break rotation is retiring, while it is still there, was
// handed at least the generation the document's current VM was: a
// :rotateCredentials revokes the old password on both VMs, not on the new
// one alone while the old one serves on. A document that has handed its
// current VM nothing yet (SentGeneration 0: a claim not yet reconfigured)
// is past no change.
func (w *World) revoked(key proxy.Key, p *proxy.Proxy) {
	r, sent := p.Reconciler.Retiring, p.Reconciler.SentGeneration
	if r == "" || sent == 0 || p.DeleteRequestTime != nil {
		return
	}
	for _, in := range w.mock.Instances() {
		if in.ID == r && w.handed[r] < sent {
			w.violation("%s (uid %s) handed generation %d to %s, but its retiring VM %s, which still serves, was handed only generation %d: what that change revoked (a password) works there still",
				key, p.UID, sent, p.Status.ProviderID, r, w.handed[r])
		}
	}
}

// checkPools states the pools' invariants at the end: a pool at rest has
// exactly its size of warm members, a deleted pool leaves no unclaimed
// member and no VM of its members, and every proxy that claimed a VM and
// is Ready is served by a VM labelled with its uid.
func (w *World) checkPools(ctx context.Context, byUID map[string][]provider.Instance) {
	members := map[string][]*proxy.Proxy{}
	for _, key := range w.store.Keys() {
		if key.Pool == "" {
			continue
		}
		if m, err := w.store.Get(ctx, key); err == nil {
			members[key.Pool] = append(members[key.Pool], m)
		}
	}
	names := make([]string, 0, len(w.poolSpecs))
	for name := range w.poolSpecs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		pl, err := w.store.GetPool(ctx, name)
		if errors.Is(err, proxy.ErrNotFound) || (err == nil && pl.DeleteRequestTime != nil) {
			for _, m := range members[name] {
				if m.ClaimedBy == nil {
					w.violation("pool %s was deleted but its unclaimed member %s (phase %s) remains", name, m.Name, m.Status.Phase)
				}
			}
			for uid, pool := range w.memberOf {
				if pool != name {
					continue
				}
				for _, in := range byUID[uid] {
					w.violation("pool %s was deleted but VM %s of its member uid %s remains", name, in.ID, uid)
				}
			}
			continue
		}
		if err != nil {
			continue
		}
		warm := 0
		for _, m := range members[name] {
			if rules.Warm(m) {
				warm++
			}
		}
		if warm != pl.Spec.Size {
			w.violation("pool %s at rest has %d warm members, want its size %d", name, warm, pl.Spec.Size)
		}
	}
	for _, key := range w.store.Keys() {
		p, err := w.store.Get(ctx, key)
		if err != nil || !w.claimedUIDs[p.UID] || p.Status.Phase != proxy.PhaseReady {
			continue
		}
		if ins := byUID[p.UID]; len(ins) != 1 || ins[0].ID != p.Status.ProviderID {
			w.violation("%s claimed a warm VM and is Ready on %s, but %d VMs carry its uid", key, p.Status.ProviderID, len(ins))
		}
	}
}

// checkServed states the reconfiguration invariant of a Ready proxy (or
// member) with the default bootstrap: its VM reports the document's
// generation, status.observedGeneration says so, and the configuration the
// VM serves carries the document's credentials as they are now.
func (w *World) checkServed(key proxy.Key, p *proxy.Proxy, in provider.Instance) {
	if p.Status.ObservedGeneration != p.Generation {
		w.violation("%s: Ready at observedGeneration %d, but the document is at generation %d", key, p.Status.ObservedGeneration, p.Generation)
	}
	if in.Generation != p.Generation {
		w.violation("%s: Ready at generation %d, but its VM %s serves generation %d", key, p.Generation, in.ID, in.Generation)
	}
	req, ok := w.mock.CreateRequest(in.ID)
	if c := w.cloudOf(in.ID); c != nil {
		req, ok = c.Request(in.ID)
	}
	if !ok || req.Engine == nil {
		w.violation("%s: its VM %s was given no engine configuration", key, in.ID)
		return
	}
	cr := p.Reconciler.Credentials
	var users []vmconfig.User
	if !cr.IsZero() {
		users = []vmconfig.User{{Name: cr.Username, PasswordHash: cr.Password}}
	}
	if len(req.Engine.Users) != len(users) || (len(users) == 1 && req.Engine.Users[0] != users[0]) {
		w.violation("%s: its VM %s serves other credentials than the document's latest", key, in.ID)
	}
	if latest, ok := w.credentials[p.UID]; ok && latest != cr {
		w.violation("%s: the document's credentials are not the last ones the user was given", key)
	}
}
