package engine

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// quotaClock is a clock a test moves: the month turns when it says so.
type quotaClock struct{ t atomic.Pointer[time.Time] }

func (c *quotaClock) now() time.Time  { return *c.t.Load() }
func (c *quotaClock) set(t time.Time) { c.t.Store(&t) }

// TestTrafficQuota: once the month's bytes reach trafficQuotaBytes, a new
// CONNECT gets 403 quota-exceeded and a SOCKS5 CONNECT reply 2, each with
// an access line, while the tunnel that crossed the quota finishes; a
// reload that raises the quota, and the first of the next month (UTC),
// carry new connections again; a restart keeps the month's count.
func TestTrafficQuota(t *testing.T) {
	echo, echoPort := startEcho(t)
	const quota = 64 << 10
	clock := &quotaClock{}
	clock.set(time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC))
	state := filepath.Join(t.TempDir(), "traffic.json")
	cfg := testConfig(t, echoPort)
	cfg.AccessLog = true
	cfg.TrafficQuotaBytes = quota
	opts := Options{Resolver: names, Now: clock.now, TrafficState: state}
	s, addr := startProxyWith(t, cfg, opts)
	socks := startSocks(t, s)
	auth := basic(testUser, testPassword)
	loopback := netip.MustParseAddr("127.0.0.1").AsSlice()
	socksConnect := socksClient{user: testUser, password: testPassword, command: socksCommandConnect, atyp: socksAddressIPv4, addr: loopback, port: echoPort}

	// One tunnel carries 40 KiB each way, 80 KiB both ways together: over
	// the quota, and it finishes all the same.
	a, c := connectThrough(t, addr, echo, auth, nil)
	if a.Status != 200 {
		t.Fatalf("the first CONNECT got %d, want 200", a.Status)
	}
	if err := echoes(t, c, strings.Repeat("q", 40<<10)); err != nil {
		t.Fatalf("the tunnel that crosses the quota: %v", err)
	}
	c.Close()

	type seen struct {
		Connect, Socks int
		MonthBytesOver bool
		Month          string
	}
	look := func() seen {
		a, _ := connectThrough(t, addr, echo, auth, nil)
		sa, _ := socksDial(t, socks, socksConnect)
		st := s.Stats()
		return seen{Connect: a.Status, Socks: sa.Reply, MonthBytesOver: st.MonthBytes >= quota, Month: st.Month}
	}
	if diff := cmp.Diff(seen{Connect: 403, Socks: socksNotAllowed, MonthBytesOver: true, Month: "2026-12"}, look()); diff != "" {
		t.Errorf("with the month's quota spent (-want +got):\n%s", diff)
	}
	waitUntil(t, "the refusals' lines", func() bool {
		n := 0
		for _, l := range s.access.page(0).Lines {
			if l.Reason == ansQuotaExceeded.Code {
				n++
			}
		}
		return n == 2
	})

	// A restart reads the month's count back: no fresh quota.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Shutdown(ctx)
	saved, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Shutdown(ctx) })
	if !s2.quotaSpent(s2.rules.Load()) {
		t.Errorf("a restart with %s gave the proxy its quota again", saved)
	}

	// A larger quota, by reload, carries again.
	s3, addr3 := startProxyWith(t, cfg, opts)
	raised := cfg
	raised.Generation, raised.TrafficQuotaBytes = 2, 10*quota
	if err := s3.Apply(raised); err != nil {
		t.Fatal(err)
	}
	if a, _ := connectThrough(t, addr3, echo, auth, nil); a.Status != 200 {
		t.Errorf("after the quota was raised, a CONNECT got %d, want 200", a.Status)
	}
	if err := s3.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if a, _ := connectThrough(t, addr3, echo, auth, nil); a.Status != 403 {
		t.Errorf("after the quota was lowered again, a CONNECT got %d, want 403", a.Status)
	}

	// The first of the month, 00:00 UTC: a fresh count.
	clock.set(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	a, c = connectThrough(t, addr3, echo, auth, nil)
	if a.Status != 200 {
		t.Errorf("on the first of the next month a CONNECT got %d, want 200", a.Status)
	}
	c.Close()
	if st := s3.Stats(); st.Month != "2027-01" || st.MonthBytes >= quota {
		t.Errorf("the next month's stats say %s, %d bytes: want 2027-01 and under the quota", st.Month, st.MonthBytes)
	}
}

// TestTrafficCarried: a new VM's engine starts from what the proxy's VM
// before it carried this month, as the control plane wrote it beside the
// quota; a count of another month, or lower than the engine's own, is
// not taken.
func TestTrafficCarried(t *testing.T) {
	dec := time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		file    string
		carried *vmconfig.MonthCount
		want    int64
	}{
		"a new VM":                 {carried: &vmconfig.MonthCount{Month: "2026-12", Bytes: 5000}, want: 5000},
		"last month's":             {carried: &vmconfig.MonthCount{Month: "2026-11", Bytes: 5000}, want: 0},
		"the engine's own is more": {file: `{"month":"2026-12","bytes":7000}`, carried: &vmconfig.MonthCount{Month: "2026-12", Bytes: 5000}, want: 7000},
		"the report is more":       {file: `{"month":"2026-12","bytes":3000}`, carried: &vmconfig.MonthCount{Month: "2026-12", Bytes: 5000}, want: 5000},
		"none":                     {want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "traffic.json")
			if tc.file != "" {
				os.WriteFile(path, []byte(tc.file), 0o600)
			}
			cfg := testConfig(t, 443)
			cfg.TrafficQuotaBytes, cfg.TrafficCarried = 6000, tc.carried
			s, err := New(cfg, Options{Now: func() time.Time { return dec }, TrafficState: path})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			st := s.Stats()
			if diff := cmp.Diff([2]any{tc.want, tc.want >= 6000}, [2]any{st.MonthBytes, s.quotaSpent(s.rules.Load())}); diff != "" {
				t.Errorf("[the month's bytes at start, the quota spent] (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMonthlyState: what the month's file holds and how a start reads it.
func TestMonthlyState(t *testing.T) {
	dec := time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		file    string // "" is none
		now     time.Time
		want    int64
		wantErr bool
	}{
		"first start":    {now: dec, want: 0},
		"this month":     {file: `{"month":"2026-12","bytes":12345}`, now: dec, want: 12345},
		"last month":     {file: `{"month":"2026-11","bytes":12345}`, now: dec, want: 0},
		"torn file":      {file: `{"month":"2026-12","by`, now: dec, wantErr: true},
		"negative":       {file: `{"month":"2026-12","bytes":-1}`, now: dec, wantErr: true},
		"UTC, not local": {file: `{"month":"2027-01","bytes":7}`, now: time.Date(2026, 12, 31, 23, 30, 0, 0, time.FixedZone("UTC-1", -3600)), want: 7},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "traffic.json")
			if tc.file != "" {
				os.WriteFile(path, []byte(tc.file), 0o600)
			}
			m := &monthly{now: func() time.Time { return tc.now }, path: path}
			err := m.load(100)
			if (err != nil) != tc.wantErr {
				t.Fatalf("load: %v, want an error: %t", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if _, got := m.used(100); got != tc.want {
				t.Errorf("the month's bytes at start: %d, want %d", got, tc.want)
			}
			if _, got := m.used(150); got != tc.want+50 {
				t.Errorf("after 50 bytes more: %d, want %d", got, tc.want+50)
			}
			if err := m.save(150); err != nil {
				t.Fatal(err)
			}
			back := &monthly{now: m.now, path: path}
			if err := back.load(0); err != nil {
				t.Fatal(err)
			}
			if _, got := back.used(0); got != tc.want+50 {
				t.Errorf("read back: %d, want %d", got, tc.want+50)
			}
		})
	}
}
