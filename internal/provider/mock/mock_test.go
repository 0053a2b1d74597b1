package mock_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/providertest"
)

const delay = 25 * time.Second

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Target {
		clk := clock.NewFake(epoch)
		p := mock.New(mock.Options{Clock: clk, ProvisioningDelay: delay, ReconfigureDelay: time.Second})
		return providertest.Target{
			Provider: p,
			Settle:   func() { clk.Advance(delay) },
			AddUnmanaged: func(name, uid string) {
				p.AddForeign(name, map[string]string{provider.LabelManaged: "false", provider.LabelUID: uid})
			},
			Deployment: provider.DefaultDeployment,
			AddManaged: func(name, uid, deployment string) {
				labels := map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid}
				if deployment != "" {
					labels[provider.LabelDeployment] = deployment
				}
				p.AddForeign(name, labels)
			},
			UnknownID:       "mock://proxy-unknown",
			ReportBootError: func(id, reason string) { p.FailBoot(id, reason) },
		}
	})
}

func request(uid string) provider.CreateRequest {
	return provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Port: 3128}
}

func TestProvisioningDelayAndAddress(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(epoch)
	p := mock.New(mock.Options{Clock: clk, ProvisioningDelay: delay})
	id, err := p.Create(ctx, request("u1"))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(delay - time.Second)
	in, _ := p.Get(ctx, id)
	if in.State != provider.StateProvisioning || in.IP != "" {
		t.Errorf("1s before the delay: state %q ip %q, want Provisioning and no IP", in.State, in.IP)
	}
	clk.Advance(time.Second)
	in, _ = p.Get(ctx, id)
	want := provider.Instance{ID: id, IP: "192.0.2.1", State: provider.StateRunning, UID: "u1", CreatedAt: epoch, Deployment: provider.DefaultDeployment}
	if diff := cmp.Diff(want, *in); diff != "" {
		t.Errorf("at the delay (-want +got):\n%s", diff)
	}
}

func TestAddressesStayInDocumentationRanges(t *testing.T) {
	ctx := context.Background()
	p := mock.New(mock.Options{})
	got := map[string]int{}
	for i := range 800 {
		id, err := p.Create(ctx, request(fmt.Sprintf("uid-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		in, _ := p.Get(ctx, id)
		addr := netip.MustParseAddr(in.IP)
		prefix, _ := addr.Prefix(24)
		got[prefix.String()]++
	}
	// 762 hosts in the three RFC 5737 ranges, then the sequence starts again.
	want := map[string]int{"192.0.2.0/24": 254 + 38, "198.51.100.0/24": 254, "203.0.113.0/24": 254}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("addresses by /24 over 800 instances (-want +got):\n%s", diff)
	}
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	boom := provider.NewError(provider.KindTransient, "create", "", errors.New("503 backend error"))

	t.Run("FailNext", func(t *testing.T) {
		p := mock.New(mock.Options{})
		p.FailNext(mock.MethodCreate, 2, boom)
		for i := range 2 {
			if _, err := p.Create(ctx, request("u")); !errors.Is(err, boom) {
				t.Errorf("call %d: err = %v, want the injected fault", i+1, err)
			}
		}
		if n := len(p.Instances()); n != 0 {
			t.Errorf("failed Creates left %d instances, want 0", n)
		}
		if _, err := p.Create(ctx, request("u")); err != nil {
			t.Errorf("third call: %v, want success once the fault is used up", err)
		}
		if got := p.Calls(mock.MethodCreate); got != 3 {
			t.Errorf("Calls(Create) = %d, want 3", got)
		}
	})

	t.Run("FailNextAfterEffect", func(t *testing.T) {
		p := mock.New(mock.Options{})
		p.FailNextAfterEffect(mock.MethodCreate, 1, boom)
		if _, err := p.Create(ctx, request("u")); !errors.Is(err, boom) {
			t.Fatalf("err = %v, want the injected fault", err)
		}
		if n := len(p.Instances()); n != 1 {
			t.Errorf("a Create whose answer was lost left %d instances, want 1", n)
		}
	})

	t.Run("LoseAndStop", func(t *testing.T) {
		p := mock.New(mock.Options{})
		a, _ := p.Create(ctx, request("a"))
		b, _ := p.Create(ctx, request("b"))
		if !p.Lose(a) {
			t.Errorf("Lose(%q) = false, want true", a)
		}
		if _, err := p.Get(ctx, a); !errors.Is(err, provider.ErrNotFound) {
			t.Errorf("Get of a lost instance: %v, want ErrNotFound", err)
		}
		p.Stop(b, provider.StateStopped)
		if in, _ := p.Get(ctx, b); in.State != provider.StateStopped || in.IP != "" {
			t.Errorf("stopped instance: state %q ip %q, want Stopped and no IP", in.State, in.IP)
		}
	})

	t.Run("Latency", func(t *testing.T) {
		p := mock.New(mock.Options{})
		p.SetLatency(mock.MethodGet, time.Hour)
		cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if _, err := p.Get(cctx, "mock://x"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Get with latency beyond its deadline: %v, want DeadlineExceeded", err)
		}
	})

	t.Run("MalformedID", func(t *testing.T) {
		p := mock.New(mock.Options{})
		_, err := p.Get(ctx, "gce://p/z/n")
		if provider.KindOf(err) != provider.KindPermanent {
			t.Errorf("Get of a foreign ID: %v (kind %q), want a permanent error", err, provider.KindOf(err))
		}
	})
}

func TestConcurrentCreatesMakeOneInstance(t *testing.T) {
	ctx := context.Background()
	p := mock.New(mock.Options{})
	ids := make(chan string, 50)
	for range 50 {
		go func() {
			id, err := p.Create(ctx, request("same"))
			if err != nil {
				t.Error(err)
			}
			ids <- id
		}()
	}
	first := <-ids
	for range 49 {
		if id := <-ids; id != first {
			t.Errorf("concurrent Creates returned %q and %q", first, id)
		}
	}
	if n := len(p.Instances()); n != 1 {
		t.Errorf("50 concurrent Creates with one name made %d instances, want 1", n)
	}
}

// TestCallHome: each new instance calls home once, when its boot ends, with
// the proxy it serves; one that hangs, fails its bootstrap, was skipped or
// is gone by then does not.
func TestCallHome(t *testing.T) {
	cases := map[string]struct {
		reason string
		before func(p *mock.Provider)
		after  func(p *mock.Provider, id string)
		change func(*provider.CreateRequest)
		want   []mock.CallHome
	}{
		"Ready": {
			reason: "a booted instance calls home once, even if it is created twice (adopted)",
			want:   []mock.CallHome{{Namespace: "team-a", Name: "egress-1", UID: "6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f", Instance: "proxy-6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f"}},
		},
		"NeverReady": {
			reason: "a hanging boot says nothing",
			before: func(p *mock.Provider) { p.NeverReady(1) },
		},
		"SkipCallHome": {
			reason: "a lost call-home message",
			before: func(p *mock.Provider) { p.SkipCallHome(1) },
		},
		"BootFailed": {
			reason: "a failed self-test calls home to say so, once, and never says it is ready",
			after:  func(p *mock.Provider, id string) { p.FailBoot(id, "tinyproxy does not answer") },
			want:   []mock.CallHome{{Namespace: "team-a", Name: "egress-1", UID: "6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f", Instance: "proxy-6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f", BootError: "tinyproxy does not answer"}},
		},
		"LostBeforeReady": {
			reason: "a VM gone before its boot ended calls nobody",
			after:  func(p *mock.Provider, id string) { p.Lose(id) },
		},
		"OwnCloudInit": {
			reason: "a VM that runs a spec's own cloud-init has no account to call home with (the gcp provider gives it none)",
			change: func(r *provider.CreateRequest) { r.CloudInit = "#cloud-config\n" },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			var got []mock.CallHome
			p := mock.New(mock.Options{Clock: clk, ProvisioningDelay: 10 * time.Second, CallHome: func(c mock.CallHome) { got = append(got, c) }})
			if tc.before != nil {
				tc.before(p)
			}
			req := request("6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f")
			req.Namespace, req.ProxyName = "team-a", "egress-1"
			if tc.change != nil {
				tc.change(&req)
			}
			id, err := p.Create(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			p.Create(context.Background(), req)
			if tc.after != nil {
				tc.after(p, id)
			}
			clk.Advance(9 * time.Second)
			for _, c := range got {
				if c.BootError == "" {
					t.Fatalf("called home ready %v before the boot ended", c)
				}
			}
			clk.Advance(time.Hour)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\ncalls home (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestBootFaults: an instance that hangs or fails its bootstrap stays
// Provisioning, the failure's reason in BootError and on its console.
func TestBootFaults(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(epoch)
	p := mock.New(mock.Options{Clock: clk, ProvisioningDelay: time.Second})
	p.NeverReady(1)
	hung, _ := p.Create(ctx, request("11111111-1111-4111-8111-111111111111"))
	failed, _ := p.Create(ctx, request("22222222-2222-4222-8222-222222222222"))
	p.FailBoot(failed, "a CONNECT with credentials to www.google.com:443 got 000, want 200")
	clk.Advance(time.Hour)
	for id, want := range map[string]provider.Instance{
		hung:   {ID: hung, State: provider.StateProvisioning, UID: "11111111-1111-4111-8111-111111111111", CreatedAt: epoch, Deployment: provider.DefaultDeployment},
		failed: {ID: failed, State: provider.StateProvisioning, UID: "22222222-2222-4222-8222-222222222222", CreatedAt: epoch, Deployment: provider.DefaultDeployment, BootError: "a CONNECT with credentials to www.google.com:443 got 000, want 200"},
	} {
		got, err := p.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, *got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id, diff)
		}
	}
	out, err := p.Console(ctx, failed)
	if err != nil || !strings.Contains(out, "FAILED: a CONNECT with credentials") {
		t.Errorf("console of the failed VM: %q, %v; want the bootstrap's failure", out, err)
	}
}

// TestValidate: the mock's own small rules.
func TestValidate(t *testing.T) {
	cases := map[string]struct {
		reason string
		pl     provider.Placement
		want   []string
	}{
		"RegionAndZone":   {reason: "a zone of the region", pl: provider.Placement{Region: "us-central1", Zone: "us-central1-a"}},
		"RegionOnly":      {reason: "a region alone", pl: provider.Placement{Region: "local"}},
		"AnyMachineType":  {reason: "the mock ignores machine types and images", pl: provider.Placement{Region: "local", MachineType: "n2-highmem-128", Image: "whatever"}},
		"RegionNotLabel":  {reason: "a region is a label", pl: provider.Placement{Region: "Local One"}, want: []string{"placement.region:REGION_INVALID"}},
		"ZoneOfAnother":   {reason: "a zone of another region", pl: provider.Placement{Region: "us-central1", Zone: "europe-west4-a"}, want: []string{"placement.zone:ZONE_NOT_IN_REGION"}},
		"ZoneIsTheRegion": {reason: "a zone is more than its region", pl: provider.Placement{Region: "us-central1", Zone: "us-central1-"}, want: []string{"placement.zone:ZONE_NOT_IN_REGION"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, v := range mock.Validate(provider.ValidateRequest{Placement: tc.pl}) {
				got = append(got, v.Field+":"+v.Reason)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nviolations (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
