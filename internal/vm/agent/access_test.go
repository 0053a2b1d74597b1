package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/agent"
	"github.com/egress-proxies/egress/internal/vm/imagetest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// engineAccess stands in for the engine's stats listener's GET /access:
// lines numbered from 1, as many as added, and the afters it was asked.
type engineAccess struct {
	mu     sync.Mutex
	lines  []string
	off    bool
	afters []string
	// dropped is what the next answer says was lost after the line asked
	// after, as the engine counts it: for that answer alone.
	dropped int
}

func (e *engineAccess) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.URL.Path != "/access" || e.off {
		http.NotFound(w, r)
		return
	}
	after := r.URL.Query().Get("after")
	e.afters = append(e.afters, after)
	var n int
	fmt.Sscan(after, &n)
	var lines []json.RawMessage
	for _, l := range e.lines[min(n, len(e.lines)):] {
		lines = append(lines, json.RawMessage(l))
	}
	json.NewEncoder(w).Encode(map[string]any{"next": len(e.lines), "dropped": e.dropped, "lines": lines})
	e.dropped = 0
}

// TestAccessLinesShipped: the agent ships the engine's new access lines
// on the call-home topic as one access batch of the proxy it serves, with
// the VM's identity, and asks the engine only for lines after those it
// shipped; a batch says how many lines the engine lost before it; a
// proxy without an access log ships nothing.
func TestAccessLinesShipped(t *testing.T) {
	const uid = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
	ps := &pubsub{}
	pss := httptest.NewServer(ps)
	defer pss.Close()
	// The first answer says 5 lines were lost before it, the engine's
	// count for that answer: the first batch says 5, the next 0.
	eng := &engineAccess{lines: []string{`{"time":"2026-12-03T10:00:00Z","protocol":"connect","host":"example.com","port":443,"status":200}`}, dropped: 5}
	stats := httptest.NewServer(eng)
	defer stats.Close()
	md := imagetest.NewMetadata(imagetest.Instance{Project: "demo-proxies", Zone: "us-central1-b", Name: "vm", ID: "1",
		Attributes: map[string]string{
			vmconfig.KeyCallHomeTopic:  "projects/demo-proxies/topics/proxy-callhome",
			vmconfig.KeyPubSubEndpoint: pss.URL,
			vmconfig.KeyNamespace:      "team-a",
			vmconfig.KeyName:           "web",
			vmconfig.KeyUID:            uid,
		}}, "token")
	mds := httptest.NewServer(md)
	defer mds.Close()
	dir := t.TempDir()
	cfg, _ := json.Marshal(vmconfig.Config{StatsListen: strings.TrimPrefix(stats.URL, "http://")})
	if err := os.WriteFile(filepath.Join(dir, agent.ConfigFile), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	a := &agent.Agent{Metadata: &agent.Metadata{Base: mds.URL + "/computeMetadata/v1"}, Dir: dir, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.ShipAccess(ctx, 20*time.Millisecond); close(done) }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	published := func() int { ps.mu.Lock(); defer ps.mu.Unlock(); return len(ps.attrs) }
	waitFor("the first batch", func() bool { return published() == 1 })
	eng.mu.Lock()
	eng.lines = append(eng.lines, `{"time":"2026-12-03T10:00:01Z","protocol":"http","host":"example.org","port":80,"status":200}`)
	eng.mu.Unlock()
	waitFor("the second batch", func() bool { return published() == 2 })
	eng.mu.Lock()
	eng.off = true
	asked := len(eng.afters)
	eng.mu.Unlock()
	waitFor("a round with the access log off", func() bool { eng.mu.Lock(); defer eng.mu.Unlock(); return len(eng.afters) == asked && published() == 2 })
	time.Sleep(100 * time.Millisecond)
	cancel()
	<-done

	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(ps.attrs) != 2 {
		t.Fatalf("%d messages, want 2 (nothing while the access log is off)", len(ps.attrs))
	}
	var dropped []int64
	for i, attrs := range ps.attrs {
		if attrs[vmconfig.KindAttribute] != vmconfig.KindAccess || attrs[vmconfig.IdentityAttribute] == "" {
			t.Errorf("message %d: attributes %v, want kind=access and the VM's identity", i, attrs)
		}
		var b vmconfig.AccessBatch
		if err := json.Unmarshal(ps.data[i], &b); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		dropped = append(dropped, b.Dropped)
	}
	if diff := cmp.Diff([]int64{5, 0}, dropped); diff != "" {
		t.Errorf("the batches' dropped lines (-want +got):\n%s", diff)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if diff := cmp.Diff("0", eng.afters[0]); diff != "" {
		t.Errorf("the first ask (-want +got):\n%s", diff)
	}
	if !contains(eng.afters, "1") || contains(eng.afters[1:], "0") {
		t.Errorf("asked after %v: want 0 first, then 1 once the first line was shipped, never 0 again", eng.afters)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
