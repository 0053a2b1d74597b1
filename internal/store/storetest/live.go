package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// testLiveChanges: a PATCH of the reconfigurable fields (ranges, ports,
// bandwidth limit, access log) changes them and counts a generation; the same values again write nothing; null (an
// empty list) goes back to the default; the update's own error is
// returned as it is and writes nothing. New credentials count a
// generation each. A proxy being deleted, or Failed, takes neither.
func testLiveChanges(t *testing.T, s Store) {
	ctx := context.Background()
	p, err := s.Create(ctx, New("team-p", "egress-1"), 20)
	if err != nil {
		t.Fatal(err)
	}
	at := base.Add(time.Hour)
	set := func(ranges []string, ports []int32, bandwidth ...string) func(proxy.Spec) (proxy.Spec, error) {
		return func(s proxy.Spec) (proxy.Spec, error) {
			s.AllowedSourceRanges, s.ConnectPorts = ranges, ports
			if len(bandwidth) > 0 {
				// A limit, and the access log off with it; none, and the
				// access log back to its default (nil: on).
				off := false
				s.BandwidthLimit, s.AccessLog = bandwidth[0], &off
				if bandwidth[0] == "" {
					s.AccessLog = nil
				}
			}
			// Only the reconfigurable fields are taken from the result.
			s.Port, s.MaxAge, s.Socks5Port = 9999, "1h", 1080
			return s, nil
		}
	}
	on, off := true, false
	same := func(what string, before *proxy.Proxy) {
		t.Helper()
		after, err := s.Get(ctx, p.Key())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("%s changed the document (-before +after):\n%s", what, diff)
		}
	}
	steps := []struct {
		reason    string
		ranges    []string
		ports     []int32
		bandwidth []string
		wantGen   int64
		wantSpec  func(*proxy.Spec)
	}{
		{reason: "new ranges and ports", ranges: []string{"198.51.100.0/24", "203.0.113.0/24"}, ports: []int32{443, 8443}, wantGen: 2,
			wantSpec: func(s *proxy.Spec) {
				s.AllowedSourceRanges, s.ConnectPorts, s.AccessLog = []string{"198.51.100.0/24", "203.0.113.0/24"}, []int32{443, 8443}, &on
			}},
		{reason: "the same again: no write, the same generation", ranges: []string{"198.51.100.0/24", "203.0.113.0/24"}, ports: []int32{443, 8443}, wantGen: 2,
			wantSpec: func(s *proxy.Spec) {
				s.AllowedSourceRanges, s.ConnectPorts, s.AccessLog = []string{"198.51.100.0/24", "203.0.113.0/24"}, []int32{443, 8443}, &on
			}},
		{reason: "an empty list of ports is the default", ranges: []string{"198.51.100.0/24"}, ports: []int32{}, wantGen: 3,
			wantSpec: func(s *proxy.Spec) { s.AllowedSourceRanges, s.AccessLog = []string{"198.51.100.0/24"}, &on }},
		{reason: "a bandwidth limit and the access log off", ranges: []string{"198.51.100.0/24"}, bandwidth: []string{"100Mbit"}, wantGen: 4,
			wantSpec: func(s *proxy.Spec) {
				s.AllowedSourceRanges, s.BandwidthLimit, s.AccessLog = []string{"198.51.100.0/24"}, "100Mbit", &off
			}},
		{reason: "no limit, and the access log's default, written as on", ranges: []string{"198.51.100.0/24"}, bandwidth: []string{""}, wantGen: 5,
			wantSpec: func(s *proxy.Spec) { s.AllowedSourceRanges, s.AccessLog = []string{"198.51.100.0/24"}, &on }},
	}
	for i, st := range steps {
		got, err := s.UpdateSpec(ctx, p.Key(), at, tenancy.Limits{}, set(st.ranges, st.ports, st.bandwidth...))
		if err != nil {
			t.Fatalf("step %d (%s): UpdateSpec: %v", i, st.reason, err)
		}
		want := New("team-p", "egress-1").Spec
		st.wantSpec(&want)
		if diff := cmp.Diff(want, got.Spec); diff != "" || got.Generation != st.wantGen {
			t.Errorf("step %d (%s): generation %d, want %d; spec (-want +got):\n%s", i, st.reason, got.Generation, st.wantGen, diff)
		}
		if wrote := !got.UpdateTime.Equal(p.UpdateTime); wrote != (got.Generation != p.Generation) {
			t.Errorf("step %d (%s): wrote %v with generation %d after %d", i, st.reason, wrote, got.Generation, p.Generation)
		}
		if got.Generation != p.Generation && !got.Reconciler.ProgressTime.Equal(at) {
			t.Errorf("step %d (%s): progress time %s, want %s for the sweep", i, st.reason, got.Reconciler.ProgressTime, at)
		}
		same("reading back "+st.reason, got)
		p = got
	}
	// The IPv6 egress is a live field too: written with a generation,
	// read back as written, and the same mode again writes nothing.
	for i, want := range []int64{p.Generation + 1, p.Generation + 1} {
		got, err := s.UpdateSpec(ctx, p.Key(), at, tenancy.Limits{}, func(s proxy.Spec) (proxy.Spec, error) {
			s.IPv6Egress = proxy.IPv6PerConnection
			return s, nil
		})
		if err != nil {
			t.Fatalf("ipv6Egress %d: UpdateSpec: %v", i, err)
		}
		if got.Spec.IPv6Egress != proxy.IPv6PerConnection || got.Generation != want {
			t.Errorf("ipv6Egress %d: %q at generation %d, want perConnection at %d", i, got.Spec.IPv6Egress, got.Generation, want)
		}
		same("reading back the IPv6 egress", got)
		p = got
	}
	refuse := errors.New("the policy refuses it")
	if _, err := s.UpdateSpec(ctx, p.Key(), at, tenancy.Limits{}, func(proxy.Spec) (proxy.Spec, error) { return proxy.Spec{}, refuse }); !errors.Is(err, refuse) {
		t.Errorf("UpdateSpec whose update refuses: %v, want its error", err)
	}
	same("a refused update", p)

	var passwords []string
	for i := range 2 {
		got, err := s.RotateCredentials(ctx, p.Key(), at, tenancy.Limits{})
		if err != nil {
			t.Fatalf("RotateCredentials %d: %v", i+1, err)
		}
		if err := got.Reconciler.Credentials.Validate(); err != nil || got.Generation != p.Generation+1 || slices.Contains(passwords, got.Reconciler.Credentials.Password) {
			t.Errorf("RotateCredentials %d: generation %d after %d, credentials %v (%v); want one more generation and new valid credentials", i+1, got.Generation, p.Generation, got.Reconciler.Credentials, err)
		}
		passwords = append(passwords, got.Reconciler.Credentials.Password)
		same("reading back new credentials", got)
		p = got
	}
	for _, key := range []proxy.Key{{Namespace: "team-p", Name: "absent"}} {
		if _, err := s.UpdateSpec(ctx, key, at, tenancy.Limits{}, set(nil, nil)); !errors.Is(err, proxy.ErrNotFound) {
			t.Errorf("UpdateSpec of an absent proxy: %v, want ErrNotFound", err)
		}
		if _, err := s.RotateCredentials(ctx, key, at, tenancy.Limits{}); !errors.Is(err, proxy.ErrNotFound) {
			t.Errorf("RotateCredentials of an absent proxy: %v, want ErrNotFound", err)
		}
	}

	failed := *p
	failed.Status.Phase, failed.Status.Message = proxy.PhaseFailed, "the image does not exist"
	if failed.UpdateTime, err = s.UpdateStatus(ctx, &failed); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateSpec(ctx, p.Key(), at, tenancy.Limits{}, set([]string{"192.0.2.0/24"}, nil)); !errors.Is(err, proxy.ErrFailed) {
		t.Errorf("UpdateSpec of a Failed proxy: %v, want ErrFailed", err)
	}
	if _, err := s.RotateCredentials(ctx, p.Key(), at, tenancy.Limits{}); !errors.Is(err, proxy.ErrFailed) {
		t.Errorf("RotateCredentials of a Failed proxy: %v, want ErrFailed", err)
	}
	p, _ = s.Get(ctx, p.Key())
	same("the refused changes of a Failed proxy", p)
	if p, err = s.RequestDeletion(ctx, p.Key(), at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateSpec(ctx, p.Key(), at, tenancy.Limits{}, set([]string{"192.0.2.0/24"}, nil)); !errors.Is(err, proxy.ErrBeingDeleted) {
		t.Errorf("UpdateSpec of a proxy being deleted: %v, want ErrBeingDeleted", err)
	}
	if _, err := s.RotateCredentials(ctx, p.Key(), at, tenancy.Limits{}); !errors.Is(err, proxy.ErrBeingDeleted) {
		t.Errorf("RotateCredentials of a proxy being deleted: %v, want ErrBeingDeleted", err)
	}
	same("the refused changes of a proxy being deleted", p)
}
