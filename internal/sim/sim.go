// Package sim is a deterministic, seeded simulation of the whole system:
// the real reconciler and garbage collector (the code the functions run)
// over the in-memory store (which passes the same contract as Firestore)
// and the providers: the mock, and each simulated cloud the caller
// passes (a Cloud: a cloud's real provider over its fake, served
// in-process, with the cloud's faults; internal/clouds/cloudsdev lists
// them, and this package names none), under a scheduler that owns time,
// event delivery and the interleaving of concurrent invocations.
//
// Every store, provider, queue and clock call of an invocation is a step;
// only one invocation runs at a time, and the seeded scheduler picks which
// one takes the next step, so any schedule replays exactly from its seed
// (World.Trace records it; TestASeedReplaysTheSame holds it).
// While faults are on, the scheduler drops, duplicates and delays events,
// crashes invocations before or after any step, injects provider errors
// (transient, rate limited, a Create that succeeds but reports failure),
// loses and stops VMs, plants a second deployment's resources in the same
// project, serves the collector no document at all now and then, and
// users create, delete and re-create the same names. Then faults stop, time runs on, and Check states the invariants.
package sim

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/pools"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/store/storefake"
)

// Bug is a safety rule switched off, to show the simulation catches it.
type Bug int

const (
	NoBug Bug = iota
	// NoPrecondition makes status writes blind: they overwrite whatever
	// the document says now.
	NoPrecondition
	// NoLease hides leases from the runs, so concurrent runs all act.
	NoLease
	// NoGracePeriod makes GC delete unclaimed VMs of any age.
	NoGracePeriod
	// NoCreatePending makes Create keyed on nothing recorded before it:
	// each try names its VM afresh, with no request id, so a retry after a
	// lost response or a crash cannot find the VM the first try made.
	NoCreatePending
	// OneRequestID gives every create attempt of a proxy the same request
	// id, derived from its uid (the gcp provider's old way): the provider
	// ignores the attempts after the first, so a replacement never comes.
	OneRequestID
	// RotationByEventOnly hides rotate requests from the garbage
	// collector's claims, so only the request's own event brings the
	// rotation: a lost event loses the rotation.
	RotationByEventOnly
	// NoDeleteGuard lets the collector delete however much, with no
	// document at all: a run served an empty document set by mistake
	// deletes the fleet.
	NoDeleteGuard
	// RelabelBeforeClaim hands a warm VM to the claiming proxy (Reconfigure:
	// its uid label and configuration) before the claim's transaction
	// commits, as a claim that relabels first would: a crash, a lost race
	// or a conflict between the two leaves a VM labelled for a document
	// that does not own it. Planted in the sim's store adapter, so neither
	// the reconciler nor the store knows of it.
	RelabelBeforeClaim
	// RetiringKeepsOldConfiguration hands a change to the current VM only,
	// never to the VM a make-before-break rotation is retiring, as the
	// reconciler did before: new credentials leave the old password
	// working there until the new VM is Ready. Planted in the sim's
	// provider adapter.
	RetiringKeepsOldConfiguration
	// UncountedAgeRotation leaves the namespace's count out of the
	// reconciler's rotations by maxAge (the write that starts one, the
	// claim of a warm VM for one), as a reconciler that counted only what
	// the API counts would: a spec with a short maxAge makes VMs past its
	// namespace's budget. Planted in the sim's store adapter, so neither
	// the reconciler nor the store knows of it.
	UncountedAgeRotation
	// BudgetReadOutsideTransaction takes a create's month, read by a
	// listing outside its transaction, for the month in the transaction,
	// whatever create of the namespace committed since (the API's way
	// before spend.Admit held the read to the namespace's count of
	// creates): two racing creates that each fit the budget, and not
	// together, both pass. Planted in the sim's create (money.go), so the
	// rule's own code does not know of it.
	BudgetReadOutsideTransaction
)

func (b Bug) String() string {
	return [...]string{"none", "no update-time precondition", "no lease", "no GC grace period", "no create-pending record", "one request id per proxy", "rotations by their event only", "no guard on mass deletion", "relabel before the claim commits", "a change never reaches the retiring VM", "rotations by maxAge not counted", "the budget's month read outside the transaction", "an account's provider not behind its budget"}[b]
}

// Stats counts what a schedule did.
type Stats struct {
	Steps, Invocations, Crashes, Dropped, Duplicated, ProviderFaults, Lost, Stopped, UserActions, GCRuns int
	// The VMs' call-homes: lost, duplicated, delayed by more than a few
	// seconds, and forged (a message no VM sent, for a real or a stale uid).
	CallHomesLost, CallHomesDuplicated, CallHomesDelayed, CallHomesForged int
	// NeverReady VMs hung in their boot; BootErrors reported that they
	// cannot serve.
	NeverReady, BootErrors int
	// AsyncCreateFailures were creates accepted and failed later (quota,
	// a bad image); Stockouts, zones out of capacity for a while.
	AsyncCreateFailures, Stockouts int
	// StaticProxies asked for a static address; Rotations are the rotate
	// requests users made.
	StaticProxies, Rotations int
	// OtherDeployment are the VMs a second deployment made in the same
	// project, and Unlabelled the managed VMs without a deployment label:
	// none may ever be deleted. EmptyDocumentSets are GC runs served no
	// document at all by mistake; Refused, the runs the collector's guard
	// refused; OperatorRuns, the runs an operator allows an empty
	// database for, when every proxy was deleted on purpose.
	OtherDeployment, Unlabelled, EmptyDocumentSets, Refused, OperatorRuns int
	// Reconfigurations are the users' changes of a proxy's configuration:
	// Patches (new ranges or ports) and CredentialRotations, each a new
	// generation. ReconfigureErrors are Reconfigure calls that failed
	// (before or after they took effect); ReconfigureStuck, VMs that took a
	// Reconfigure and never served it, saying nothing; ReconfigureRefused,
	// VMs whose agent refused it, rolled back and said so (egress/error);
	// RetiringReconfigured, changes handed to the old VM of a
	// make-before-break rotation too; RevokedWhileRetiring, credentials
	// rotated while such a VM was kept.
	Patches, CredentialRotations, ReconfigureErrors, ReconfigureStuck, ReconfigureRefused, RetiringReconfigured, RevokedWhileRetiring int
	// Warm pools: PoolResizes are the admins' changes of a pool's size
	// (Shrinks among them), PoolDeletions and PoolCreations the deletions
	// and re-creations of a pool, PoolRuns the pool reconciles run,
	// PoolEventsDropped and PoolEventsDuplicated the pool documents'
	// events lost or repeated. Claims are the claims committed (WarmRotations
	// among them: make-before-break), ClaimsCrashed those whose run crashed
	// between the claim's commit and the Reconfigure it owes, Refills the
	// member documents created, MemberDeletions the members asked to go.
	PoolResizes, Shrinks, PoolDeletions, PoolCreations, PoolRuns, PoolEventsDropped, PoolEventsDuplicated int
	Claims, WarmRotations, ClaimsCrashed, Refills, MemberDeletions                                        int
	// The namespace's budget of VMs: Causes are the VMs its creates,
	// rotate requests and maxAges asked for (AgeRotations among them),
	// Refused the creates and rotate requests refused past the budget,
	// Waits the rotations by maxAge that waited for it, Excused the VMs
	// born to replace ones the world harmed.
	Causes, AgeRotations, Refused429, Waits, Excused int
	// The namespace's budget in money: Budgeted are the schedules whose
	// namespace has one, BudgetRaces the creates another create raced
	// between their month's read and their transaction, BudgetRefused the
	// creates the budget refused.
	Budgeted, BudgetRaces, BudgetRefused int
	// Clouds are the simulated clouds' counts, one for each, in the
	// order of the clouds the schedules were given: the proxies made on
	// each, its faults injected (a fault of a kind counted above, a lost
	// VM say, is counted there too), its proxies Ready at the end.
	Clouds []CloudStats
	// ReadyAtEnd, FailedAtEnd and InstancesAtEnd are what the invariants
	// were checked over.
	ReadyAtEnd, FailedAtEnd, InstancesAtEnd int
}

// Faults is the number of faults the schedule injected.
func (s Stats) Faults() int {
	return s.Crashes + s.Dropped + s.Duplicated + s.ProviderFaults + s.Lost + s.Stopped +
		s.CallHomesLost + s.CallHomesDuplicated + s.CallHomesDelayed + s.CallHomesForged + s.NeverReady + s.BootErrors +
		s.AsyncCreateFailures + s.Stockouts + s.OtherDeployment + s.Unlabelled + s.EmptyDocumentSets +
		s.ReconfigureErrors + s.ReconfigureStuck + s.ReconfigureRefused + s.PoolEventsDropped + s.PoolEventsDuplicated + s.ClaimsCrashed + s.cloudFaults()
}

// cloudFaults is the number of the simulated clouds' faults.
func (s Stats) cloudFaults() int {
	n := 0
	for _, c := range s.Clouds {
		n += c.Faults
	}
	return n
}

// PoolFaults is the number of pool and claim events the schedule made
// happen: the faults of pools (lost and repeated events, claims crashed
// mid-way) and the changes they must survive (resizes, deletions, claims,
// refills).
func (s Stats) PoolFaults() int {
	return s.PoolResizes + s.PoolDeletions + s.PoolCreations + s.PoolEventsDropped + s.PoolEventsDuplicated +
		s.Claims + s.ClaimsCrashed + s.Refills + s.MemberDeletions
}

// Add sums schedules' stats.
func (s *Stats) Add(o Stats) {
	s.Steps += o.Steps
	s.Invocations += o.Invocations
	s.Crashes += o.Crashes
	s.Dropped += o.Dropped
	s.Duplicated += o.Duplicated
	s.ProviderFaults += o.ProviderFaults
	s.Lost += o.Lost
	s.Stopped += o.Stopped
	s.UserActions += o.UserActions
	s.GCRuns += o.GCRuns
	s.CallHomesLost += o.CallHomesLost
	s.CallHomesDuplicated += o.CallHomesDuplicated
	s.CallHomesDelayed += o.CallHomesDelayed
	s.CallHomesForged += o.CallHomesForged
	s.NeverReady += o.NeverReady
	s.BootErrors += o.BootErrors
	s.AsyncCreateFailures += o.AsyncCreateFailures
	s.Stockouts += o.Stockouts
	s.OtherDeployment += o.OtherDeployment
	s.Unlabelled += o.Unlabelled
	s.EmptyDocumentSets += o.EmptyDocumentSets
	s.Refused += o.Refused
	s.OperatorRuns += o.OperatorRuns
	s.StaticProxies += o.StaticProxies
	s.Rotations += o.Rotations
	s.Patches += o.Patches
	s.CredentialRotations += o.CredentialRotations
	s.ReconfigureErrors += o.ReconfigureErrors
	s.ReconfigureStuck += o.ReconfigureStuck
	s.ReconfigureRefused += o.ReconfigureRefused
	s.RetiringReconfigured += o.RetiringReconfigured
	s.RevokedWhileRetiring += o.RevokedWhileRetiring
	s.PoolResizes += o.PoolResizes
	s.Shrinks += o.Shrinks
	s.PoolDeletions += o.PoolDeletions
	s.PoolCreations += o.PoolCreations
	s.PoolRuns += o.PoolRuns
	s.PoolEventsDropped += o.PoolEventsDropped
	s.PoolEventsDuplicated += o.PoolEventsDuplicated
	s.Claims += o.Claims
	s.WarmRotations += o.WarmRotations
	s.ClaimsCrashed += o.ClaimsCrashed
	s.Refills += o.Refills
	s.MemberDeletions += o.MemberDeletions
	s.Causes += o.Causes
	s.AgeRotations += o.AgeRotations
	s.Refused429 += o.Refused429
	s.Waits += o.Waits
	s.Excused += o.Excused
	s.Budgeted += o.Budgeted
	s.BudgetRaces += o.BudgetRaces
	s.BudgetRefused += o.BudgetRefused
	for _, c := range o.Clouds {
		i := slices.IndexFunc(s.Clouds, func(x CloudStats) bool { return x.Type == c.Type })
		if i < 0 {
			s.Clouds = append(s.Clouds, CloudStats{Type: c.Type})
			i = len(s.Clouds) - 1
		}
		s.Clouds[i].Proxies += c.Proxies
		s.Clouds[i].Faults += c.Faults
		s.Clouds[i].ReadyAtEnd += c.ReadyAtEnd
	}
	s.ReadyAtEnd += o.ReadyAtEnd
	s.FailedAtEnd += o.FailedAtEnd
	s.InstancesAtEnd += o.InstancesAtEnd
}

const (
	namespace   = "sim"
	gracePeriod = 5 * time.Minute
	gcInterval  = time.Minute
	faultSteps  = 400
	// bootTimeout is short, so that boots that never end are replaced, and
	// fail a proxy, within the schedule.
	bootTimeout     = 3 * time.Minute
	maxBootFailures = 3
	quiesceFor      = 25 * time.Minute
	// reconfigureTimeout is short, so that a VM that never serves a new
	// generation is replaced within the schedule.
	reconfigureTimeout = 2 * time.Minute
)

var names = []string{"a", "b", "c"}

// zones are the zones of the one region the simulated proxies use.
var zones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}

var errCrash = errors.New("sim: invocation crashed")

// delivery is an event or request waiting to reach Reconcile, or a GC tick.
type delivery struct {
	at      time.Time
	seq     int
	key     proxy.Key
	trigger reconcile.Trigger
	gc      bool
	// pool, when set, is a pool reconcile's delivery: an event of the
	// pool's document, or a message naming pools/{pool}.
	pool string
}

// inv is one running invocation, parked at a step or finished.
type inv struct {
	id      int
	grant   chan bool
	parked  chan struct{}
	done    chan struct{}
	crashed bool
	gc      bool
	// key is the document a reconcile run is of; pool, the pool a pool
	// run is of.
	key  proxy.Key
	pool string
	// claimed is set once the run's claim committed: a crash after it,
	// before the run ends, is a claim crashed mid-way.
	claimed bool
	// uids is a GC run's uid set, read when the run starts;
	// noDocuments, that it was served none by mistake (a fault).
	uids        map[string]proxy.Claim
	noDocuments bool
	// booting is set while the last provider call of the run saw a VM
	// booting that it has not deleted (a Create, or a Get that said
	// Provisioning): a wait then is a wait for a boot, which no run may do.
	booting bool
	// deleted are the VMs the run deleted: waiting for one to go is no
	// wait for a boot.
	deleted map[string]bool
}

type invKey struct{}

// World is one schedule.
type World struct {
	rng *rand.Rand
	// src is rng's source, whose state a trace records at each step.
	src *rand.PCG
	// trace is the schedule as it is played, when traced (trace.go).
	trace *[]string
	// shared draws the faults of resources this deployment does not own
	// (another deployment's, an empty document set): a stream of its
	// own, so that adding them left the other faults' schedules as they
	// were until one of them happens. revocations draws, likewise, the
	// revocation faults and actions (revocation): agents that refuse a
	// configuration, and credentials rotated while a make-before-break
	// rotation keeps the old VM; budget, which proxies have a maxAge.
	// money, the races between creates (money.go).
	shared, revocations, budget, money *rand.Rand
	bug                                Bug
	// costs cost the proxies at the mock's prices, for the namespace's
	// budget in money, which it has when budgeted (money.go).
	costs    spend.Costs
	budgeted bool
	clock    *clock.Fake
	store    *storefake.Store
	mock     *mock.Provider
	// other is a second deployment's view of the same project; foreign
	// are the resources it (or a release before the deployment label)
	// made, which this deployment's collector must never delete.
	other   *mock.Provider
	foreign []string
	rec     *reconcile.Reconciler
	col     *gc.Collector
	// operator is the collector as an operator runs it, allowing an
	// empty database, when every proxy was deleted on purpose.
	operator *gc.Collector
	pending  []delivery
	seq      int
	active   []*inv
	nextID   int
	faults   bool
	stats    Stats
	nextGC   time.Time
	uids     map[string][]string // name → every uid it had
	obsGen   map[string]int64
	actor    map[string]*inv
	// lastUIDs is the uid set read at the last GC tick.
	lastUIDs map[string]proxy.Claim
	// staticEndpoint is the first endpoint each Static proxy was Ready at;
	// credentials, the first credentials each proxy was given.
	staticEndpoint map[string]string
	credentials    map[string]proxy.Credentials
	// stockedOut are the zones out of capacity while faults are on.
	stockedOut []string
	errs       []string

	pools *pools.Reconciler
	// poolSpecs are the pools of the world, by name, as created (sizes
	// change): a proxy whose spec one Serves claims from it.
	poolSpecs map[string]proxy.PoolSpec
	// deletedPools are the pools whose deletion was asked for; memberOf,
	// the pool of every member uid ever created.
	deletedPools map[string]bool
	memberOf     map[string]string
	// claimedUIDs are the proxies that claimed a warm VM.
	claimedUIDs map[string]bool
	// rotatingCreds is the uid whose :rotateCredentials the user is
	// making: its new credentials are no violation.
	rotatingCreds string
	// stuck is how many Reconfigures to come the VM takes and never serves.
	stuck int
	// refuse makes the next Reconfigure of a running VM one its agent
	// refuses (mock.RefuseReconfigures).
	refuse bool
	// handed is the generation of the engine configuration each VM was
	// last handed (at its create, or by a Reconfigure), by providerID:
	// what the revocation invariant holds a retiring VM to.
	handed map[string]int64
	// edges counts the changes of phase the schedule made.
	edges map[reconcile.Edge]int
	// causes are the VMs the namespace's actions and specs asked for, in
	// order; owed, by uid, the replacements of VMs the world harmed that
	// no cause answers for (budget.go).
	causes []*cause
	owed   map[string]int
	// clouds are the fleets' providers beside the mock, in the order
	// they are offered a new proxy (cloud.go).
	clouds []Cloud
}

// New builds the world of a seed, with the simulated clouds clouds makes
// beside the mock (internal/clouds/cloudsdev's; none: the mock alone).
func New(seed uint64, bug Bug, clouds []NewCloud) *World {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	w := &World{
		src:            rand.NewPCG(seed, seed^0x9e3779b97f4a7c15),
		shared:         rand.New(rand.NewPCG(seed, 23)),
		revocations:    rand.New(rand.NewPCG(seed, 31)),
		budget:         rand.New(rand.NewPCG(seed, 37)),
		money:          rand.New(rand.NewPCG(seed, 47)),
		costs:          simCosts(),
		bug:            bug,
		clock:          clock.NewFake(start),
		faults:         true,
		uids:           map[string][]string{},
		obsGen:         map[string]int64{},
		actor:          map[string]*inv{},
		staticEndpoint: map[string]string{},
		credentials:    map[string]proxy.Credentials{},
		poolSpecs:      map[string]proxy.PoolSpec{},
		deletedPools:   map[string]bool{},
		memberOf:       map[string]string{},
		claimedUIDs:    map[string]bool{},
		handed:         map[string]int64{},
		edges:          map[reconcile.Edge]int{},
		owed:           map[string]int{},
	}
	w.rng = rand.New(w.src)
	// Member uids (and so names, which order the members) are drawn from
	// the seed, so a schedule replays.
	uuid.SetRand(seeded{rand.New(rand.NewPCG(seed, 29))})
	w.store = storefake.New(w.clock)
	ns := rules.NewNamespace(namespace, nil, limits.Quota, limits.Quota, start)
	if w.money.IntN(budgetedOneIn) == 0 {
		w.budgeted = true
		w.stats.Budgeted++
		ns.Budget = simBudget()
	}
	if _, err := w.store.CreateNamespace(context.Background(), ns); err != nil {
		panic(err)
	}
	w.mock = mock.New(mock.Options{Clock: w.clock, ProvisioningDelay: time.Duration(5+w.rng.IntN(60)) * time.Second, CallHome: w.callHome,
		ReconfigureDelay: time.Duration(1+w.shared.IntN(20)) * time.Second})
	w.other = w.mock.InDeployment("other")
	provs := simProviders{p: &simProvider{w: w}, clouds: map[string]simFixed{}}
	for _, mk := range clouds {
		c := mk(Env{Seed: seed, Now: w.clock.Now})
		w.clouds = append(w.clouds, c)
		w.stats.Clouds = append(w.stats.Clouds, CloudStats{Type: c.Type()})
		provs.clouds[c.Type()] = simFixed{&simProvider{w: w, cloud: c}}
	}
	log := slog.New(slog.DiscardHandler)
	st := &simStore{w: w}
	q := &simQueue{w: w}
	w.rec = reconcile.New(st, provs, q, nil, &simClock{w: w}, log,
		reconcile.Options{Rand: rand.New(rand.NewPCG(seed, 7)), Holders: rand.New(rand.NewPCG(seed, 53)), BootTimeout: bootTimeout, MaxBootFailures: maxBootFailures,
			ReconfigureTimeout: reconfigureTimeout, Bootstrap: bootstrapConfig, CreatesPerHour: createsPerHour, Costs: w.costs})
	w.pools = pools.New(st, &simClock{w: w}, log)
	grace := gracePeriod
	if bug == NoGracePeriod {
		grace = time.Nanosecond
	}
	opts := gc.Options{GracePeriod: grace, Parallelism: 1}
	if bug == NoDeleteGuard {
		opts.MaxDeletes, opts.AllowEmptyDatabase = 1<<30, true
	}
	w.col = gc.New(provs, st, q, &simClock{w: w}, log, opts)
	opts.AllowEmptyDatabase = true
	w.operator = gc.New(provs, st, q, &simClock{w: w}, log, opts)
	w.nextGC = start.Add(gcInterval)
	w.store.Watch(w.changed)
	w.addPools()
	return w
}
