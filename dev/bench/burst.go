package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/clouds/cloudsdev"
	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store"
	"github.com/egress-proxies/egress/internal/store/storefake"
)

// The burst phase: -burst proxies asked for at once of a cloud (the
// first whose part of several accounts brings a providerbench.Burst:
// today Compute Engine's, internal/provider/gcp/gcpaccounts), through one
// account and then through two, each account's calls paced by the
// fleet's budget (package pacing) against the cloud's rate limit scaled
// down in its fake, so that the phase takes seconds and not the minutes
// a real burst at the documented limit would.
//
// What is real: the cloud's provider (its SDK against its fake on
// loopback, which meters each account's calls as the cloud does, and
// refuses past them as the cloud does); the pacer and its provider
// decorator, every budget kept in the Firestore emulator's shards
// (store.Pacing), each of burstInstances function instances with its own
// Firestore client, pacer and cloud clients, so that the budget holds
// across instances as it must in the fleet; and the reconciler (package
// reconcile), which drives each proxy to Ready at its floor — Create,
// the VM's call-home, one Get — and keeps a queued call's proxy
// Provisioning with reason Queued, waiting its turn. The real reconciler
// rather than providerbench's lifecycle driver: how a queued call comes
// back (the RetryAfter the pacer gives, the run's wait budget, the write
// of the Queued condition and its event) is the reconciler's, and what a
// user sees of a burst is the document it writes.
//
// The accounts are the product's: the second is an account document
// (accounts/burst-2), each instance's provider registry (provider.Set)
// makes an account's paced provider when first asked (the fake's clients
// know the account's project, which the document's settings name in a
// deployment), and the reconciler's
// placement chooses each proxy's account (the rendezvous hash of its uid
// among the accounts with headroom, their regional quotas read through
// the account's budget) and records it in status.account.
//
// What stands in: the proxies' documents are in the in-memory store
// (storefake, which passes the Firestore store's contract, as
// internal/sim drives the reconciler over it), each write's event and each
// hand-off delivered at once to a function instance drawn at random;
// the VMs boot at once (the fake boots them every burstBoot) and call
// home then, so that the time measured is the calls' and not a boot's
// (the floor counts calls only).
const (
	// burstInterval and burstLimit are the cloud's rate limit scaled
	// down: an account takes burstLimit requests in each interval of
	// burstInterval (Compute's 1,500 a minute, 25 a second, becomes 40
	// in 4 s, 10 a second), and its budget is the same.
	burstInterval = 4 * time.Second
	burstLimit    = 40
	// burstInstances are the function instances that run the
	// reconciler, each with its own pacer of every account.
	burstInstances = 4
	// burstBoot is how often the fake boots the VMs created since: a
	// VM is running, and calls home, at most this long after its Create.
	burstBoot = 50 * time.Millisecond
	// burstTimeout bounds one burst: far above its floor at the
	// scaled-down rate, against a run that hangs.
	burstTimeout = 5 * time.Minute
)

// burstCalls are the cloud's requests each provider method makes on the
// burst's path, as the fake counts them (the phase's test holds them):
// the cloud's part says them (providerbench.Burst.Calls).
var burstCalls = burstCloud().Calls()

// burstCallsPerProxy are the calls a proxy makes from its request to
// Ready at the reconciler's floor: its Create and the Get its VM's
// call-home brings.
const burstCallsPerProxy = 2

// burstSettings size one burst phase.
type burstSettings struct {
	// proxies are asked for in each burst, through one account and
	// then through two.
	proxies int
	// limit calls in each interval, per account.
	limit    int
	interval time.Duration
	// instances are the function instances.
	instances int
	// project names the Firestore emulator's projects the budgets are
	// kept in, one per burst so that neither sees the other's shards.
	project string
	// near is the pacer's Options.Near: 0 is its default, the
	// production one; a test's small burst shortens it so that its
	// calls queue as a large burst's do.
	near time.Duration
}

// burstResult is the phase's figures: the burst through one account and
// through two, and the time of the second as a part of the first's.
type burstResult struct {
	// Provider is the cloud's provider type the bursts went to.
	Provider    string   `json:"provider"`
	OneAccount  burstRun `json:"oneAccount"`
	TwoAccounts burstRun `json:"twoAccounts"`
	// TwoAccountsToOne is TwoAccounts' time to all Ready over
	// OneAccount's.
	TwoAccountsToOne float64 `json:"twoAccountsToOne"`
}

// burstRun is one burst's figures.
type burstRun struct {
	Accounts  int `json:"accounts"`
	Proxies   int `json:"proxies"`
	Instances int `json:"instances"`
	// Ready counts the proxies Ready at the end.
	Ready int `json:"ready"`
	// Calls are the requests the cloud's fake counted from the
	// accounts, refused ones too.
	Calls int `json:"calls"`
	// RateLimit is each account's limit (calls in each interval of
	// RateIntervalSeconds), LimitPerSecond all accounts' together.
	RateLimit           int     `json:"rateLimit"`
	RateIntervalSeconds float64 `json:"rateIntervalSeconds"`
	LimitPerSecond      float64 `json:"limitPerSecond"`
	// AchievedRate is Calls over ReadySeconds, and AchievedRateToLimit
	// its part of LimitPerSecond.
	AchievedRate        float64 `json:"achievedRate"`
	AchievedRateToLimit float64 `json:"achievedRateToLimit"`
	// FloorSeconds is the time the limit implies: Calls at
	// LimitPerSecond. ReadySeconds is from the first request to the last
	// proxy Ready, ReadyToFloor its ratio to the floor.
	FloorSeconds float64 `json:"floorSeconds"`
	ReadySeconds float64 `json:"readySeconds"`
	ReadyToFloor float64 `json:"readyToFloor"`
	// Refused are the calls the cloud refused for its rate limit (Compute's 403
	// rateLimitExceeded); Queued the proxies that showed reason Queued
	// on their way (a wait, which a user may see).
	Refused int `json:"refused"`
	Queued  int `json:"queued"`
	// UserVisibleErrors are the proxies that showed anything but their
	// way to Ready and a queued wait (another reason, a message that is
	// no queue's, Failed); Errors the first few, as shown.
	UserVisibleErrors int      `json:"userVisibleErrors"`
	Errors            []string `json:"errors,omitempty"`
	// Placed counts the proxies by the account the reconciler's
	// placement put them in ("default" for the deployment's own), and
	// QuotaReads placement's reads of the accounts' regional quotas
	// (regions.get) that Compute answered, which Calls count too.
	Placed     map[string]int `json:"placed"`
	QuotaReads int            `json:"quotaReads"`
	// StoreMs are the budgets' updates in Firestore, each shard's
	// Update as the pacer asked it (the reads again after a lost race
	// in it), and Contended those that gave up on a shard other
	// instances kept winning (pacing.ErrContended).
	StoreMs   latency `json:"storeMs"`
	Contended int     `json:"contended"`
}

// burstPhase runs the burst phase on the stack's Firestore emulator.
func (b *bench) burstPhase(ctx context.Context, r *results) error {
	defer b.useStackFirestore()()
	res, err := runBurst(ctx, b.s.burstSettings(), b.log)
	if err != nil {
		return err
	}
	r.Burst = &res
	return nil
}

// burstSettings are the burst phase's sizes from the benchmark's.
func (s settings) burstSettings() burstSettings {
	return burstSettings{proxies: s.burst, limit: burstLimit, interval: burstInterval, instances: burstInstances, project: stackProject + "-burst"}
}

// runBurst runs the burst through one account, then through two, on the
// Firestore emulator that FIRESTORE_EMULATOR_HOST names.
func runBurst(ctx context.Context, s burstSettings, log *slog.Logger) (burstResult, error) {
	res := burstResult{Provider: burstCloud().Type()}
	for i, accounts := range []int{1, 2} {
		run, err := burstOnce(ctx, s, accounts, fmt.Sprintf("%s-%d", s.project, i+1))
		if err != nil {
			return res, fmt.Errorf("the burst through %d accounts: %w", accounts, err)
		}
		log.Info("burst", "accounts", accounts, "placed", run.Placed, "quotaReads", run.QuotaReads, "storeMs", run.StoreMs, "contended", run.Contended, "proxies", run.Proxies, "calls", run.Calls, "seconds", run.ReadySeconds, "floorSeconds", run.FloorSeconds,
			"achievedRateToLimit", run.AchievedRateToLimit, "refused", run.Refused, "userVisibleErrors", run.UserVisibleErrors)
		if accounts == 1 {
			res.OneAccount = run
		} else {
			res.TwoAccounts = run
		}
	}
	if res.OneAccount.ReadySeconds > 0 {
		res.TwoAccountsToOne = round(res.TwoAccounts.ReadySeconds/res.OneAccount.ReadySeconds, 3)
	}
	return res, nil
}

// burstAccount is one account of a burst: its id (the cloud's part
// makes its project, subscription, … from it).
type burstAccount struct {
	id string
}

// burstAccounts are the accounts of a burst through n of them: the
// deployment's default first.
func burstAccounts(n int) []burstAccount {
	out := []burstAccount{{id: ""}}
	for i := 1; i < n; i++ {
		out = append(out, burstAccount{id: fmt.Sprintf("burst-%d", i+1)})
	}
	return out
}

// burstCloud is the cloud of the burst: the first whose part of several
// accounts brings one (cloudsdev.Bursts).
func burstCloud() providerbench.Burst {
	bursts := cloudsdev.Bursts()
	if len(bursts) == 0 {
		panic("no cloud of internal/clouds.All brings a part of make bench's burst (providerbench.Burst)")
	}
	return bursts[0]
}

// burstOnce runs one burst of s.proxies through n accounts, its budgets
// kept in the emulator's project fsProject.
func burstOnce(ctx context.Context, s burstSettings, n int, fsProject string) (burstRun, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	cloud := burstCloud()
	fake, err := cloud.Start(s.limit, s.interval)
	if err != nil {
		return burstRun{}, fmt.Errorf("starting the %s fake of the burst: %w", cloud.Type(), err)
	}
	defer fake.Close()
	accounts := burstAccounts(n)
	rate := pacing.Rate{Calls: s.limit, Window: s.interval, Source: cloud.Rate().Source}

	w := &burstWorld{ctx: ctx, docs: storefake.New(clock.Real{}), rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		seen: map[proxy.Key]*burstSeen{}, placed: map[string]int{}, allReady: make(chan struct{})}
	// The accounts past the deployment's default are documents, as an
	// admin writes them: placement reads them, and each instance's
	// registry makes an account's provider from its settings.
	for _, a := range accounts[1:] {
		doc := account.Account{ID: a.id, Provider: cloud.Type(), State: account.Active}
		if _, err := w.docs.PutAccount(ctx, doc, time.Now()); err != nil {
			return burstRun{}, fmt.Errorf("the burst's account %s: %w", a.id, err)
		}
	}
	quiet := slog.New(slog.DiscardHandler)
	for i := range s.instances {
		// A function instance: its own Firestore and cloud clients, a
		// registry of providers that makes each account's paced provider
		// when it is first asked for, and a reconciler that places each
		// proxy among the accounts.
		client, err := firestore.NewClient(ctx, fsProject)
		if err != nil {
			return burstRun{}, fmt.Errorf("the budgets' Firestore client: %w", err)
		}
		defer client.Close()
		fsBudgets := store.NewPacing(client)
		budgets := timedBudgets{fsBudgets, w}
		// A function instance of a fleet is warm: its connection to
		// Firestore made, the database there. Not the burst's to pay.
		// Each instance warms a document of its own, so that no warm-up
		// waits on another's transaction.
		warm := pacing.Shard{Key: pacing.Key{Type: "warm-up", Account: strconv.Itoa(i)}}
		if err := fsBudgets.Update(ctx, warm, func(pacing.Counts) (pacing.Counts, bool) { return pacing.Counts{0: 1}, true }); err != nil {
			return burstRun{}, fmt.Errorf("warming the budgets' Firestore client up: %w", err)
		}
		clients, err := fake.Instance(ctx)
		if err != nil {
			return burstRun{}, err
		}
		defer clients.Close()
		paced := func(id string) provider.Constructor {
			return func(context.Context) (provider.Provider, error) {
				p, err := clients.Provider(id, s.interval)
				if err != nil {
					return nil, err
				}
				if q, ok := provider.AsQuotaReader(p); ok {
					p = quotaCounter{p, q, &w.quotaReads}
				}
				pacer, err := pacing.New(budgets, pacing.Key{Type: cloud.Type(), Account: id}, rate, clock.Real{}, pacing.Options{Near: s.near})
				if err != nil {
					return nil, err
				}
				return pacing.Provider(p, pacer, burstCalls, quiet), nil
			}
		}
		reg := provider.NewRegistry()
		// The fake's clients know each account's project (the settings
		// an account document of the cloud sets): the account's id names
		// it.
		perAccount := provider.PerAccount(func(acct provider.AccountSpec) (provider.Constructor, error) {
			return paced(acct.ID), nil
		})
		if err := reg.Register(cloud.Type(), paced(account.Default), perAccount); err != nil {
			return burstRun{}, err
		}
		set := provider.NewSet(reg).WithAccounts(func(ctx context.Context, id string) (string, provider.AccountSpec, error) {
			a, err := w.docs.GetAccount(ctx, id)
			if err != nil {
				return "", provider.AccountSpec{}, err
			}
			return a.Provider, provider.AccountSpec{ID: id, Settings: a.Settings, CallsPerWindow: a.Limits.CallsPerWindow}, nil
		})
		opts := reconcile.Options{Accounts: account.NewCache(w.docs, clock.Real{}, 0)}
		w.instances = append(w.instances, reconcile.New(w.docs, set, w, nil, clock.Real{}, quiet, opts))
	}
	w.docs.Watch(w.changed)
	booted := make(chan struct{})
	go func() {
		defer close(booted)
		w.boot(fake)
	}()

	// Each burst starts as a window of the cloud's meter starts (the
	// fake's windows and the budget's are both aligned to the Unix
	// epoch): a burst that starts late in a window has that window's
	// whole limit in what is left of it, and the time to all Ready would
	// depend by up to a window on when the burst began, not on how it
	// was paced; started alike, the bursts through one account and
	// through two compare.
	if err := (clock.Real{}).Sleep(ctx, time.Until(time.Now().Truncate(s.interval).Add(s.interval))); err != nil {
		return burstRun{}, err
	}
	start := time.Now()
	w.mu.Lock()
	w.want = s.proxies
	w.mu.Unlock()
	for i := range s.proxies {
		uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		p := &proxy.Proxy{Namespace: "burst", Name: fmt.Sprintf("proxy-%04d", i), UID: uid, Generation: 1, CreateTime: time.Now(),
			Spec:   proxy.Spec{Provider: cloud.Type(), Placement: cloud.Placement(), Port: 3128, CloudInit: "#cloud-config\n"},
			Status: proxy.Status{Phase: proxy.PhasePending}}
		if _, err := w.docs.Create(ctx, p, s.proxies); err != nil {
			return burstRun{}, fmt.Errorf("creating %s: %w", p.Key(), err)
		}
	}
	var timedOut bool
	select {
	case <-w.allReady:
	case <-time.After(burstTimeout):
		timedOut = true
	case <-ctx.Done():
		return burstRun{}, ctx.Err()
	}
	stop()
	w.runs.Wait()
	<-booted

	run := burstRun{Accounts: n, Proxies: s.proxies, Instances: s.instances, RateLimit: s.limit, RateIntervalSeconds: s.interval.Seconds(),
		LimitPerSecond: round(float64(n*s.limit)/s.interval.Seconds(), 3)}
	for _, a := range accounts {
		counted, refused := fake.Counted(a.id)
		run.Calls += counted
		run.Refused += refused
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	run.QuotaReads = int(w.quotaReads.Load())
	run.StoreMs, run.Contended = providerbench.Summarize(w.updates), w.contended
	run.Placed = map[string]int{}
	for id, k := range w.placed {
		if id == account.Default {
			id = "default"
		}
		run.Placed[id] = k
	}
	var last time.Time
	for _, k := range slices.SortedFunc(func(yield func(proxy.Key) bool) {
		for k := range w.seen {
			if !yield(k) {
				return
			}
		}
	}, func(a, b proxy.Key) int { return strings.Compare(a.Path(), b.Path()) }) {
		seen := w.seen[k]
		if !seen.ready.IsZero() {
			run.Ready++
			if seen.ready.After(last) {
				last = seen.ready
			}
		}
		if seen.queued {
			run.Queued++
		}
		if seen.shown != "" {
			run.UserVisibleErrors++
			if len(run.Errors) < 5 {
				run.Errors = append(run.Errors, k.Path()+": "+seen.shown)
			}
		}
	}
	if timedOut {
		return run, fmt.Errorf("after %s, %d of %d proxies Ready (%d calls counted, %d refused; %d user-visible errors: %s)",
			burstTimeout, run.Ready, s.proxies, run.Calls, run.Refused, run.UserVisibleErrors, strings.Join(run.Errors, "; "))
	}
	ready := last.Sub(start)
	run.ReadySeconds = round(ready.Seconds(), 3)
	run.FloorSeconds = round(float64(run.Calls)/run.LimitPerSecond, 3)
	run.AchievedRate = round(float64(run.Calls)/ready.Seconds(), 3)
	run.AchievedRateToLimit = round(run.AchievedRate/run.LimitPerSecond, 3)
	run.ReadyToFloor = round(run.ReadySeconds/run.FloorSeconds, 3)
	return run, nil
}
