package engine

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestBudgetStop: a configuration's trafficStop of the engine's month
// refuses every new CONNECT (403 budget-exceeded) and SOCKS5 CONNECT
// (reply 2), each with an access line of that reason, and says so in the
// stats; a stop of another month, or none, carries; a stop over a spent
// quota answers with the budget's reason.
func TestBudgetStop(t *testing.T) {
	echo, echoPort := startEcho(t)
	loopback := netip.MustParseAddr("127.0.0.1").AsSlice()
	socksConnect := socksClient{user: testUser, password: testPassword, command: socksCommandConnect, atyp: socksAddressIPv4, addr: loopback, port: echoPort}
	type seen struct {
		Connect, Socks int
		// Reasons are the access lines' reasons of the two requests.
		Reasons []string
		Stop    *vmconfig.TrafficStop
	}
	december := &vmconfig.TrafficStop{Month: "2026-12", Reason: "the budget of namespace team-a"}
	for name, tc := range map[string]struct {
		reason string
		stop   *vmconfig.TrafficStop
		quota  int64
		want   seen
	}{
		"NoStop": {
			reason: "Without a stop the proxy carries.",
			want:   seen{Connect: 200, Socks: socksSucceeded, Reasons: []string{"", ""}},
		},
		"StopOfTheMonth": {
			reason: "A stop of the engine's month refuses both protocols, with lines.",
			stop:   december,
			want: seen{Connect: 403, Socks: socksNotAllowed, Reasons: []string{ansBudgetExceeded.Code, ansBudgetExceeded.Code},
				Stop: december},
		},
		"StopOfLastMonth": {
			reason: "The month turned: a stop of November holds no more, with no word from the control plane.",
			stop:   &vmconfig.TrafficStop{Month: "2026-11"},
			want:   seen{Connect: 200, Socks: socksSucceeded, Reasons: []string{"", ""}},
		},
		"StopOverASpentQuota": {
			reason: "The budget's reason is the one a client reads, the quota being no matter then.",
			stop:   december,
			quota:  1,
			want: seen{Connect: 403, Socks: socksNotAllowed, Reasons: []string{ansBudgetExceeded.Code, ansBudgetExceeded.Code},
				Stop: december},
		},
	} {
		t.Run(name, func(t *testing.T) {
			clock := &quotaClock{}
			clock.set(time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC))
			cfg := testConfig(t, echoPort)
			cfg.AccessLog, cfg.TrafficStop, cfg.TrafficQuotaBytes = true, tc.stop, tc.quota
			s, addr := startProxyWith(t, cfg, Options{Resolver: names, Now: clock.now})
			s.bytesIn.Add(tc.quota) // the quota, when there is one, spent
			socks := startSocks(t, s)
			a, c := connectThrough(t, addr, echo, basic(testUser, testPassword), nil)
			c.Close()
			sa, sc := socksDial(t, socks, socksConnect)
			if sc != nil {
				sc.Close()
			}
			var got seen
			got.Connect, got.Socks, got.Stop = a.Status, sa.Reply, s.Stats().TrafficStop
			waitUntil(t, "two access lines", func() bool { return len(s.access.page(0).Lines) == 2 })
			for _, l := range s.access.page(0).Lines {
				got.Reasons = append(got.Reasons, l.Reason)
			}
			if tc.want.Connect == 200 {
				// A carried request's line has its end's reason; only
				// that it is no refusal matters here.
				for i, r := range got.Reasons {
					if r == ansBudgetExceeded.Code || r == ansQuotaExceeded.Code {
						continue
					}
					got.Reasons[i] = ""
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestBudgetStopLive: a reload that brings a stop refuses the next
// connection while the tunnel open before it carries on; one that takes
// it away carries again.
func TestBudgetStopLive(t *testing.T) {
	echo, echoPort := startEcho(t)
	clock := &quotaClock{}
	clock.set(time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC))
	cfg := testConfig(t, echoPort)
	s, addr := startProxyWith(t, cfg, Options{Resolver: names, Now: clock.now})
	auth := basic(testUser, testPassword)
	a, open := connectThrough(t, addr, echo, auth, nil)
	if a.Status != 200 {
		t.Fatalf("before the stop a CONNECT got %d, want 200", a.Status)
	}
	stopped := cfg
	stopped.Generation, stopped.TrafficStop = 2, &vmconfig.TrafficStop{Month: "2026-12", Reason: "budget"}
	if err := s.Apply(stopped); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		New        int
		OpenEchoes bool
	}
	b, _ := connectThrough(t, addr, echo, auth, nil)
	got := seen{New: b.Status, OpenEchoes: echoes(t, open, strings.Repeat("o", 4096)) == nil}
	if diff := cmp.Diff(seen{New: 403, OpenEchoes: true}, got); diff != "" {
		t.Errorf("after a reload with a stop (-want +got):\n%s", diff)
	}
	lifted := cfg
	lifted.Generation = 3
	if err := s.Apply(lifted); err != nil {
		t.Fatal(err)
	}
	if c, _ := connectThrough(t, addr, echo, auth, nil); c.Status != 200 {
		t.Errorf("after a reload without the stop a CONNECT got %d, want 200", c.Status)
	}
	bad := cfg
	bad.TrafficStop = &vmconfig.TrafficStop{Month: "December"}
	if err := s.Apply(bad); err == nil || !strings.Contains(err.Error(), "trafficStop.month") {
		t.Errorf("a stop of month %q applied (error %v), want refused naming trafficStop.month", bad.TrafficStop.Month, err)
	}
}
