package gcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/tenancy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

const (
	lifecycleProject = "demo-lifecycle"
	lifecycleUID     = "9d2a7c41-5b3e-4f60-8a1d-2c4e6f8a0b1c"
)

// lifecycle is the real reconciler driving the real gcp provider over the
// Compute fake: what a proxy's document ends as when Compute misbehaves.
type lifecycle struct {
	t     *testing.T
	fake  *computefake.Server
	clock *clock.Fake
	store *storefake.Store
	r     *reconcile.Reconciler
	key   proxy.Key
}

type gcpProviders struct{ p provider.Provider }

func (g gcpProviders) Get(context.Context, string) (provider.Provider, error) { return g.p, nil }

// Account is the one project's provider for the default account, and
// knows no other.
func (g gcpProviders) Account(_ context.Context, _, id string) (provider.Provider, error) {
	if id != "" {
		return nil, provider.ErrNoAccount
	}
	return g.p, nil
}

type noQueue struct{}

func (noQueue) Publish(context.Context, proxy.ReconcileMessage) error { return nil }

func newLifecycle(t *testing.T, placement proxy.Placement, policy proxy.IPPolicy) *lifecycle {
	t.Helper()
	fake := computefake.New()
	t.Cleanup(fake.Close)
	clients, err := gcp.NewClients(context.Background(), option.WithEndpoint(fake.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clients.Close() })
	p, err := gcp.New(clients, gcp.Config{Project: lifecycleProject})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Now())
	l := &lifecycle{t: t, fake: fake, clock: clk, store: storefake.New(clk), key: proxy.Key{Namespace: "team-g", Name: "partner"}}
	l.r = reconcile.New(l.store, gcpProviders{p}, noQueue{}, nil, clk, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(1, 1))})
	if _, err := l.store.Create(context.Background(), &proxy.Proxy{
		Namespace: l.key.Namespace, Name: l.key.Name, UID: lifecycleUID, Generation: 1,
		Spec:   proxy.Spec{Provider: gcp.Type, Placement: placement, Port: 3128, AllowedSourceRanges: []string{"203.0.113.0/24"}, IPPolicy: policy},
		Status: proxy.Status{Phase: proxy.PhasePending}, CreateTime: clk.Now(),
	}, 20); err != nil {
		t.Fatal(err)
	}
	return l
}

// run is one reconcile, for an event or a request.
func (l *lifecycle) run(reason proxy.Reason) {
	l.t.Helper()
	if err := l.r.Reconcile(context.Background(), l.key, reconcile.Trigger{Reason: reason}); err != nil {
		l.t.Fatal(err)
	}
}

// settle lets Compute finish what it was asked, and the sweep look.
func (l *lifecycle) settle() {
	l.t.Helper()
	l.fake.Settle()
	l.clock.Advance(3 * time.Minute)
	l.run(proxy.ReasonSweep)
}

func (l *lifecycle) doc() *proxy.Proxy {
	l.t.Helper()
	p, err := l.store.Get(context.Background(), l.key)
	if err != nil {
		l.t.Fatal(err)
	}
	return p
}

// instances are the VMs the fake holds, as zone/name.
func (l *lifecycle) instances() []string {
	l.t.Helper()
	var out []string
	for _, in := range l.fake.Inserts() {
		out = append(out, in.Zone+"/"+in.Instance.GetName())
	}
	return out
}

// end is what a case checks: where the document ended, and what the fake
// was asked.
type end struct {
	Phase   proxy.Phase
	Zone    string
	Inserts int
	// Message is a part of the status message or the Ready condition's.
	Message string
}

func (l *lifecycle) end(want end) end {
	p := l.doc()
	got := end{Phase: p.Status.Phase, Zone: p.Status.Zone, Inserts: len(l.fake.Inserts())}
	all := p.Status.Message
	for _, c := range p.Status.Conditions {
		all += " | " + c.Message
	}
	if strings.Contains(all, want.Message) {
		got.Message = want.Message
	} else {
		got.Message = all
	}
	return got
}

// TestCreateFailuresEndWhereTheyShould drives a proxy through each way a
// create fails on Compute, and checks where it ends: retried, moved to
// another zone, or Failed with Compute's own message.
func TestCreateFailuresEndWhereTheyShould(t *testing.T) {
	region := proxy.Placement{Region: "us-central1"}
	first, _ := provider.ChooseZone(lifecycleUID, []string{"us-central1-a", "us-central1-b", "us-central1-c"}, nil)
	second, _ := provider.ChooseZone(lifecycleUID, []string{"us-central1-a", "us-central1-b", "us-central1-c"}, []string{first})
	cases := map[string]struct {
		reason    string
		placement proxy.Placement
		play      func(l *lifecycle)
		want      end
	}{
		"StockoutMovesToAnotherZone": {
			reason:    "the insert is accepted and its operation ends ZONE_RESOURCE_POOL_EXHAUSTED: the next attempt goes to the next zone of the region",
			placement: region,
			play: func(l *lifecycle) {
				l.fake.FailEveryInsert(first, computefake.Stockout(lifecycleProject, first))
				l.run(proxy.ReasonWritten)
				l.settle() // the operation fails; the sweep's run moves on
				l.settle() // the second zone's VM runs; the sweep sees it
			},
			want: end{Phase: proxy.PhaseReady, Zone: second, Inserts: 2, Message: "Out of capacity: " + first},
		},
		"EveryZoneFullRetries": {
			reason:    "when every zone of the region is full, the proxy backs off and starts over, saying so",
			placement: region,
			play: func(l *lifecycle) {
				for _, z := range []string{"us-central1-a", "us-central1-b", "us-central1-c"} {
					l.fake.FailEveryInsert(z, computefake.Stockout(lifecycleProject, z))
				}
				l.run(proxy.ReasonWritten)
				for range 3 {
					l.settle()
				}
			},
			want: end{Phase: proxy.PhaseCreating, Inserts: 3, Message: "every zone of region us-central1 was out of capacity"},
		},
		"PinnedZoneStockoutWaits": {
			reason:    "a spec that names its zone gets no other: the create is retried there after a backoff, and succeeds once there is room",
			placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-f"},
			play: func(l *lifecycle) {
				l.fake.FailInserts("us-central1-f", 1, computefake.Stockout(lifecycleProject, "us-central1-f"))
				l.run(proxy.ReasonWritten)
				l.settle() // the operation fails: wait for the sweep
				l.settle() // the sweep retries in the same zone
				l.settle() // the VM runs; the sweep sees it
			},
			want: end{Phase: proxy.PhaseReady, Zone: "us-central1-f", Inserts: 2},
		},
		"QuotaBacksOffAndSaysWhy": {
			reason:    "a quota that ends the operation is retried minutes later, with the quota's message in the status meanwhile",
			placement: region,
			play: func(l *lifecycle) {
				l.fake.FailInserts("", 1, computefake.QuotaExceeded("CPUS", "us-central1", 8))
				l.run(proxy.ReasonWritten)
				l.fake.Settle()
				l.run(proxy.ReasonSweep)
				if p := l.doc(); p.Status.Phase != proxy.PhaseCreating || !strings.Contains(p.Status.Message, "Quota 'CPUS' exceeded") {
					l.t.Fatalf("after the quota: %s %q, want Creating with the quota's message", p.Status.Phase, p.Status.Message)
				}
				// Its own write's event must not retry at once.
				l.run(proxy.ReasonWritten)
				if n := len(l.fake.Inserts()); n != 1 {
					l.t.Fatalf("%d inserts right after the quota, want 1: the retry waits", n)
				}
				l.settle()
				l.settle()
			},
			want: end{Phase: proxy.PhaseReady, Zone: first, Inserts: 2},
		},
		"MissingImageInTheAnswerFails": {
			reason:    "an insert answered 404 (an image that does not exist) can never succeed: Failed, with Compute's message, and no retry",
			placement: region,
			play: func(l *lifecycle) {
				l.fake.Fail("insert", 1, computefake.Fault{Code: 404, Reason: "notFound", Message: "The resource 'projects/debian-cloud/global/images/family/debian-99' was not found"})
				l.run(proxy.ReasonWritten)
				l.settle()
			},
			want: end{Phase: proxy.PhaseFailed, Inserts: 1, Message: "images/family/debian-99' was not found"},
		},
		"BadImageInTheOperationFails": {
			reason:    "a create that fails in its operation for a reason no retry mends is Failed with the operation's message",
			placement: region,
			play: func(l *lifecycle) {
				l.fake.FailInserts("", 1, computefake.OperationError{Code: "RESOURCE_NOT_FOUND", Message: "The resource 'projects/debian-cloud/global/images/debian-12-bad' was not found"})
				l.run(proxy.ReasonWritten)
				l.settle()
			},
			want: end{Phase: proxy.PhaseFailed, Inserts: 1, Message: "images/debian-12-bad' was not found (RESOURCE_NOT_FOUND)"},
		},
		"ReplacementWithinTheDeduplicationWindow": {
			reason:    "a VM lost minutes after its create is replaced by an insert Compute does not ignore: a new request id, a new VM",
			placement: region,
			play: func(l *lifecycle) {
				l.run(proxy.ReasonWritten)
				l.settle()
				// Someone deletes the VM by hand; the fake's clock, which
				// measures the request-id window, has not moved an hour.
				p := l.doc()
				if p.Status.Phase != proxy.PhaseReady {
					l.t.Fatalf("setting up: %s, want Ready", p.Status.Phase)
				}
				deleteByHand(l, first, provider.NameFromUID(lifecycleUID))
				l.run(proxy.ReasonDrift)
				l.settle()
				ins := l.fake.Inserts()
				if len(ins) != 2 || ins[0].RequestID == ins[1].RequestID {
					l.t.Fatalf("inserts %d with request ids %q: want 2 with ids of their own", len(ins), requestIDs(ins))
				}
			},
			want: end{Phase: proxy.PhaseReady, Zone: first, Inserts: 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLifecycle(t, tc.placement, proxy.IPEphemeral)
			tc.play(l)
			if diff := cmp.Diff(tc.want, l.end(tc.want)); diff != "" {
				t.Errorf("%s\nend (-want +got):\n%s\ninserts: %v", tc.reason, diff, l.instances())
			}
		})
	}
}

// TestStaticAddressOutlivesItsVMs: a Static proxy keeps its address when
// its VM is lost and replaced, and its deletion deletes the VM, then the
// address, leaving nothing in Compute.
func TestStaticAddressOutlivesItsVMs(t *testing.T) {
	l := newLifecycle(t, proxy.Placement{Region: "us-central1", Zone: "us-central1-b"}, proxy.IPStatic)
	name := provider.NameFromUID(lifecycleUID)
	l.run(proxy.ReasonWritten)
	l.settle()
	first := l.doc()
	if first.Status.Phase != proxy.PhaseReady || !strings.HasPrefix(first.Status.IP, "203.0.113.") {
		t.Fatalf("first VM: %s at %q, want Ready on a reserved address", first.Status.Phase, first.Status.IP)
	}
	deleteByHand(l, "us-central1-b", name)
	l.run(proxy.ReasonDrift)
	l.settle()
	second := l.doc()
	if second.Status.Phase != proxy.PhaseReady || second.Status.Endpoint != first.Status.Endpoint || second.Reconciler.Replacements != 1 {
		t.Fatalf("after the VM was lost: %s at %s after %d replacements, want Ready at %s after 1",
			second.Status.Phase, second.Status.Endpoint, second.Reconciler.Replacements, first.Status.Endpoint)
	}
	if _, err := l.store.RequestDeletion(context.Background(), l.key, l.clock.Now()); err != nil {
		t.Fatal(err)
	}
	l.run(proxy.ReasonWritten) // deletes the VM, which is on its way out
	l.fake.Settle()
	l.run(proxy.ReasonSweep) // the VM is gone: the address, then the document
	l.fake.Settle()
	if _, err := l.store.Get(context.Background(), l.key); err == nil {
		t.Error("the document remains after its VM and address are gone")
	}
	c := fakeCompute(t, l.fake)
	if _, err := c.Addresses.Get(context.Background(), &computepb.GetAddressRequest{Project: lifecycleProject, Region: "us-central1", Address: name}); provider.KindOf(wrapNotFound(err)) != provider.KindNotFound {
		t.Errorf("the address is still there after the proxy's deletion: %v", err)
	}
}

func deleteByHand(l *lifecycle, zone, name string) {
	l.t.Helper()
	c := fakeCompute(l.t, l.fake)
	if _, err := c.Instances.Delete(context.Background(), &computepb.DeleteInstanceRequest{Project: lifecycleProject, Zone: zone, Instance: name}); err != nil {
		l.t.Fatal(err)
	}
	l.fake.Settle()
}

func fakeCompute(t *testing.T, fake *computefake.Server) gcp.Clients {
	t.Helper()
	c, err := gcp.NewClients(context.Background(), option.WithEndpoint(fake.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wrapNotFound classifies a raw client error as the provider does.
func wrapNotFound(err error) error {
	if err != nil && strings.Contains(err.Error(), "404") {
		return provider.ErrNotFound
	}
	return err
}

func requestIDs(ins []computefake.Insert) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.RequestID)
	}
	return out
}

// TestLiveChangeOnCompute drives a PATCH of a Ready proxy through the
// reconciler, the gcp provider and the Compute fake: the VM is handed the
// new generation with one setMetadata (the same VM, no insert), the proxy
// is Reconfiguring, keeps its endpoint, and is Ready again, at the new
// generation, only once the VM's egress/ready says it serves it.
func TestLiveChangeOnCompute(t *testing.T) {
	l := newLifecycle(t, proxy.Placement{Region: "us-central1", Zone: "us-central1-b"}, proxy.IPEphemeral)
	l.r = reconcile.New(l.store, gcpProviders{l.provider(t)}, noQueue{}, nil, l.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(1, 1)), Bootstrap: renderBootstrap})
	ctx := context.Background()
	l.run(proxy.ReasonWritten)
	l.fake.Settle()
	name := l.fake.Inserts()[0].Instance.GetName()
	l.fake.SetGuestAttribute("us-central1-b", name, "egress/ready", "1")
	l.run(proxy.ReasonReady)
	ready := l.doc()
	if ready.Status.Phase != proxy.PhaseReady || ready.Status.ObservedGeneration != 1 {
		t.Fatalf("before the change: %s at generation %d, want Ready at 1", ready.Status.Phase, ready.Status.ObservedGeneration)
	}

	if _, err := l.store.UpdateSpec(ctx, l.key, l.clock.Now(), tenancy.Limits{}, func(s proxy.Spec) (proxy.Spec, error) {
		s.AllowedSourceRanges = []string{"198.51.100.0/24"}
		return s, nil
	}); err != nil {
		t.Fatal(err)
	}
	l.run(proxy.ReasonWritten)
	l.run(proxy.ReasonReady) // a call-home before the VM applied it
	during := l.doc()
	l.fake.SetGuestAttribute("us-central1-b", name, "egress/ready", "2")
	l.run(proxy.ReasonReady)
	after := l.doc()

	var sent vmconfig.Config
	calls := l.fake.SetMetadataCalls()
	if len(calls) == 1 {
		for _, it := range calls[0].GetItems() {
			if it.GetKey() == "egress-config" {
				if err := json.Unmarshal([]byte(it.GetValue()), &sent); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	type state struct {
		During, After      proxy.Phase
		Endpoint           string
		Observed           int64
		Inserts, SetMeta   int
		SentGeneration     int64
		SentHasTheNewRange bool
		SetLabels          int
	}
	got := state{during.Status.Phase, after.Status.Phase, after.Status.Endpoint, after.Status.ObservedGeneration,
		len(l.fake.Inserts()), len(calls), sent.Generation, slices.Contains(sent.AllowedSourceRanges, "198.51.100.0/24"), len(l.fake.SetLabelsCalls())}
	want := state{proxy.PhaseReconfiguring, proxy.PhaseReady, ready.Status.Endpoint, 2, 1, 1, 2, true, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a PATCH on Compute (-want +got):\n%s", diff)
	}
}

// provider is a gcp provider over the lifecycle's fake.
func (l *lifecycle) provider(t *testing.T) provider.Provider {
	t.Helper()
	clients, err := gcp.NewClients(context.Background(), option.WithEndpoint(l.fake.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clients.Close() })
	p, err := gcp.New(clients, gcp.Config{Project: lifecycleProject})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIPv6InStatus: on a dual-stack deployment (GCP_STACK_TYPE=IPV4_IPV6)
// the proxy's status shows its VM's external IPv6 address beside its IP
// once Ready, and the /96 it heads as status.ipv6Prefix, and the new VM's
// after a replacement (none while it is replaced); the endpoint stays the
// IPv4 address's.
func TestIPv6InStatus(t *testing.T) {
	l := newLifecycle(t, proxy.Placement{Region: "us-central1", Zone: "us-central1-b"}, proxy.IPEphemeral)
	clients := fakeCompute(t, l.fake)
	p, err := gcp.New(clients, gcp.Config{Project: lifecycleProject, Subnetwork: "proxies", StackType: gcp.StackDual})
	if err != nil {
		t.Fatal(err)
	}
	l.fake.SetDualStack("us-central1", "proxies")
	l.r = reconcile.New(l.store, gcpProviders{p}, noQueue{}, nil, l.clock, slog.New(slog.DiscardHandler), reconcile.Options{Rand: rand.New(rand.NewPCG(1, 1))})
	type seen struct {
		Phase                      proxy.Phase
		Endpoint, IPv6, IPv6Prefix string
	}
	look := func() seen {
		d := l.doc()
		return seen{d.Status.Phase, d.Status.Endpoint, d.Status.IPv6, d.Status.IPv6Prefix}
	}
	l.run(proxy.ReasonWritten)
	during := look()
	l.settle()
	first := look()
	deleteByHand(l, "us-central1-b", provider.NameFromUID(lifecycleUID))
	l.run(proxy.ReasonDrift)
	replacing := look()
	l.settle()
	second := look()
	got := []seen{during, first, replacing, second}
	want := []seen{
		{Phase: proxy.PhaseProvisioning},
		{Phase: proxy.PhaseReady, Endpoint: "198.51.100.1:3128", IPv6: "2001:db8:4000:1::", IPv6Prefix: "2001:db8:4000:1::/96"},
		{Phase: proxy.PhaseProvisioning},
		{Phase: proxy.PhaseReady, Endpoint: "198.51.100.2:3128", IPv6: "2001:db8:4000:2::", IPv6Prefix: "2001:db8:4000:2::/96"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status through a replacement, created, Ready, replaced, Ready (-want +got):\n%s", diff)
	}
}

// TestRefusalOnComputeSaidAtOnce: a VM whose agent refuses the generation
// a PATCH brought (egress/ready still 1, egress/error naming generation 2)
// is read by Get as a boot error is, and the run of its call-home says so
// in the proxy's status and replaces it, with no time passing: not after
// RECONFIGURE_TIMEOUT, as when the refusal went unread.
func TestRefusalOnComputeSaidAtOnce(t *testing.T) {
	l := newLifecycle(t, proxy.Placement{Region: "us-central1", Zone: "us-central1-b"}, proxy.IPEphemeral)
	l.r = reconcile.New(l.store, gcpProviders{l.provider(t)}, noQueue{}, nil, l.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(1, 1)), Bootstrap: renderBootstrap})
	l.run(proxy.ReasonWritten)
	l.fake.Settle()
	name := l.fake.Inserts()[0].Instance.GetName()
	l.fake.SetGuestAttribute("us-central1-b", name, "egress/ready", "1")
	l.run(proxy.ReasonReady)
	if _, err := l.store.RotateCredentials(context.Background(), l.key, l.clock.Now(), tenancy.Limits{}); err != nil {
		t.Fatal(err)
	}
	l.run(proxy.ReasonWritten)
	// The agent tries generation 2, refuses it, keeps serving 1, and calls
	// home boot-failed.
	l.fake.SetGuestAttribute("us-central1-b", name, "egress/error", "generation 2: the self-test's CONNECT to www.google.com:443 got 403; the configuration served before is served still")
	l.run(proxy.ReasonBootFailed)
	p := l.doc()
	reason := ""
	for _, c := range p.Status.Conditions {
		if c.Type == proxy.ConditionReady {
			reason = c.Reason
		}
	}
	got := []any{p.Status.Phase, reason, p.Reconciler.Replacements, strings.Contains(p.Status.Message+" "+conditionMessage(p), "could not serve generation 2")}
	if diff := cmp.Diff([]any{proxy.PhaseReplacing, "ConfigurationRefused", int64(1), true}, got); diff != "" {
		t.Errorf("[phase, Ready reason, replacements, says why] right after the refusal's call-home (-want +got):\n%s", diff)
	}
}

func conditionMessage(p *proxy.Proxy) string {
	for _, c := range p.Status.Conditions {
		if c.Type == proxy.ConditionReady {
			return c.Message
		}
	}
	return ""
}

// renderBootstrap renders a proxy's default bootstrap as the composition
// root does: the startup script and the engine's configuration.
func renderBootstrap(s proxy.Spec, c proxy.Credentials, g int64) (string, *vmconfig.Config, error) {
	cfg := bootstrap.ForProxy(s, c, nil)
	cfg.Generation = g
	script, err := bootstrap.Render(cfg)
	if err != nil {
		return "", nil, err
	}
	engine, err := bootstrap.EngineConfig(cfg)
	return script, &engine, err
}
