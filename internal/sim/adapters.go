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
)

// The adapters make every call an invocation makes a step of the
// schedule, and plant the bug a schedule runs with.

type simStore struct{ w *World }

func (s *simStore) Get(ctx context.Context, key proxy.Key) (*proxy.Proxy, error) {
	if err := s.w.yield(ctx); err != nil {
		return nil, err
	}
	p, err := s.w.store.Get(ctx, key)
	if err == nil && s.w.bug == NoLease {
		p.Reconciler.LeaseHolder, p.Reconciler.LeaseExpireTime = "", time.Time{}
	}
	return p, err
}

func (s *simStore) UpdateStatus(ctx context.Context, p *proxy.Proxy) (time.Time, error) {
	if err := s.w.yield(ctx); err != nil {
		return time.Time{}, err
	}
	if s.w.bug == NoPrecondition {
		if cur, err := s.w.store.Get(ctx, p.Key()); err == nil {
			p.UpdateTime = cur.UpdateTime
		}
	}
	t, err := s.w.store.UpdateStatus(ctx, p)
	if in, _ := ctx.Value(invKey{}).(*inv); in != nil && err == nil && p.Reconciler.LeaseHolder == "" && s.w.actor[p.UID] == in {
		// The run let the lease go: what it does after acts on no VM,
		// and the next run may act at once.
		delete(s.w.actor, p.UID)
	}
	return t, s.w.after(ctx, err)
}

// UpdateStatusCounted is the reconciler's write that starts a rotation by
// maxAge and counts its VM in the namespace, one transaction. With
// UncountedAgeRotation the count is left out: the status is written as
// UpdateStatus writes it.
func (s *simStore) UpdateStatusCounted(ctx context.Context, p *proxy.Proxy, at time.Time, perHour int) (time.Time, error) {
	if err := s.w.yield(ctx); err != nil {
		return time.Time{}, err
	}
	if s.w.bug == NoPrecondition {
		if cur, err := s.w.store.Get(ctx, p.Key()); err == nil {
			p.UpdateTime = cur.UpdateTime
		}
	}
	var (
		t   time.Time
		err error
	)
	if s.w.bug == UncountedAgeRotation {
		t, err = s.w.store.UpdateStatus(ctx, p)
	} else {
		t, err = s.w.store.UpdateStatusCounted(ctx, p, at, perHour)
	}
	return t, s.w.after(ctx, err)
}

func (s *simStore) Delete(ctx context.Context, key proxy.Key, ut time.Time, spent ...proxy.Spent) error {
	if err := s.w.yield(ctx); err != nil {
		return err
	}
	if s.w.bug == NoPrecondition {
		if cur, err := s.w.store.Get(ctx, key); err == nil {
			ut = cur.UpdateTime
		}
	}
	return s.w.after(ctx, s.w.store.Delete(ctx, key, ut, spent...))
}

// LiveUIDs serves a GC run a stale uid set: the one read at the previous
// tick, a GC interval old. Reads and listings are never atomic in
// production (replicas, caches, a slow listing); a document created since
// has a VM the set does not claim, and the grace period is what keeps it.
func (s *simStore) LiveUIDs(ctx context.Context) (map[string]proxy.Claim, error) {
	if err := s.w.yield(ctx); err != nil {
		return nil, err
	}
	if in, _ := ctx.Value(invKey{}).(*inv); in != nil && in.uids != nil {
		if !in.noDocuments {
			s.w.changedHands(in.uids)
		}
		return in.uids, nil
	}
	return s.w.store.LiveUIDs(ctx)
}

// liveUIDs is the store's uid set as a GC run reads it, with the planted
// bug RotationByEventOnly's rotate requests hidden.
func (w *World) liveUIDs() map[string]proxy.Claim {
	fresh, _ := w.store.LiveUIDs(context.Background())
	if w.bug == RotationByEventOnly {
		for uid, c := range fresh {
			c.RotateRequestTime = nil
			fresh[uid] = c
		}
	}
	return fresh
}

// changedHands adds to a GC run's stale uid set the uid of every VM that
// changed hands (a warm VM claimed and relabelled: its name is not its
// uid's) whose document is live now, as the run reads its uids. Such a VM
// carries the uid of a document that existed before the relabel, and so
// before any listing that shows it: the collector lists first and reads
// the uids after, so its set has that uid. The grace period cannot stand
// in for that here, as it does for a VM made since the stale set: the VM
// is older than its new owner. This is done when the set is served, after
// the run's listings, not when the run starts: a relabel between the two
// (each provider listed is a step, and seed 675 of 10,000 played one
// there once a fifth provider was listed) is in a listing, and its
// document in any uid set read after it; added at the start, the run
// deleted the VM of live document namespaces/sim/proxies/a, which the
// collector in production never does.
func (w *World) changedHands(uids map[string]proxy.Claim) {
	fresh := w.liveUIDs()
	for _, vm := range w.own() {
		if c, ok := fresh[vm.UID]; ok && vm.ID != "mock://"+provider.NameFromUID(vm.UID) {
			uids[vm.UID] = c
		}
	}
}

func (s *simStore) Stalled(ctx context.Context, before time.Time, limit int) ([]proxy.Key, error) {
	if err := s.w.yield(ctx); err != nil {
		return nil, err
	}
	return s.w.store.Stalled(ctx, before, limit)
}

// The pool reconcile's and the claim's part of the store: each call a
// step, as the proxy documents' calls are.

func (s *simStore) GetPool(ctx context.Context, name string) (*proxy.Pool, error) {
	if err := s.w.yield(ctx); err != nil {
		return nil, err
	}
	return s.w.store.GetPool(ctx, name)
}

func (s *simStore) Members(ctx context.Context, pool string) ([]*proxy.Proxy, error) {
	if err := s.w.yield(ctx); err != nil {
		return nil, err
	}
	return s.w.store.Members(ctx, pool)
}

func (s *simStore) EnsureMembers(ctx context.Context, pool string, now time.Time) ([]*proxy.Proxy, error) {
	if err := s.w.yield(ctx); err != nil {
		return nil, err
	}
	created, err := s.w.store.EnsureMembers(ctx, pool, now)
	for _, m := range created {
		s.w.stats.Refills++
		s.w.memberOf[m.UID] = pool
	}
	return created, s.w.after(ctx, err)
}

func (s *simStore) RequestDeletion(ctx context.Context, key proxy.Key, now time.Time) (*proxy.Proxy, error) {
	if err := s.w.yield(ctx); err != nil {
		return nil, err
	}
	p, err := s.w.store.RequestDeletion(ctx, key, now)
	if err == nil {
		s.w.stats.MemberDeletions++
	}
	return p, s.w.after(ctx, err)
}

func (s *simStore) UpdatePoolStatus(ctx context.Context, p *proxy.Pool) (time.Time, error) {
	if err := s.w.yield(ctx); err != nil {
		return time.Time{}, err
	}
	t, err := s.w.store.UpdatePoolStatus(ctx, p)
	if err == nil {
		s.w.poolChanged(p.Name)
	}
	return t, s.w.after(ctx, err)
}

func (s *simStore) DeletePool(ctx context.Context, name string, ut time.Time) error {
	if err := s.w.yield(ctx); err != nil {
		return err
	}
	err := s.w.store.DeletePool(ctx, name, ut)
	if err == nil {
		s.w.poolChanged(name)
	}
	return s.w.after(ctx, err)
}

func (s *simStore) PoolNames(ctx context.Context) ([]string, error) {
	if err := s.w.yield(ctx); err != nil {
		return nil, err
	}
	return s.w.store.PoolNames(ctx)
}

func (s *simStore) PoolServing(ctx context.Context, spec proxy.Spec) (*proxy.Pool, error) {
	if err := s.w.yield(ctx); err != nil {
		return nil, err
	}
	return s.w.store.PoolServing(ctx, spec)
}

// ClaimWarm is the claim's transaction. With RelabelBeforeClaim the VM
// the transaction will take is relabelled for p first, a step (and a
// crash point) before the commit; with UncountedAgeRotation the claim
// counts no VM.
func (s *simStore) ClaimWarm(ctx context.Context, p *proxy.Proxy, pool *proxy.Pool, now time.Time, perHour int) (*proxy.Proxy, *proxy.Proxy, error) {
	if err := s.w.yield(ctx); err != nil {
		return nil, nil, err
	}
	if s.w.bug == UncountedAgeRotation {
		perHour = 0
	}
	if s.w.bug == RelabelBeforeClaim {
		// The member the claim will draw first.
		members, _ := s.w.store.Members(ctx, pool.Name)
		if m := rules.PickWarm(members, rules.DrawAfter(p.UID, 0)); m != nil {
			req := provider.ReconfigureRequest{UID: p.UID, Namespace: p.Namespace, ProxyName: p.Name}
			if err := (&simProvider{w: s.w}).Reconfigure(ctx, m.Status.ProviderID, req); err != nil {
				return nil, nil, err
			}
		}
	}
	member, claimed, err := s.w.store.ClaimWarm(ctx, p, pool, now, perHour)
	if err == nil {
		s.w.claimed(ctx, member, claimed)
		s.w.stats.Claims++
		if claimed.Reconciler.Retiring != "" {
			s.w.stats.WarmRotations++
		}
		s.w.claimedUIDs[p.UID] = true
		if in, _ := ctx.Value(invKey{}).(*inv); in != nil {
			in.claimed = true
		}
	}
	return member, claimed, s.w.after(ctx, err)
}

// after is the crash point after a call took effect: the caller never
// learns that it did.
func (w *World) after(ctx context.Context, err error) error {
	if yerr := w.yield(ctx); yerr != nil {
		return yerr
	}
	return err
}

// simProvider is a provider of the world, each call a step: the mock,
// or, with cloud set, that cloud's provider (behind simFixed, which is
// no Reconfigurer).
type simProvider struct {
	w     *World
	cloud Cloud
}

func (p *simProvider) backend() provider.Provider {
	if p.cloud != nil {
		return p.cloud.Provider()
	}
	return p.w.mock
}

// simFixed is the adapter of a provider whose VMs take no change (every
// Cloud's): simProvider's calls without Reconfigure, as the provider has
// none.
type simFixed struct{ p *simProvider }

func (h simFixed) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	return h.p.Create(ctx, req)
}
func (h simFixed) Get(ctx context.Context, id string) (*provider.Instance, error) {
	return h.p.Get(ctx, id)
}
func (h simFixed) Delete(ctx context.Context, id string) error { return h.p.Delete(ctx, id) }
func (h simFixed) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	return h.p.ListByTag(ctx)
}

func (p *simProvider) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	if err := p.w.yield(ctx); err != nil {
		return "", err
	}
	p.w.acting(ctx, req.UID)
	p.w.creating(ctx, req.UID)
	switch p.w.bug {
	case NoCreatePending:
		p.w.seq++
		req.Name = fmt.Sprintf("%s-%d", req.Name[:min(len(req.Name), 50)], p.w.seq)
		req.RequestID = ""
	case OneRequestID:
		req.RequestID = "request-of-" + req.UID
	}
	born := p.w.birthOf(req)
	id, err := p.backend().Create(ctx, req)
	born()
	p.w.tracef("  create %s for uid %s: %q, %v", req.Name, req.UID, id, err)
	if p.cloud != nil {
		err = p.cloud.Created(req, id, err)
	}
	if in, _ := ctx.Value(invKey{}).(*inv); in != nil {
		delete(in.deleted, id) // a new VM under that name boots
	}
	if err == nil && req.Engine != nil {
		p.w.handed[id] = req.Engine.Generation
	}
	p.w.observed(ctx, id, err == nil)
	if aerr := p.w.after(ctx, nil); aerr != nil {
		return "", aerr
	}
	return id, err
}

func (p *simProvider) Get(ctx context.Context, id string) (*provider.Instance, error) {
	if err := p.w.yield(ctx); err != nil {
		return nil, err
	}
	in, err := p.backend().Get(ctx, id)
	if err == nil {
		p.w.tracef("  get %s: %s, uid %s", id, in.State, in.UID)
	} else {
		p.w.tracef("  get %s: %v", id, err)
	}
	p.w.observed(ctx, id, err == nil && in.State == provider.StateProvisioning)
	return in, err
}

func (p *simProvider) Delete(ctx context.Context, id string) error {
	if err := p.w.yield(ctx); err != nil {
		return err
	}
	p.w.observed(ctx, "", false)
	if in, _ := ctx.Value(invKey{}).(*inv); in != nil {
		if in.deleted == nil {
			in.deleted = map[string]bool{}
		}
		in.deleted[id] = true
	}
	for _, in := range p.w.mock.Instances() {
		if in.ID == id {
			p.w.acting(ctx, in.UID)
			p.w.collecting(ctx, in.UID)
			p.w.deleting(ctx, id, in.UID)
		}
	}
	if p.cloud != nil {
		if uid, ok := p.cloud.UID(id); ok {
			p.w.acting(ctx, uid)
			p.w.collecting(ctx, uid)
			p.w.deleting(ctx, id, uid)
		}
	}
	if slices.Contains(p.w.foreign, id) {
		p.w.violation("%s deleted %s, which another deployment made or which has no deployment label", p.w.who(ctx), id)
	}
	return p.w.after(ctx, p.backend().Delete(ctx, id))
}

// Reconfigure is the mock's, a step; while faults are on a VM may take it
// and never serve it (its agent refused the configuration).
func (p *simProvider) Reconfigure(ctx context.Context, id string, req provider.ReconfigureRequest) error {
	if err := p.w.yield(ctx); err != nil {
		return err
	}
	// Not acting: Reconfigure is idempotent, and the reconciler hands a
	// change over without the lease (package reconcile's reconfigure), as
	// a deletion. What two runs may not do is hand a VM an older
	// generation than it was given (staleGeneration).
	p.w.staleGeneration(ctx, id, req)
	p.w.observed(ctx, "", false)
	if p.w.bug == RetiringKeepsOldConfiguration && p.w.retiringOf(ctx, id) {
		// Never reaches the VM, and the reconciler never learns.
		return p.w.after(ctx, nil)
	}
	refused := p.w.refuse && req.Engine != nil && p.w.running(id)
	if refused {
		// Its agent will refuse what it is handed now.
		p.w.refuse = false
		p.w.stats.ReconfigureRefused++
		p.w.mock.RefuseReconfigures(1, "the self-test's CONNECT to the probe target got 403")
	}
	handed := req.Engine
	stuck := p.w.stuck > 0 && req.Engine != nil
	if stuck {
		// The VM takes the new owner, never the configuration: it keeps
		// reporting the generation it served.
		p.w.stuck--
		req.Engine = nil
	}
	err := p.w.mock.Reconfigure(ctx, id, req)
	if refused {
		// Only a change that reached the running VM is refused (whatever
		// the call answered: its answer may be lost), and a refusal this
		// call left armed is withdrawn, lest it fall on another VM whose
		// harm nobody records.
		refused = p.w.mock.RefusalsArmed() == 0
		p.w.mock.RefuseReconfigures(0, "")
	}
	if refused || stuck && err == nil {
		// The world harmed the VM: the replacement it brings answers to
		// no cause of the namespace's.
		p.w.harmed(id)
	}
	if (err == nil || errors.Is(err, errResponseLost)) && handed != nil {
		p.w.handed[id] = handed.Generation
		if p.w.retiringOf(ctx, id) {
			p.w.stats.RetiringReconfigured++
		}
	}
	if !errors.Is(err, provider.ErrNotFound) {
		// A run that read the document before a replacement may hand over
		// to the VM being deleted, which takes nothing (NotFound).
		p.w.relabelling(ctx, id, req)
	}
	if in, _ := ctx.Value(invKey{}).(*inv); in != nil && err == nil {
		in.claimed = false // what a claim owes its VM is handed over
	}
	return p.w.after(ctx, err)
}

// running reports whether VM id is running: only a running VM's agent
// refuses a configuration (one still booting takes it into its boot).
func (w *World) running(id string) bool {
	for _, in := range w.mock.Instances() {
		if in.ID == id {
			return in.State == provider.StateRunning
		}
	}
	return false
}

func (p *simProvider) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	if err := p.w.yield(ctx); err != nil {
		return nil, err
	}
	return p.backend().ListByTag(ctx)
}

// simProviders hands out the world's providers: each cloud's by its
// type, the mock's for any other.
type simProviders struct {
	p      *simProvider
	clouds map[string]simFixed
}

func (s simProviders) Get(_ context.Context, typ string) (provider.Provider, error) {
	if c, ok := s.clouds[typ]; ok {
		return c, nil
	}
	return s.p, nil
}

// Account is Get's provider for the default account; the simulation's
// worlds have no other account.
func (s simProviders) Account(ctx context.Context, typ, id string) (provider.Provider, error) {
	if id != "" {
		return nil, fmt.Errorf("simulation: account %q of %q: %w", id, typ, provider.ErrNoAccount)
	}
	return s.Get(ctx, typ)
}

// Types are the clouds' types and the mock's, sorted, as a registry
// lists them.
func (s simProviders) Types() []string {
	types := []string{mock.Type}
	for typ := range s.clouds {
		types = append(types, typ)
	}
	slices.Sort(types)
	return types
}

// simQueue is proxy-reconcile: requests become deliveries.
type simQueue struct{ w *World }

func (q *simQueue) Publish(ctx context.Context, m proxy.ReconcileMessage) error {
	if err := q.w.yield(ctx); err != nil {
		return err
	}
	if pool, ok := m.PoolName(); ok {
		q.w.enqueue(delivery{pool: pool, trigger: reconcile.TriggerOf(m)}, q.w.delay())
		return q.w.after(ctx, nil)
	}
	key, err := m.Key()
	if err != nil {
		return err
	}
	q.w.enqueue(delivery{key: key, trigger: reconcile.TriggerOf(m)}, q.w.delay())
	return q.w.after(ctx, nil)
}

// simClock is the fake clock; a wait is a step, and moves time on.
type simClock struct{ w *World }

func (c *simClock) Now() time.Time { return c.w.clock.Now() }

func (c *simClock) AfterFunc(d time.Duration, f func()) func() bool { return c.w.clock.AfterFunc(d, f) }

func (c *simClock) Sleep(ctx context.Context, d time.Duration) error {
	// A crashed invocation does nothing more (its every step fails), so
	// its wait, say for a retry of the call the crash failed, acts on
	// nothing.
	if in, _ := ctx.Value(invKey{}).(*inv); in != nil && in.booting && !in.crashed {
		c.w.violation("invocation %d waits on the clock right after it saw a VM booting: runs never wait for a boot", in.id)
	}
	if err := c.w.yield(ctx); err != nil {
		return err
	}
	c.w.clock.Advance(d)
	return nil
}

// observed records whether an invocation's last provider call saw a VM
// booting, for the rule that no run waits for a boot.
func (w *World) observed(ctx context.Context, id string, booting bool) {
	if in, _ := ctx.Value(invKey{}).(*inv); in != nil {
		in.booting = booting && !in.deleted[id]
	}
}

// acting records that a reconcile invocation changes the VM of a uid, and
// flags a second invocation doing so while the first is still running: the
// lease's rule is that one run at a time acts on a document. Deletion is
// exempt by design (it ignores the lease: deleting is idempotent), and so
// is GC.
func (w *World) acting(ctx context.Context, uid string) {
	in, _ := ctx.Value(invKey{}).(*inv)
	if in == nil || in.gc {
		return
	}
	uid = w.holderOf(ctx, uid)
	live := false
	for _, key := range w.store.Keys() {
		p, err := w.store.Get(ctx, key)
		if err != nil || p.UID != uid {
			continue
		}
		if p.DeleteRequestTime != nil {
			return
		}
		live = true
	}
	if !live {
		// The document is gone: its deletion, which ignores the lease,
		// deleted it, and a run of that deletion that read it before
		// deletes what is left (a provider whose Get says a VM being
		// deleted is gone, as hetzner's does, lets the first run delete the
		// document at once). A VM made for no document is the
		// collector's, which the leak invariant holds to its grace.
		return
	}
	if owner := w.actor[uid]; owner != nil && owner != in && !owner.crashed && w.isActive(owner) {
		w.violation("uid %s: invocations %d (%s) and %d (%s) act on its VM at once", uid, owner.id, owner.key, in.id, in.key)
	}
	w.actor[uid] = in
}

// holderOf is the uid of the document whose VM one labelled uid is: the
// document of that uid, or, when it is a tombstone (a pool member whose VM
// a proxy claimed, and the proxy has not relabelled yet), the claiming
// proxy's. From the claim on the VM is that proxy's (proxy.ClaimedBy): its
// runs are the ones that act on it, its lease the one they hold, and its
// deletion the one that lets several runs delete it at once. Keyed by the
// tombstone's uid, two runs deleting a proxy whose claim was cut short
// before the relabel (seed 3842 of 10,000, once a fifth provider was
// listed) were taken for two runs acting at once: the tombstone has no
// deletion requested, and the lease they released is their proxy's.
func (w *World) holderOf(ctx context.Context, uid string) string {
	for _, key := range w.store.Keys() {
		if p, err := w.store.Get(ctx, key); err == nil && p.UID == uid && p.ClaimedBy != nil {
			return p.ClaimedBy.UID
		}
	}
	return uid
}

// who names the invocation of ctx, for a violation.
func (w *World) who(ctx context.Context) string {
	if in, _ := ctx.Value(invKey{}).(*inv); in != nil {
		if in.gc {
			return fmt.Sprintf("GC run %d", in.id)
		}
		return fmt.Sprintf("invocation %d", in.id)
	}
	return "the operator's run"
}

// collecting flags a GC delete of a VM whose document is live: GC may only
// ever delete what no document claims.
func (w *World) collecting(ctx context.Context, uid string) {
	in, _ := ctx.Value(invKey{}).(*inv)
	if in == nil || !in.gc {
		return
	}
	for _, key := range w.store.Keys() {
		if p, err := w.store.Get(ctx, key); err == nil && p.UID == uid && p.DeleteRequestTime == nil {
			w.violation("GC deleted the VM of live document %s (uid %s)", key, uid)
		}
	}
}

// creating flags a new VM made for a change of configuration: the mock
// reconfigures a running VM, so a new generation costs a new VM only once
// the VM did not serve it in time (ReconfigureTimeout). The clouds'
// providers cannot, so their proxies get a new VM for each.
func (w *World) creating(ctx context.Context, uid string) {
	for _, key := range w.store.Keys() {
		// A cloud's VM cannot take a change: a new one is the way.
		if p, err := w.store.Get(ctx, key); err == nil && p.UID == uid && readyReason(p) == "ConfigurationChanged" && !w.isCloudType(p.Spec.Provider) {
			w.violation("%s: generation %d costs a new VM, though its VM could take it (%s)", key, p.Generation, p.Status.Message)
		}
	}
}

// staleGeneration flags a Reconfigure that hands a VM, for the same
// proxy, an older generation than one it was already handed: two runs
// racing with what they read, the older one last.
func (w *World) staleGeneration(ctx context.Context, id string, req provider.ReconfigureRequest) {
	if req.Engine == nil {
		return
	}
	cur, ok := w.mock.CreateRequest(id)
	if !ok || cur.Engine == nil || cur.UID != req.UID {
		return
	}
	if cur.Engine.Generation > req.Engine.Generation {
		w.violation("%s handed VM %s generation %d of uid %s after it was handed generation %d", w.who(ctx), id, req.Engine.Generation, req.UID, cur.Engine.Generation)
	}
}
