package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// ipRecorder is ip(8) as the agent runs it: each call's arguments, and a
// failure for the calls whose verb is in fail.
type ipRecorder struct {
	mu    sync.Mutex
	calls []string
	fail  map[string]bool
}

func (r *ipRecorder) run(_ context.Context, args ...string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, strings.Join(args, " "))
	if len(args) > 2 && r.fail[args[2]] {
		return nil, errors.New("RTNETLINK answers: Operation not permitted")
	}
	return nil, nil
}

func (r *ipRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// withIPv6 is the configuration text with ipv6Prefix and ipv6Egress set.
func withIPv6(t *testing.T, text, prefix, mode string) string {
	var c vmconfig.Config
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		t.Fatal(err)
	}
	c.IPv6Prefix, c.IPv6Egress = prefix, mode
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestIPv6PrefixRoute: an apply with an ipv6Prefix routes it to the VM
// itself (a local route on lo, replaced at every apply, so every boot's
// apply puts it back); a prefix the next configuration no longer names
// loses its route once that configuration serves; a configuration
// without one runs no ip(8) at all.
func TestIPv6PrefixRoute(t *testing.T) {
	f := setUp(t)
	ip := &ipRecorder{}
	f.agent.IP = ip.run
	ctx := context.Background()
	const p1, p2 = "2001:db8:7:1::/64", "2001:db8:9::/96"
	steps := []struct {
		name, prefix, mode string
		want               []string
	}{
		{"no prefix", "", "", nil},
		{"a prefix", p1, "perConnection", []string{"-6 route replace local " + p1 + " dev lo"}},
		{"the same prefix, another mode", p1, "single", []string{"-6 route replace local " + p1 + " dev lo"}},
		{"its host bits are its network", "2001:db8:7:1::1/64", "perSession", []string{"-6 route replace local " + p1 + " dev lo"}},
		{"another prefix", p2, "perSession", []string{"-6 route replace local " + p2 + " dev lo", "-6 route del local " + p1 + " dev lo"}},
		{"none any more", "", "off", []string{"-6 route del local " + p2 + " dev lo"}},
	}
	for i, s := range steps {
		text := withIPv6(t, f.config(t, int64(i+1), nil, "alice"), s.prefix, s.mode)
		if err := f.agent.Apply(ctx, text, true); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.want, ip.take()); diff != "" {
			t.Errorf("%s: ip(8) ran (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestIPv6PrefixRouteFails: a prefix the agent cannot route (ip(8)
// fails, or there is none) fails the configuration as any other step
// does: the one served before keeps serving, egress/error says why, and
// a route the failed one added goes with it.
func TestIPv6PrefixRouteFails(t *testing.T) {
	f := setUp(t)
	ip := &ipRecorder{}
	f.agent.IP = ip.run
	ctx := context.Background()
	const p1, p2 = "2001:db8:7:1::/64", "2001:db8:9::/96"
	first := withIPv6(t, f.config(t, 1, nil, "alice"), p1, "perConnection")
	if err := f.agent.Apply(ctx, first, true); err != nil {
		t.Fatal(err)
	}
	ip.take()
	ip.fail = map[string]bool{"replace": true}
	err := f.agent.Apply(ctx, withIPv6(t, f.config(t, 2, nil, "bob"), p2, "perConnection"), true)
	type outcome struct {
		Failed       bool
		Calls        []string
		Alice, Bob   int
		ErrorNamesIt bool
	}
	alice, _ := f.connect(t, "alice")
	bob, _ := f.connect(t, "bob")
	got := outcome{err != nil, ip.take(), alice, bob, strings.Contains(f.md.GuestAttributes()["egress/error"], "routing ipv6Prefix "+p2)}
	want := outcome{true, []string{"-6 route replace local " + p2 + " dev lo", "-6 route del local " + p2 + " dev lo"}, 200, 407, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a prefix ip(8) cannot route (-want +got):\n%s", diff)
	}

	f.agent.IP = nil
	err = f.agent.Apply(ctx, withIPv6(t, f.config(t, 3, nil, "bob"), p2, "perSession"), true)
	if err == nil || !strings.Contains(err.Error(), "no ip(8)") {
		t.Errorf("a prefix without ip(8): %v, want a failure that says so", err)
	}
}
