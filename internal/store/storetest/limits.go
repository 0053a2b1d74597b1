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

// testRotation: a rotation request of a Ready proxy sets
// rotateRequestTime; another within the least interval is refused, saying
// when, and one after it taken; a proxy not Ready, or being deleted,
// takes none. A refusal writes nothing.
func testRotation(t *testing.T, s Store) {
	ctx := context.Background()
	p, err := s.Create(ctx, New("team-r", "egress-1"), 20)
	if err != nil {
		t.Fatal(err)
	}
	limits := tenancy.Limits{RotateMinInterval: 10 * time.Minute}
	at := base.Add(time.Hour)
	unchanged := func(what string, before *proxy.Proxy) {
		t.Helper()
		after, err := s.Get(ctx, p.Key())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("%s changed the document (-before +after):\n%s", what, diff)
		}
	}
	if _, err := s.RequestRotation(ctx, p.Key(), at, limits); !errors.Is(err, proxy.ErrNotReady) {
		t.Errorf("RequestRotation of a Pending proxy: %v, want ErrNotReady", err)
	}
	unchanged("the refused rotation of a Pending proxy", p)
	ready := *p
	ready.Status.Phase = proxy.PhaseReady
	if ready.UpdateTime, err = s.UpdateStatus(ctx, &ready); err != nil {
		t.Fatal(err)
	}
	for _, when := range []time.Time{at, at.Add(10 * time.Minute)} {
		got, err := s.RequestRotation(ctx, p.Key(), when, limits)
		if err != nil {
			t.Fatalf("RequestRotation at %s: %v", when, err)
		}
		if got.RotateRequestTime == nil || !got.RotateRequestTime.Equal(when) {
			t.Errorf("rotateRequestTime %v, want %s", got.RotateRequestTime, when)
		}
		if !got.UpdateTime.After(p.UpdateTime) {
			t.Errorf("a rotation request did not write the document: update time %s, before it %s", got.UpdateTime, p.UpdateTime)
		}
		again, err := s.Get(ctx, p.Key())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Errorf("RequestRotation returned what a Get does not read (-returned +get):\n%s", diff)
		}
		p = got
	}
	_, err = s.RequestRotation(ctx, p.Key(), at.Add(19*time.Minute), limits)
	var retry *proxy.RetryError
	if !errors.Is(err, proxy.ErrRotatedRecently) || !errors.As(err, &retry) || !retry.At.Equal(at.Add(20*time.Minute)) {
		t.Errorf("RequestRotation 9m after the last: %v, want ErrRotatedRecently, retry at %s", err, at.Add(20*time.Minute))
	}
	unchanged("the rotation within the interval", p)
	if _, err := s.RequestRotation(ctx, proxy.Key{Namespace: "team-r", Name: "absent"}, at, limits); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("RequestRotation of an absent document: %v, want ErrNotFound", err)
	}
	deleting, err := s.RequestDeletion(ctx, p.Key(), at.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequestRotation(ctx, p.Key(), at.Add(3*time.Hour), limits); !errors.Is(err, proxy.ErrBeingDeleted) {
		t.Errorf("RequestRotation of a proxy being deleted: %v, want ErrBeingDeleted", err)
	}
	unchanged("the refused rotation of a proxy being deleted", deleting)
}

// testCreatesPerHour: a namespace's creates and rotations together ask
// for at most CreatesPerHour VMs in any hour, counted in its document in
// their own transactions; past it, a *proxy.RetryError says when the
// oldest leaves the hour, and nothing is written. Another namespace has
// its own hour.
func testCreatesPerHour(t *testing.T, s Store) {
	ctx := context.Background()
	for _, name := range []string{"team-h", "team-i"} {
		if _, err := s.CreateNamespace(ctx, rules.NewNamespace(name, map[string]tenancy.Role{alice: tenancy.Owner}, 0, 20, base)); err != nil {
			t.Fatal(err)
		}
	}
	admit := func(*tenancy.Namespace) (tenancy.Limits, error) {
		return tenancy.Limits{Quota: 20, CreatesPerHour: 2}, nil
	}
	at := func(ns, name string, d time.Duration) *proxy.Proxy {
		p := New(ns, name)
		p.CreateTime = base.Add(d)
		return p
	}
	first, err := s.CreateInNamespace(ctx, at("team-h", "p-0", 0), admit)
	if err != nil {
		t.Fatal(err)
	}
	ready := *first
	ready.Status.Phase = proxy.PhaseReady
	if _, err := s.UpdateStatus(ctx, &ready); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequestRotation(ctx, first.Key(), base.Add(20*time.Minute), tenancy.Limits{CreatesPerHour: 2}); err != nil {
		t.Fatalf("the second VM of the hour, a rotation: %v", err)
	}
	before, err := s.GetNamespace(ctx, "team-h")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Time{base, base.Add(20 * time.Minute)}, before.Creations, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("the namespace's creations (-want +got):\n%s", diff)
	}
	_, err = s.CreateInNamespace(ctx, at("team-h", "p-1", 30*time.Minute), admit)
	var retry *proxy.RetryError
	if !errors.Is(err, proxy.ErrCreatesPerHour) || !errors.As(err, &retry) || !retry.At.Equal(base.Add(time.Hour)) {
		t.Errorf("a third VM within the hour, a create: %v; want ErrCreatesPerHour, retry at %s", err, base.Add(time.Hour))
	}
	if _, err := s.Get(ctx, proxy.Key{Namespace: "team-h", Name: "p-1"}); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("the refused create wrote the proxy: %v", err)
	}
	if _, err := s.RequestRotation(ctx, first.Key(), base.Add(40*time.Minute), tenancy.Limits{CreatesPerHour: 2}); !errors.Is(err, proxy.ErrCreatesPerHour) {
		t.Errorf("a third VM within the hour, a rotation: %v; want ErrCreatesPerHour", err)
	}
	after, err := s.GetNamespace(ctx, "team-h")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the refusals changed the namespace (-before +after):\n%s", diff)
	}
	if _, err := s.CreateInNamespace(ctx, at("team-i", "p-0", 30*time.Minute), admit); err != nil {
		t.Errorf("another namespace's first VM: %v", err)
	}
	if _, err := s.CreateInNamespace(ctx, at("team-h", "p-1", time.Hour), admit); err != nil {
		t.Errorf("an hour after the first, a VM: %v", err)
	}
	ns, err := s.GetNamespace(ctx, "team-h")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Time{base.Add(20 * time.Minute), base.Add(time.Hour)}, ns.Creations, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("the namespace's creations keep the last hour's (-want +got):\n%s", diff)
	}
	if ns.ProxyCount != 2 {
		t.Errorf("proxy count %d, want 2", ns.ProxyCount)
	}
}
