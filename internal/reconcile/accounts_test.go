package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/storefake"
)

// quotaMock is a mock whose cloud reports its regional quotas
// (provider.QuotaReader), and counts the reads.
type quotaMock struct {
	*mock.Provider
	quotas provider.Quotas
	reads  *int
}

func (q quotaMock) Quotas(context.Context, string) (provider.Quotas, error) {
	*q.reads++
	return q.quotas, nil
}

// accountProviders hands out one mock per account, each its own cloud.
type accountProviders map[string]provider.Provider

func (a accountProviders) Get(ctx context.Context, typ string) (provider.Provider, error) {
	return a.Account(ctx, typ, "")
}

func (a accountProviders) Account(_ context.Context, typ, id string) (provider.Provider, error) {
	p, ok := a[id]
	if typ != mock.Type || !ok {
		return nil, errors.New("no provider " + typ + " in account " + id)
	}
	return p, nil
}

// instances counts each account's VMs.
func (a accountProviders) instances(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for id, p := range a {
		list, err := p.ListByTag(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			out[id] = len(list)
		}
	}
	return out
}

// TestPlacement: a new proxy's VM goes to an account with headroom,
// recorded in status.account with the intent to create, and every later
// call about it (its deletion) goes to that account; with no account with
// room the proxy waits, Creating, saying why, and nothing is created.
func TestPlacement(t *testing.T) {
	full := provider.Quotas{Instances: provider.Quota{Limit: 4, Usage: 4}}
	roomy := provider.Quotas{Instances: provider.Quota{Limit: 4, Usage: 0}}
	cases := map[string]struct {
		reason string
		// defaultQuotas are the default account's cloud's; nil: it reads
		// none.
		defaultQuotas *provider.Quotas
		accounts      []account.Account
		// placed is how many proxies already sit in account "second".
		placed      int
		noAccounts  bool
		wantAccount string
		wantPhase   proxy.Phase
		wantReason  string
		wantVMs     map[string]int
		wantReads   int
	}{
		"NoAccountsOption": {reason: "a reconciler without accounts places in the default", noAccounts: true, defaultQuotas: &full,
			wantPhase: proxy.PhaseProvisioning, wantReason: "Provisioning", wantVMs: map[string]int{"": 1}},
		"NoDocuments": {reason: "no account document: the default, and no quota is read", defaultQuotas: &roomy,
			wantPhase: proxy.PhaseProvisioning, wantReason: "Provisioning", wantVMs: map[string]int{"": 1}},
		"OtherTypeOrRegion": {reason: "accounts of another type or region are no candidates", defaultQuotas: &roomy,
			accounts:  []account.Account{{ID: "second", Provider: "gcp", State: account.Active}, {ID: "third", Provider: mock.Type, Regions: []string{"europe-west1"}, State: account.Active}},
			wantPhase: proxy.PhaseProvisioning, wantReason: "Provisioning", wantVMs: map[string]int{"": 1}},
		"DefaultFull": {reason: "the default's quota is used up: the active account with room takes it", defaultQuotas: &full,
			accounts:    []account.Account{{ID: "second", Provider: mock.Type, Regions: []string{"us-central1"}, Limits: account.Limits{InstancesPerRegion: 2}, State: account.Active}},
			wantAccount: "second", wantPhase: proxy.PhaseProvisioning, wantReason: "Provisioning", wantVMs: map[string]int{"second": 1}, wantReads: 1},
		"Draining": {reason: "a draining account takes no new proxy", defaultQuotas: &full,
			accounts:  []account.Account{{ID: "second", Provider: mock.Type, State: account.Draining}},
			wantPhase: proxy.PhaseProvisioning, wantReason: "Provisioning", wantVMs: map[string]int{"": 1}},
		"NoHeadroom": {reason: "every account full: the proxy waits, saying why, and no VM is made", defaultQuotas: &full, placed: 2,
			accounts:  []account.Account{{ID: "second", Provider: mock.Type, Limits: account.Limits{InstancesPerRegion: 2}, State: account.Active}},
			wantPhase: proxy.PhaseCreating, wantReason: "NoAccountHeadroom", wantVMs: map[string]int{}, wantReads: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(start)
			st := storefake.New(clk)
			reads := 0
			mk := func() *mock.Provider { return mock.New(mock.Options{Clock: clk, ProvisioningDelay: boot}) }
			provs := accountProviders{"second": mk(), "third": mk()}
			provs[""] = mk()
			if tc.defaultQuotas != nil {
				provs[""] = quotaMock{Provider: provs[""].(*mock.Provider), quotas: *tc.defaultQuotas, reads: &reads}
			}
			for _, a := range tc.accounts {
				if _, err := st.PutAccount(ctx, a, start); err != nil {
					t.Fatal(err)
				}
			}
			for i := range tc.placed {
				p := &proxy.Proxy{Namespace: "team-b", Name: "placed-" + string(rune('a'+i)), UID: "placed", Spec: proxy.Spec{Provider: mock.Type, Placement: proxy.Placement{Region: "us-central1"}}}
				made, err := st.Create(ctx, p, 20)
				if err != nil {
					t.Fatal(err)
				}
				made.Status.Account = "second"
				if _, err := st.UpdateStatus(ctx, made); err != nil {
					t.Fatal(err)
				}
			}
			opts := reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2))}
			if !tc.noAccounts {
				opts.Accounts = st
			}
			r := reconcile.New(st, provs, &queue{}, nil, clk, slog.New(slog.DiscardHandler), opts)
			key := proxy.Key{Namespace: "team-a", Name: "egress-1"}
			if _, err := st.Create(ctx, &proxy.Proxy{Namespace: key.Namespace, Name: key.Name, UID: uid, Generation: 1,
				Spec:   proxy.Spec{Provider: mock.Type, Port: proxy.DefaultPort, Placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-a"}},
				Status: proxy.Status{Phase: proxy.PhasePending}}, 20); err != nil {
				t.Fatal(err)
			}
			if err := r.Reconcile(ctx, key, reconcile.Trigger{}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			got, err := st.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			type outcome struct {
				Account string
				Phase   proxy.Phase
				Reason  string
				VMs     map[string]int
				Reads   int
			}
			want := outcome{tc.wantAccount, tc.wantPhase, tc.wantReason, tc.wantVMs, tc.wantReads}
			if diff := cmp.Diff(want, outcome{got.Status.Account, got.Status.Phase, readyReason(got), provs.instances(t), reads}); diff != "" {
				t.Errorf("%s\noutcome (-want +got):\n%s", tc.reason, diff)
			}
			if tc.wantPhase != proxy.PhaseProvisioning {
				if got.Reconciler.NotBefore.IsZero() {
					t.Errorf("a proxy with no account with room has no time to retry at")
				}
				return
			}
			// Its deletion goes to the VM's account.
			if _, err := st.RequestDeletion(ctx, key, clk.Now()); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				if err := r.Reconcile(ctx, key, reconcile.Trigger{}); err != nil {
					t.Fatalf("Reconcile of the deletion: %v", err)
				}
				if _, err := st.Get(ctx, key); errors.Is(err, proxy.ErrNotFound) {
					break
				}
				clk.Advance(time.Minute)
			}
			if _, err := st.Get(ctx, key); !errors.Is(err, proxy.ErrNotFound) {
				t.Errorf("the document is still there after its deletion's runs: %v", err)
			}
			if diff := cmp.Diff(map[string]int{}, provs.instances(t)); diff != "" {
				t.Errorf("VMs left after the deletion (-want +got):\n%s", diff)
			}
		})
	}
}

// readyReason is the reason of the document's Ready condition.
func readyReason(p *proxy.Proxy) string {
	for _, c := range p.Status.Conditions {
		if c.Type == proxy.ConditionReady {
			return c.Reason
		}
	}
	return ""
}

// TestPlacementReadsQuotasOncePerTTL: placement reads each account's
// quotas once within Options.QuotaTTL for the proxies it places, not once
// a proxy, and counts the proxies it placed since against them, so an
// account with room for 3 more VMs takes 3 of a burst and no more; past
// the TTL it reads them again.
func TestPlacementReadsQuotasOncePerTTL(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(start)
	st := storefake.New(clk)
	reads := map[string]*int{"": new(int), "second": new(int)}
	mk := func() *mock.Provider { return mock.New(mock.Options{Clock: clk, ProvisioningDelay: boot}) }
	provs := accountProviders{
		"":       quotaMock{Provider: mk(), quotas: provider.Quotas{Instances: provider.Quota{Limit: 100}}, reads: reads[""]},
		"second": quotaMock{Provider: mk(), quotas: provider.Quotas{Instances: provider.Quota{Limit: 10, Usage: 7}}, reads: reads["second"]},
	}
	if _, err := st.PutAccount(ctx, account.Account{ID: "second", Provider: mock.Type, State: account.Active}, start); err != nil {
		t.Fatal(err)
	}
	r := reconcile.New(st, provs, &queue{}, nil, clk, slog.New(slog.DiscardHandler),
		reconcile.Options{Accounts: st, QuotaTTL: time.Minute, Rand: rand.New(rand.NewPCG(1, 2))})
	place := func(i int) string {
		t.Helper()
		key := proxy.Key{Namespace: "team-a", Name: fmt.Sprintf("burst-%02d", i)}
		if _, err := st.Create(ctx, &proxy.Proxy{Namespace: key.Namespace, Name: key.Name, UID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Generation: 1,
			Spec:   proxy.Spec{Provider: mock.Type, Port: proxy.DefaultPort, Placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-a"}},
			Status: proxy.Status{Phase: proxy.PhasePending}}, 100); err != nil {
			t.Fatal(err)
		}
		if err := r.Reconcile(ctx, key, reconcile.Trigger{}); err != nil {
			t.Fatalf("Reconcile %s: %v", key, err)
		}
		got, err := st.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != proxy.PhaseProvisioning {
			t.Errorf("%s: %s (%s), want Provisioning", key, got.Status.Phase, readyReason(got))
		}
		return got.Status.Account
	}
	count := func() map[string]int { return map[string]int{"": *reads[""], "second": *reads["second"]} }
	placed := map[string]int{}
	for i := range 20 {
		placed[place(i)]++
	}
	// The uids' hash puts more than 3 of the 20 in "second" when it has
	// room (9 of them); its 3 free instances take 3.
	if diff := cmp.Diff(map[string]int{"": 17, "second": 3}, placed); diff != "" {
		t.Errorf("20 proxies placed within the TTL, by account (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"": 1, "second": 1}, count()); diff != "" {
		t.Errorf("reads of the quotas within the TTL (-want +got):\n%s", diff)
	}
	// Past the TTL the quotas are read again: the cloud's count (7 of 10
	// here, as the mock answers) is the truth again.
	clk.Advance(time.Minute)
	place(20)
	if diff := cmp.Diff(map[string]int{"": 2, "second": 2}, count()); diff != "" {
		t.Errorf("reads of the quotas after the TTL (-want +got):\n%s", diff)
	}
}
