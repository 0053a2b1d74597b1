package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// The namespace's budget of VMs beyond creates and rotations: live changes
// that need a new VM, the reconciler's rotations by maxAge, and claims of
// warm VMs, each counted in the transaction that records it.

// budgetNamespace creates namespace name and a proxy in it (its first VM,
// counted at base), and returns the proxy.
func budgetNamespace(t *testing.T, s Store, name string) *proxy.Proxy {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateNamespace(ctx, rules.NewNamespace(name, map[string]tenancy.Role{alice: tenancy.Owner}, 0, 20, base)); err != nil {
		t.Fatal(err)
	}
	p, err := s.CreateInNamespace(ctx, New(name, "p-0"), func(*tenancy.Namespace) (tenancy.Limits, error) {
		return tenancy.Limits{Quota: 20, CreatesPerHour: 60}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// creations reads the namespace's log of the VMs it caused.
func creations(t *testing.T, s Store, ns string) []time.Time {
	t.Helper()
	n, err := s.GetNamespace(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return n.Creations
}

// testLiveReplacements: a live change of a proxy whose VM cannot take it
// in place (its provider cannot reconfigure) is a new VM: it is counted in
// the namespace and held to the interval between the VMs a user asks for,
// which it shares with rotations, in the transaction of the change; a
// refused one writes nothing. A proxy with no VM yet, or one whose
// provider reconfigures in place, is counted nothing.
func testLiveReplacements(t *testing.T, s Store) {
	ctx := context.Background()
	p := budgetNamespace(t, s, "team-l")
	replacing := tenancy.Limits{CreatesPerHour: 3, RotateMinInterval: 10 * time.Minute, InPlace: func(string) bool { return false }}
	inPlace := replacing
	inPlace.InPlace = func(typ string) bool { return typ == "mock" }
	ports := func(ps ...int32) func(proxy.Spec) (proxy.Spec, error) {
		return func(s proxy.Spec) (proxy.Spec, error) {
			s.ConnectPorts = ps
			return s, nil
		}
	}
	unchanged := func(what string, before *proxy.Proxy, log []time.Time) {
		t.Helper()
		after, err := s.Get(ctx, p.Key())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("%s changed the proxy (-before +after):\n%s", what, diff)
		}
		if diff := cmp.Diff(log, creations(t, s, "team-l"), cmpopts.EquateApproxTime(0)); diff != "" {
			t.Errorf("%s changed the namespace's creations (-before +after):\n%s", what, diff)
		}
	}
	at := func(d time.Duration) time.Time { return base.Add(d) }

	// Pending: the VM to come is made with the change.
	got, err := s.UpdateSpec(ctx, p.Key(), at(time.Minute), replacing, ports(443))
	if err != nil || got.Generation != 2 || got.ReplaceRequestTime != nil {
		t.Fatalf("a PATCH of a Pending proxy: generation %d, replaceRequestTime %v (%v); want 2, none", got.Generation, got.ReplaceRequestTime, err)
	}
	if diff := cmp.Diff([]time.Time{base}, creations(t, s, "team-l"), cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("a PATCH of a Pending proxy counted a VM (-want +got):\n%s", diff)
	}
	ready := *got
	ready.Status = proxy.Status{Phase: proxy.PhaseReady, ProviderID: "vm-1"}
	if ready.UpdateTime, err = s.UpdateStatus(ctx, &ready); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		reason  string
		at      time.Duration
		change  func(time.Time, tenancy.Limits) (*proxy.Proxy, error)
		limits  tenancy.Limits
		want    error
		retryAt time.Duration
		counted []time.Duration
	}{
		{reason: "a PATCH that needs a new VM is one", at: 2 * time.Minute, limits: replacing,
			change: func(now time.Time, l tenancy.Limits) (*proxy.Proxy, error) {
				return s.UpdateSpec(ctx, p.Key(), now, l, ports(8443))
			},
			counted: []time.Duration{0, 2 * time.Minute}},
		{reason: "new credentials within the interval are refused, saying when", at: 5 * time.Minute, limits: replacing,
			change: func(now time.Time, l tenancy.Limits) (*proxy.Proxy, error) {
				return s.RotateCredentials(ctx, p.Key(), now, l)
			},
			want: proxy.ErrRotatedRecently, retryAt: 12 * time.Minute, counted: []time.Duration{0, 2 * time.Minute}},
		{reason: "so is a rotation: the interval is the VMs' a user asks for", at: 6 * time.Minute, limits: replacing,
			change: func(now time.Time, l tenancy.Limits) (*proxy.Proxy, error) {
				return s.RequestRotation(ctx, p.Key(), now, l)
			},
			want: proxy.ErrRotatedRecently, retryAt: 12 * time.Minute, counted: []time.Duration{0, 2 * time.Minute}},
		{reason: "after it, new credentials that need a new VM are one", at: 12 * time.Minute, limits: replacing,
			change: func(now time.Time, l tenancy.Limits) (*proxy.Proxy, error) {
				return s.RotateCredentials(ctx, p.Key(), now, l)
			},
			counted: []time.Duration{0, 2 * time.Minute, 12 * time.Minute}},
		{reason: "past the namespace's bound, refused, saying when the oldest leaves the hour", at: 30 * time.Minute, limits: replacing,
			change: func(now time.Time, l tenancy.Limits) (*proxy.Proxy, error) {
				return s.UpdateSpec(ctx, p.Key(), now, l, ports(443))
			},
			want: proxy.ErrCreatesPerHour, retryAt: time.Hour, counted: []time.Duration{0, 2 * time.Minute, 12 * time.Minute}},
		{reason: "a PATCH its VM takes in place is counted nothing", at: 31 * time.Minute, limits: inPlace,
			change: func(now time.Time, l tenancy.Limits) (*proxy.Proxy, error) {
				return s.UpdateSpec(ctx, p.Key(), now, l, ports(443))
			},
			counted: []time.Duration{0, 2 * time.Minute, 12 * time.Minute}},
	}
	for _, st := range steps {
		before, err := s.Get(ctx, p.Key())
		if err != nil {
			t.Fatal(err)
		}
		log := creations(t, s, "team-l")
		got, err := st.change(at(st.at), st.limits)
		if st.want != nil {
			var retry *proxy.RetryError
			if !errors.Is(err, st.want) || !errors.As(err, &retry) || !retry.At.Equal(at(st.retryAt)) {
				t.Errorf("%s: %v; want %v, retry at %s", st.reason, err, st.want, at(st.retryAt))
			}
			unchanged(st.reason, before, log)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", st.reason, err)
		}
		var counts []time.Time
		for _, d := range st.counted {
			counts = append(counts, at(d))
		}
		if diff := cmp.Diff(counts, creations(t, s, "team-l"), cmpopts.EquateApproxTime(0)); diff != "" {
			t.Errorf("%s: the namespace's creations (-want +got):\n%s", st.reason, diff)
		}
		wantReplace := before.ReplaceRequestTime
		if len(st.counted) > len(log) {
			wantReplace = &[]time.Time{at(st.at)}[0]
		}
		if got.Generation != before.Generation+1 || !cmp.Equal(wantReplace, got.ReplaceRequestTime, cmpopts.EquateApproxTime(0)) {
			t.Errorf("%s: generation %d after %d, replaceRequestTime %v; want one more, %v", st.reason, got.Generation, before.Generation, got.ReplaceRequestTime, wantReplace)
		}
		if again, err := s.Get(ctx, p.Key()); err != nil || !cmp.Equal(got, again) {
			t.Errorf("%s returned what a Get does not read (%v):\n%s", st.reason, err, cmp.Diff(got, again))
		}
	}
}

// testStatusCounted: the reconciler's status write that starts a rotation
// by maxAge counts the VM in the namespace in the same transaction; past
// the bound, or over a newer document, it writes neither. A namespace
// without a document counts nothing.
func testStatusCounted(t *testing.T, s Store) {
	ctx := context.Background()
	p := budgetNamespace(t, s, "team-s")
	replacing := *p
	replacing.Status.Phase = proxy.PhaseReplacing
	ut, err := s.UpdateStatusCounted(ctx, &replacing, base.Add(10*time.Minute), 2)
	if err != nil {
		t.Fatalf("UpdateStatusCounted: %v", err)
	}
	got, err := s.Get(ctx, p.Key())
	if err != nil || got.Status.Phase != proxy.PhaseReplacing || !got.UpdateTime.Equal(ut) {
		t.Errorf("after UpdateStatusCounted: %+v (%v), want Replacing at update time %s", got, err, ut)
	}
	want := []time.Time{base, base.Add(10 * time.Minute)}
	if diff := cmp.Diff(want, creations(t, s, "team-s"), cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("the namespace's creations (-want +got):\n%s", diff)
	}
	stale := replacing
	stale.Status.Phase = proxy.PhaseReady
	if _, err := s.UpdateStatusCounted(ctx, &stale, base.Add(11*time.Minute), 5); !errors.Is(err, proxy.ErrConflict) {
		t.Errorf("UpdateStatusCounted over a newer document: %v, want ErrConflict", err)
	}
	got.Status.Phase = proxy.PhaseReady
	_, err = s.UpdateStatusCounted(ctx, got, base.Add(20*time.Minute), 2)
	var retry *proxy.RetryError
	if !errors.Is(err, proxy.ErrCreatesPerHour) || !errors.As(err, &retry) || !retry.At.Equal(base.Add(time.Hour)) {
		t.Errorf("UpdateStatusCounted past the bound: %v, want ErrCreatesPerHour, retry at %s", err, base.Add(time.Hour))
	}
	if diff := cmp.Diff(want, creations(t, s, "team-s"), cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("the refusals changed the namespace's creations (-want +got):\n%s", diff)
	}
	if after, err := s.Get(ctx, p.Key()); err != nil || after.Status.Phase != proxy.PhaseReplacing {
		t.Errorf("the refusals wrote the status: %+v (%v)", after, err)
	}
	loose, err := s.Create(ctx, New("no-document", "p"), 20)
	if err != nil {
		t.Fatal(err)
	}
	loose.Status.Phase = proxy.PhaseReady
	if _, err := s.UpdateStatusCounted(ctx, loose, base, 1); err != nil {
		t.Errorf("UpdateStatusCounted in a namespace without a document: %v, want the status written", err)
	}
}

// testClaimBounds: every claim is logged in the claiming proxy's
// namespace, in the claim's transaction; a pool's bound of claims per
// namespace refuses one more within the hour (nothing written, the member
// stays warm), and a claim that is a rotation by maxAge counts a VM
// against the namespace's bound too. An admin's PUT changes the bound.
func testClaimBounds(t *testing.T, s Pools) {
	ctx := context.Background()
	p := budgetNamespace(t, s, "team-c")
	pl := NewPool("capped", 2)
	pl.Spec.ClaimsPerNamespacePerHour = 1
	pool := PutPool(t, s, pl)
	if pool.Spec.ClaimsPerNamespacePerHour != 1 {
		t.Fatalf("a pool put with a bound of 1 claim per namespace reads %d", pool.Spec.ClaimsPerNamespacePerHour)
	}
	if _, err := s.EnsureMembers(ctx, "capped", base); err != nil {
		t.Fatal(err)
	}
	warmUp(t, s, "capped")
	q, err := s.CreateInNamespace(ctx, New("team-c", "p-1"), func(*tenancy.Namespace) (tenancy.Limits, error) { return tenancy.Limits{Quota: 20}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ClaimWarm(ctx, p, pool, base.Add(time.Minute), 0); err != nil {
		t.Fatalf("the namespace's first claim: %v", err)
	}
	ns, err := s.GetNamespace(ctx, "team-c")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]time.Time{"capped": {base.Add(time.Minute)}}, ns.PoolClaims, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("the namespace's claims (-want +got):\n%s", diff)
	}
	_, _, err = s.ClaimWarm(ctx, q, pool, base.Add(2*time.Minute), 0)
	var retry *proxy.RetryError
	if !errors.Is(err, proxy.ErrPoolClaimsPerHour) || !errors.As(err, &retry) || !retry.At.Equal(base.Add(61*time.Minute)) {
		t.Errorf("a second claim within the hour from a pool bound to 1: %v, want ErrPoolClaimsPerHour, retry at %s", err, base.Add(61*time.Minute))
	}
	if after, err := s.Get(ctx, q.Key()); err != nil || !cmp.Equal(q, after) {
		t.Errorf("the refused claim wrote the proxy (%v):\n%s", err, cmp.Diff(q, after))
	}
	members, err := s.Members(ctx, "capped")
	if err != nil {
		t.Fatal(err)
	}
	if warm := countOf(members, rules.Warm); warm != 1 {
		t.Errorf("after a claim and a refused one, %d warm members, want 1", warm)
	}
	// A rotation by maxAge, an hour on: the claim counts a VM too (the
	// first VM, at base, has left the hour).
	if _, _, err := s.ClaimWarm(ctx, q, pool, base.Add(62*time.Minute), 60); err != nil {
		t.Fatalf("a claim an hour on: %v", err)
	}
	if diff := cmp.Diff([]time.Time{base.Add(62 * time.Minute)}, creations(t, s, "team-c"), cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("a claim that counts a VM: the namespace's creations (-want +got):\n%s", diff)
	}
	unbound := pool.Spec
	unbound.ClaimsPerNamespacePerHour = 0
	put, _, err := s.PutPool(ctx, "capped", unbound, base)
	if err != nil || put.Spec.ClaimsPerNamespacePerHour != 0 || put.Generation != pool.Generation+1 {
		t.Errorf("a PUT that lifts the bound: %+v (%v), want bound 0, generation %d", put, err, pool.Generation+1)
	}
}

func countOf(ps []*proxy.Proxy, f func(*proxy.Proxy) bool) int {
	n := 0
	for _, p := range ps {
		if f(p) {
			n++
		}
	}
	return n
}
