package rules_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// TestLiveReplaces: a live change makes a new VM exactly when the proxy
// has a VM, made or being made, that cannot take it in place: the same
// rule the reconciler replaces by (its provider cannot reconfigure, or the
// spec brings its own cloud-init).
func TestLiveReplaces(t *testing.T) {
	reconfigures := func(typ string) bool { return typ == "gcp" }
	withVM := proxy.Status{Phase: proxy.PhaseReady, ProviderID: "vm-1"}
	cases := map[string]struct {
		reason  string
		spec    proxy.Spec
		status  proxy.Status
		pending string
		inPlace func(string) bool
		want    bool
	}{
		"InPlace":          {reason: "a provider that reconfigures, the default bootstrap", spec: proxy.Spec{Provider: "gcp"}, status: withVM},
		"NoReconfigure":    {reason: "a provider that cannot reconfigure", spec: proxy.Spec{Provider: "other"}, status: withVM, want: true},
		"OwnCloudInit":     {reason: "the spec's own cloud-init", spec: proxy.Spec{Provider: "gcp", CloudInit: "#cloud-config\n"}, status: withVM, want: true},
		"OwnSecret":        {reason: "the spec's own cloud-init, from a secret", spec: proxy.Spec{Provider: "gcp", CloudInitSecret: "projects/p/secrets/s/versions/1"}, status: withVM, want: true},
		"NoVMYet":          {reason: "Pending: the VM to come takes the change", spec: proxy.Spec{Provider: "other"}, status: proxy.Status{Phase: proxy.PhasePending}},
		"CreatePending":    {reason: "a create decided: its VM has the old generation", spec: proxy.Spec{Provider: "other"}, status: proxy.Status{Phase: proxy.PhaseCreating}, pending: "proxy-1", want: true},
		"BeingReplaced":    {reason: "the VM going anyway: its successor takes the change", spec: proxy.Spec{Provider: "other"}, status: proxy.Status{Phase: proxy.PhaseReplacing, ProviderID: "vm-1"}},
		"NoProviderAnswer": {reason: "no rule given: in place", spec: proxy.Spec{Provider: "other"}, status: withVM},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := reconfigures
			if name == "NoProviderAnswer" {
				in = nil
			}
			p := &proxy.Proxy{Spec: tc.spec, Status: tc.status, Reconciler: proxy.Bookkeeping{CreatePending: tc.pending}}
			if got := rules.LiveReplaces(p, in); got != tc.want {
				t.Errorf("%s: LiveReplaces = %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}

// TestCountClaim: a namespace's claims of a pool are logged within the
// hour, bounded by the pool's claimsPerNamespacePerHour when it has one;
// other pools' logs older than an hour go.
func TestCountClaim(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	pool := &proxy.Pool{Name: "warm", Spec: proxy.PoolSpec{ClaimsPerNamespacePerHour: 2}}
	n := &tenancy.Namespace{Name: "team-a", PoolClaims: map[string][]time.Time{"warm": {at.Add(-70 * time.Minute), at.Add(-30 * time.Minute)}, "old": {at.Add(-2 * time.Hour)}}}
	if _, err := rules.CountClaim(n, pool, at); err != nil {
		t.Fatalf("a second claim within the hour of a bound of 2: %v", err)
	}
	if diff := cmp.Diff(map[string][]time.Time{"warm": {at.Add(-30 * time.Minute), at}}, n.PoolClaims); diff != "" {
		t.Errorf("the log after the claim (-want +got):\n%s", diff)
	}
	_, err := rules.CountClaim(n, pool, at.Add(time.Minute))
	var retry *proxy.RetryError
	if !errors.Is(err, proxy.ErrPoolClaimsPerHour) || !errors.As(err, &retry) || !retry.At.Equal(at.Add(30*time.Minute)) {
		t.Errorf("a third claim within the hour: %v, want a RetryError at %s", err, at.Add(30*time.Minute))
	}
	if _, err := rules.CountClaim(n, &proxy.Pool{Name: "warm"}, at.Add(time.Minute)); err != nil {
		t.Errorf("the same claim from a pool without a bound: %v", err)
	}
}
