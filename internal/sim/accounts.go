package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/storefake"
)

// The accounts schedule: a fleet of proxies across several accounts of
// one provider type (the mock's, so that the world names no cloud), each
// account's provider behind the real pacing decorator, its budget in an
// in-memory pacing store on the schedule's clock, and beneath the pacer a
// meter that plays the account's cloud: it counts the calls of each
// window, refuses those past the account's limit as the cloud would
// (KindRateLimited, retry when the window resets), now and then refuses
// one of its own accord (the cloud's own rate-limit faults), and holds
// the account's regional quota of instances (provider.QuotaReader; a
// create past it is KindQuota). The real reconciler places each new proxy
// (package account/placement) among the default account and the account
// documents, and the real collector lists every account.
//
// It is not World: World plays a few proxies with every fault of the
// system, interleaving invocations step by step; this plays a fleet
// (100,000 proxies in `make sim-accounts`), one invocation at a time in
// the order of their deliveries, with the faults of accounts only (rate
// limits and full quotas), to hold the fleet-wide budget and placement at
// scale.
//
// Time: every invocation runs in a goroutine of its own, one at a time;
// a sleep on the schedule's clock (the pacer's for a near slot, the
// reconciler's for a backoff or the budget's turn) parks it until the
// schedule's time reaches its end, and the schedule plays the other
// deliveries meanwhile, as a fleet of instances would. So the pacers run
// with their default Options (Near included): no sleep holds the fleet,
// and none can deadlock the schedule.

// UnpacedAccount is the planted bug of the accounts schedule: the last
// account's provider is not behind its budget (the pacing decorator is
// skipped for it), so its calls reach its cloud as fast as the
// reconcilers make them, past the account's limit.
const UnpacedAccount Bug = BudgetReadOutsideTransaction + 1

// AccountsConfig is one accounts schedule.
type AccountsConfig struct {
	Seed uint64
	// Accounts are the accounts of the fleet: the deployment's default
	// and Accounts-1 account documents.
	Accounts int
	// Proxies are created by users over the schedule's first minutes.
	Proxies int
	// Bug is NoBug or UnpacedAccount.
	Bug Bug
	// Calls, when above 0, are each account's limit a minute instead of
	// AccountRate's.
	Calls int
}

// AccountsResult is what an accounts schedule did and found.
type AccountsResult struct {
	Proxies, Accounts int
	// Ready are the proxies Ready at the end; Instances the VMs of every
	// account then.
	Ready, Instances int
	// CloudCalls are the calls that reached the accounts' clouds;
	// RateLimited those the clouds refused past their limit, CloudFaults
	// those they refused of their own accord (the cloud's word is final
	// and must be waited out, never a failure); QuotaRefused the creates
	// refused past a quota.
	CloudCalls, RateLimited, CloudFaults, QuotaRefused int
	// FullAccounts are the accounts whose quota filled, so that placement
	// had to move on; SmallQuotas, the accounts given a small one (the
	// quota faults).
	FullAccounts, SmallQuotas int
	// Invocations are the reconcile runs, GCRuns the collector's.
	Invocations, GCRuns int
	// Busiest is the most calls any account's cloud saw in one window,
	// Limit the account limit it is held to.
	Busiest, Limit int
	// Elapsed is the schedule's time from the first create to the end.
	Elapsed    time.Duration
	Violations []string
}

// Summary is the line `make sim-accounts` ends with.
func (r AccountsResult) Summary() string {
	return fmt.Sprintf("sim: %d proxies, %d accounts, %d Ready, %d cloud calls (busiest window %d of %d), %d refused past a limit, %d rate-limit faults, %d accounts' quotas filled, %s of schedule time, %d violations",
		r.Proxies, r.Accounts, r.Ready, r.CloudCalls, r.Busiest, r.Limit, r.RateLimited, r.CloudFaults, r.FullAccounts, r.Elapsed.Round(time.Second), len(r.Violations))
}

// AccountRate is each account's budget and its cloud's limit, in calls a
// minute: half a call for each proxy of its share of the fleet, so that
// the fleet's burst meets it (each new proxy costs a read of every
// account's quota, its create and a Get), from 10 to 1,500 a minute (a
// large cloud's default for a project's mutations).
func AccountRate(proxies, accounts int) pacing.Rate {
	return pacing.Rate{Calls: min(max(proxies/max(accounts, 1)/2, 10), 1500), Window: time.Minute}
}

const (
	// accountRegion is the one region of the accounts schedule.
	accountRegion = "us-central1"
	// cloudFaultRate is how often a cloud refuses a call of its own accord.
	cloudFaultRate = 0.005
	// arrivals is the time over which the users create the proxies.
	arrivals = 10 * time.Minute
	// accountsDeadline bounds the schedule's time.
	accountsDeadline = 48 * time.Hour
)

// accountID names the i-th account: "" the default, then account-i.
func accountID(i int) string {
	if i == 0 {
		return account.Default
	}
	return fmt.Sprintf("account-%d", i)
}

// accountsWorld is one accounts schedule.
type accountsWorld struct {
	cfg    AccountsConfig
	rate   pacing.Rate
	rng    *rand.Rand
	clock  *clock.Fake
	store  *storefake.Store
	meters []*meter
	provs  map[string]provider.Provider
	rec    *reconcile.Reconciler
	col    *gc.Collector
	queue  deliveries
	// parked hears, from the invocation that runs, that it parked in a
	// sleep or ended.
	parked chan struct{}
	// unready are the documents not Ready: the schedule ends once none
	// is left.
	unready map[proxy.Key]bool
	seq     int
	res     AccountsResult
	uids    map[string]bool
}

func (w *accountsWorld) violation(format string, args ...any) {
	w.res.Violations = append(w.res.Violations, fmt.Sprintf(format, args...))
}

func placementName(id string) string {
	if id == account.Default {
		return "the default account"
	}
	return "account " + id
}

// RunAccounts plays one accounts schedule and checks its invariants.
func RunAccounts(cfg AccountsConfig) AccountsResult {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	w := &accountsWorld{
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 59)),
		clock:   clock.NewFake(start),
		provs:   map[string]provider.Provider{},
		uids:    map[string]bool{},
		parked:  make(chan struct{}),
		unready: map[proxy.Key]bool{},
		rate:    AccountRate(cfg.Proxies, cfg.Accounts),
	}
	if cfg.Calls > 0 {
		w.rate.Calls = cfg.Calls
	}
	w.res = AccountsResult{Proxies: cfg.Proxies, Accounts: cfg.Accounts, Limit: w.rate.Calls}
	ctx := context.Background()
	w.store = storefake.New(w.clock)
	log := slog.New(slog.DiscardHandler)
	mem := pacing.NewMemory()
	share := (cfg.Proxies + cfg.Accounts - 1) / cfg.Accounts
	for i := range cfg.Accounts {
		id := accountID(i)
		// The quota faults: some accounts' quotas fill at half their
		// share of the fleet, and placement must move on; the others
		// hold twice it, so the fleet fits.
		quota := 2*share + 1
		if i%2 == 1 && w.rng.IntN(2) == 0 {
			quota = share/2 + 1
			w.res.SmallQuotas++
		}
		m := &meter{w: w, id: id, limit: w.rate.Calls, window: w.rate.Window, quota: quota, live: map[string]string{},
			mock: mock.New(mock.Options{Clock: w.clock, ProvisioningDelay: time.Duration(20+w.rng.IntN(40)) * time.Second, CallHome: w.callHome})}
		w.meters = append(w.meters, m)
		var p provider.Provider = m
		if !(cfg.Bug == UnpacedAccount && i == cfg.Accounts-1) {
			pacer, err := pacing.New(mem, pacing.Key{Type: mock.Type, Account: id}, w.rate, accountsClock{w}, pacing.Options{Seed: cfg.Seed*1000 + uint64(i) + 1})
			if err != nil {
				panic(err)
			}
			p = pacing.Provider(m, pacer, mockCalls, log)
		}
		w.provs[id] = p
		if id != account.Default {
			if _, err := w.store.PutAccount(ctx, account.Account{ID: id, Provider: mock.Type, Regions: []string{accountRegion}, State: account.Active}, start); err != nil {
				panic(err)
			}
		}
	}
	provs := accountProviders(w.provs)
	q := &accountsQueue{w: w}
	w.rec = reconcile.New(w.store, provs, q, nil, accountsClock{w}, log, reconcile.Options{
		Rand: rand.New(rand.NewPCG(cfg.Seed, 7)), Holders: rand.New(rand.NewPCG(cfg.Seed, 53)), Accounts: w.store,
		BootTimeout: 10 * time.Minute, Bootstrap: bootstrapConfig,
	})
	w.col = gc.New(provs, w.store, q, accountsClock{w}, log, gc.Options{GracePeriod: gracePeriod, Parallelism: 1, Accounts: w.store})
	w.store.Watch(func(c storefake.Change) {
		if c.New == nil || c.New.Status.Phase == proxy.PhaseReady {
			delete(w.unready, c.Key)
		} else {
			w.unready[c.Key] = true
		}
		if c.New != nil {
			w.enqueue(accountDelivery{key: c.Key, trigger: reconcile.Trigger{Reason: proxy.ReasonWritten}}, 100*time.Millisecond)
		}
	})
	for i := range cfg.Proxies {
		at := time.Duration(int64(arrivals) * int64(i) / int64(max(cfg.Proxies, 1)))
		w.enqueue(accountDelivery{create: i + 1}, at)
	}
	w.enqueue(accountDelivery{gc: true}, gcInterval)
	w.run(ctx)
	w.res.Elapsed = w.clock.Now().Sub(start)
	w.check(ctx)
	return w.res
}

// callHome is a VM's call-home: a delivery of its document.
func (w *accountsWorld) callHome(c mock.CallHome) {
	reason := proxy.ReasonReady
	if c.BootError != "" {
		reason = proxy.ReasonBootFailed
	}
	w.enqueue(accountDelivery{key: proxy.Key{Namespace: c.Namespace, Name: c.Name}, trigger: reconcile.Trigger{Reason: reason, UID: c.UID}}, time.Second)
}

// run plays the deliveries in their order until every document is Ready
// and nothing but the collector's tick is left.
func (w *accountsWorld) run(ctx context.Context) {
	deadline := w.clock.Now().Add(accountsDeadline)
	for w.queue.Len() > 0 && w.clock.Now().Before(deadline) {
		if w.queue.Len() == 1 && w.queue[0].gc && len(w.unready) == 0 {
			return
		}
		d := heap.Pop(&w.queue).(accountDelivery)
		if d.at.After(w.clock.Now()) {
			w.clock.Set(d.at)
		}
		switch {
		case d.wake != nil:
			w.resume(d.wake)
		case d.gc:
			w.res.GCRuns++
			w.start(ctx, func(ctx context.Context) {
				if _, err := w.col.Run(ctx); err != nil && !errors.Is(err, gc.ErrIncomplete) {
					w.violation("GC run at %s: %v", w.clock.Now().Format(time.TimeOnly), err)
				}
				w.enqueue(accountDelivery{gc: true}, gcInterval)
			})
		case d.create > 0:
			w.create(ctx, d.create)
		default:
			w.res.Invocations++
			w.start(ctx, func(ctx context.Context) {
				if err := w.rec.Reconcile(ctx, d.key, d.trigger); err != nil {
					w.enqueue(d, 10*time.Second)
				}
			})
		}
	}
	if len(w.unready) > 0 {
		w.violation("%d documents still not Ready after %s of the schedule", len(w.unready), accountsDeadline)
	}
}

// task is an invocation's goroutine, parked in a sleep or about to run.
type task struct{ resume chan struct{} }

type taskKey struct{}

// start runs f as an invocation until it parks in a sleep or ends.
func (w *accountsWorld) start(ctx context.Context, f func(context.Context)) {
	t := &task{resume: make(chan struct{})}
	ctx = context.WithValue(ctx, taskKey{}, t)
	go func() {
		<-t.resume
		f(ctx)
		w.parked <- struct{}{}
	}()
	w.resume(t)
}

// resume lets a parked invocation run until it parks again or ends.
func (w *accountsWorld) resume(t *task) {
	t.resume <- struct{}{}
	<-w.parked
}

// accountsClock is the schedule's clock, whose sleep parks the invocation
// until the schedule's time reaches its end.
type accountsClock struct{ w *accountsWorld }

func (c accountsClock) Now() time.Time { return c.w.clock.Now() }

func (c accountsClock) AfterFunc(d time.Duration, f func()) func() bool {
	return c.w.clock.AfterFunc(d, f)
}

func (c accountsClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t, _ := ctx.Value(taskKey{}).(*task)
	if t == nil {
		c.w.clock.Advance(d)
		return nil
	}
	c.w.enqueue(accountDelivery{wake: t}, d)
	c.w.parked <- struct{}{}
	<-t.resume
	return nil
}

func (w *accountsWorld) create(ctx context.Context, i int) {
	uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(i), w.rng.Uint64()&0xffffffffffff)
	now := w.clock.Now()
	p := &proxy.Proxy{
		Namespace: namespace, Name: fmt.Sprintf("p%d", i), UID: uid, Generation: 1,
		Spec: proxy.Spec{Provider: mock.Type, Port: proxy.DefaultPort, AllowedSourceRanges: []string{"203.0.113.0/24"},
			IPPolicy: proxy.IPEphemeral, Placement: proxy.Placement{Region: accountRegion}},
		Status:     proxy.Status{Phase: proxy.PhasePending},
		CreateTime: now, Reconciler: proxy.Bookkeeping{ProgressTime: now},
	}
	if _, err := w.store.Create(ctx, p, w.cfg.Proxies); err != nil {
		w.violation("creating %s: %v", p.Name, err)
		return
	}
	w.uids[uid] = true
}

// check states the accounts schedule's invariants: every proxy Ready on
// exactly one VM, in the account its status names; no account past its
// quota; nothing leaked. (No account past its limit of calls in any
// window is held by the meters as the calls come.)
func (w *accountsWorld) check(ctx context.Context) {
	byUID := map[string][]placedVM{}
	for _, m := range w.meters {
		ins := m.mock.Instances()
		w.res.Instances += len(ins)
		if len(ins) > m.quota {
			w.violation("%s holds %d instances in %s, past its quota of %d", placementName(m.id), len(ins), accountRegion, m.quota)
		}
		for _, in := range ins {
			byUID[in.UID] = append(byUID[in.UID], placedVM{m.id, in})
		}
	}
	for _, key := range w.store.Keys() {
		if p, err := w.store.Get(ctx, key); err == nil {
			w.checkPlaced(key, p, byUID[p.UID])
		}
	}
	live, err := w.store.LiveUIDs(ctx)
	if err != nil {
		w.violation("reading the live uids: %v", err)
	}
	for uid, vms := range byUID {
		if _, ok := live[uid]; !ok {
			for _, v := range vms {
				w.violation("instance %s of %s is claimed by no document (leaked)", v.in.ID, placementName(v.account))
			}
		}
	}
}

// placedVM is a VM of an account, as the check reads them.
type placedVM struct {
	account string
	in      provider.Instance
}

// checkPlaced holds a proxy to its one VM, Ready, in the account its
// status names.
func (w *accountsWorld) checkPlaced(key proxy.Key, p *proxy.Proxy, mine []placedVM) {
	switch {
	case p.Status.Phase != proxy.PhaseReady:
		w.violation("%s: phase %s at the end, want Ready (%s)", key, p.Status.Phase, p.Status.Message)
	case len(mine) != 1:
		w.violation("%s: %d instances carry its uid, want exactly 1", key, len(mine))
	case mine[0].account != p.Status.Account:
		w.violation("%s: its VM %s is in %s, but status.account names %s", key, mine[0].in.ID, placementName(mine[0].account), placementName(p.Status.Account))
	case mine[0].in.ID != p.Status.ProviderID:
		w.violation("%s: status names %s, but its instance is %s", key, p.Status.ProviderID, mine[0].in.ID)
	default:
		w.res.Ready++
	}
}

// accountProviders hands out each account's provider.
type accountProviders map[string]provider.Provider

func (a accountProviders) Get(ctx context.Context, typ string) (provider.Provider, error) {
	return a.Account(ctx, typ, account.Default)
}

func (a accountProviders) Account(_ context.Context, typ, id string) (provider.Provider, error) {
	p, ok := a[id]
	if typ != mock.Type || !ok {
		return nil, fmt.Errorf("simulation: account %q of %q: %w", id, typ, provider.ErrNoAccount)
	}
	return p, nil
}

func (a accountProviders) Types() []string { return []string{mock.Type} }

// accountsQueue is proxy-reconcile: requests become deliveries.
type accountsQueue struct{ w *accountsWorld }

func (q *accountsQueue) Publish(_ context.Context, m proxy.ReconcileMessage) error {
	key, err := m.Key()
	if err != nil {
		return err
	}
	q.w.enqueue(accountDelivery{key: key, trigger: reconcile.TriggerOf(m)}, time.Second)
	return nil
}

// accountDelivery is a reconcile's delivery, a user's create (create: the
// proxy's number), a collector's tick, or the end of a sleep.
type accountDelivery struct {
	at      time.Time
	seq     int
	key     proxy.Key
	trigger reconcile.Trigger
	create  int
	gc      bool
	// wake is a parked invocation whose sleep ends.
	wake *task
}

func (w *accountsWorld) enqueue(d accountDelivery, after time.Duration) {
	w.seq++
	d.at, d.seq = w.clock.Now().Add(after), w.seq
	heap.Push(&w.queue, d)
}

// deliveries is a heap of deliveries by time, then order of enqueueing.
type deliveries []accountDelivery

func (h deliveries) Len() int { return len(h) }
func (h deliveries) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h deliveries) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *deliveries) Push(x any)   { *h = append(*h, x.(accountDelivery)) }
func (h *deliveries) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
