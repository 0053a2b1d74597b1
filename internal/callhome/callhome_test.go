package callhome_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/callhome"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmidentity"
)

const (
	project = "demo-project"
	email   = "proxy-vm@demo-project.iam.gserviceaccount.com"
	uidA    = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
	uidB    = "6a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d"
)

// bucket is the store's TakeCallHome rule in memory, counting its reads.
type bucket struct {
	tokens map[string]float64
	at     map[string]time.Time
	reads  int
}

func (b *bucket) TakeCallHome(_ context.Context, vm string, now time.Time, burst int, interval time.Duration) (bool, error) {
	b.reads++
	t, ok := b.tokens[vm]
	if !ok {
		t = float64(burst)
	} else {
		t = min(float64(burst), t+now.Sub(b.at[vm]).Seconds()/interval.Seconds())
	}
	if t < 1 {
		return false, nil
	}
	b.tokens[vm], b.at[vm] = t-1, now
	return true, nil
}

type docs struct {
	docs  map[proxy.Key]*proxy.Proxy
	reads int
}

func (d *docs) Get(_ context.Context, k proxy.Key) (*proxy.Proxy, error) {
	d.reads++
	if p, ok := d.docs[k]; ok {
		return p, nil
	}
	return nil, proxy.ErrNotFound
}

type sink struct {
	labels []callhome.Labels
	lines  [][]vmconfig.AccessLine
}

func (s *sink) Write(_ context.Context, l callhome.Labels, lines []vmconfig.AccessLine) error {
	s.labels, s.lines = append(s.labels, l), append(s.lines, lines)
	return nil
}

type world struct {
	h      *callhome.Handler
	iss    *vmidentity.Issuer
	clk    *clock.Fake
	bucket *bucket
	docs   *docs
	sink   *sink
}

func newWorld(t *testing.T) *world {
	t.Helper()
	iss, err := vmidentity.NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	v, err := vmidentity.NewVerifier(context.Background(), vmidentity.Audience(project, queue.CallHomeTopic), project, email, option.WithHTTPClient(iss.KeysClient()))
	if err != nil {
		t.Fatal(err)
	}
	w := &world{iss: iss, clk: clock.NewFake(time.Now()), bucket: &bucket{tokens: map[string]float64{}, at: map[string]time.Time{}},
		docs: &docs{docs: map[proxy.Key]*proxy.Proxy{
			{Namespace: "team-a", Name: "web"}: {Namespace: "team-a", Name: "web", UID: uidA, Status: proxy.Status{ProviderID: "gce://demo-project/us-central1-a/proxy-" + uidA}},
			{Namespace: "team-b", Name: "db"}:  {Namespace: "team-b", Name: "db", UID: uidB, Status: proxy.Status{ProviderID: "gce://demo-project/us-central1-a/proxy-" + uidB}},
		}}, sink: &sink{}}
	w.h = &callhome.Handler{Verifier: v, Limiter: w.bucket, Docs: w.docs, Sink: w.sink, Clock: w.clk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return w
}

// token is VM vm's identity token, as its metadata server gives it.
func (w *world) token(t *testing.T, vm string) string {
	t.Helper()
	tok, err := w.iss.Token(vmidentity.Audience(project, queue.CallHomeTopic),
		vmidentity.Instance{Project: project, Zone: "us-central1-a", Name: vm, ID: "1", Email: email}, w.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func hint(token, ns, name, uid string) queue.Message {
	body, _ := json.Marshal(proxy.ReconcileMessage{Namespace: ns, Name: name, UID: uid, Reason: proxy.ReasonReady})
	return queue.Message{MessageID: "m", Data: body, Attributes: map[string]string{queue.IdentityAttribute: token}}
}

func access(token, ns, name, uid string, lines ...string) queue.Message {
	raw := make([]json.RawMessage, len(lines))
	for i, l := range lines {
		raw[i] = json.RawMessage(l)
	}
	body, _ := json.Marshal(vmconfig.AccessBatch{Namespace: ns, Name: name, UID: uid, Lines: raw})
	return queue.Message{MessageID: "m", Data: body, Attributes: map[string]string{queue.IdentityAttribute: token, queue.KindAttribute: queue.KindAccess}}
}

const line = `{"time":"2026-12-03T10:00:00Z","source":"203.0.113.7:50000","user":"u1","protocol":"connect","method":"CONNECT","host":"example.com","port":443,"status":200,"bytesIn":10,"bytesOut":20,"durationMs":5}`

// TestForgedCallHomesCostNothing: a message without a valid token is
// dropped before anything is read.
func TestForgedCallHomesCostNothing(t *testing.T) {
	w := newWorld(t)
	other, _ := vmidentity.NewIssuer()
	forged, _ := other.Token(vmidentity.Audience(project, queue.CallHomeTopic), vmidentity.Instance{Project: project, Zone: "z", Name: "proxy-" + uidA, Email: email}, w.clk.Now())
	for name, m := range map[string]queue.Message{
		"none":   hint("", "team-a", "web", uidA),
		"forged": hint(forged, "team-a", "web", uidA),
		"access": access(forged, "team-a", "web", uidA, line),
	} {
		_, _, err := w.h.Handle(context.Background(), m)
		if !errors.Is(err, callhome.ErrRefused) || !errors.Is(err, vmidentity.ErrInvalid) {
			t.Errorf("%s: %v, want refused as no valid identity", name, err)
		}
	}
	if w.bucket.reads+w.docs.reads != 0 || len(w.sink.lines) != 0 {
		t.Errorf("forged messages cost %d bucket reads, %d document reads and %d writes; want none", w.bucket.reads, w.docs.reads, len(w.sink.lines))
	}
}

// TestFloodIsBounded: one VM's messages past its bucket are dropped by the
// instance's own bucket before the store's is read: no bucket read, no
// reconcile, no document read, no log write; the buckets refill with time.
func TestFloodIsBounded(t *testing.T) {
	w := newWorld(t)
	tok := w.token(t, "proxy-"+uidA)
	accepted := 0
	for range 1000 {
		key, _, err := w.h.Handle(context.Background(), hint(tok, "team-a", "web", uidA))
		switch {
		case err == nil && key == (proxy.Key{Namespace: "team-a", Name: "web"}):
			accepted++
		case errors.Is(err, callhome.ErrRefused):
		default:
			t.Fatalf("Handle: %v", err)
		}
	}
	if accepted != callhome.Burst || w.bucket.reads != callhome.Burst || w.docs.reads != 0 {
		t.Errorf("1000 hints from one VM: %d accepted, %d bucket reads, %d document reads; want %d, %d, 0", accepted, w.bucket.reads, w.docs.reads, callhome.Burst, callhome.Burst)
	}
	// Another VM has a bucket of its own.
	if _, _, err := w.h.Handle(context.Background(), hint(w.token(t, "proxy-"+uidB), "team-b", "db", uidB)); err != nil {
		t.Errorf("another VM's hint: %v", err)
	}
	w.clk.Advance(callhome.Interval)
	if _, _, err := w.h.Handle(context.Background(), hint(tok, "team-a", "web", uidA)); err != nil {
		t.Errorf("after %s: %v, want one more accepted", callhome.Interval, err)
	}
}

// TestAccessLinesAreFiledUnderTheVMsProxy: the lines go under the labels
// of the proxy whose VM the token names, rebuilt from the contract's
// fields; lines naming another proxy are dropped.
func TestAccessLinesAreFiledUnderTheVMsProxy(t *testing.T) {
	w := newWorld(t)
	vmA := w.token(t, "proxy-"+uidA)
	forgedFields := `{"time":"2026-12-03T10:00:01Z","source":"203.0.113.7:50001","protocol":"http","method":"GET","host":"example.org","port":80,"status":200,"bytesIn":1,"bytesOut":2,"durationMs":1,"message":"gc refused","severity":"ERROR","labels":{"namespace":"team-b"}}`
	if _, _, err := w.h.Handle(context.Background(), access(vmA, "team-a", "web", uidA, line, forgedFields, `{"time":"x"}`)); err != nil {
		t.Fatal(err)
	}
	// VM A cannot file lines as team-b's db, nor under another uid.
	for _, m := range []queue.Message{access(vmA, "team-b", "db", uidB, line), access(vmA, "team-a", "web", uidB, line)} {
		if _, _, err := w.h.Handle(context.Background(), m); !errors.Is(err, callhome.ErrRefused) || !strings.Contains(err.Error(), "whose VM it is not") {
			t.Errorf("lines of another proxy: %v, want refused", err)
		}
	}
	want := []callhome.Labels{{UID: uidA, Namespace: "team-a", Name: "web", Instance: vmidentity.Instance{Project: project, Zone: "us-central1-a", Name: "proxy-" + uidA, ID: "1", Email: email}}}
	if diff := cmp.Diff(want, w.sink.labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if len(w.sink.lines) != 1 || len(w.sink.lines[0]) != 2 {
		t.Fatalf("lines written: %v, want the two valid ones", w.sink.lines)
	}
	out, _ := json.Marshal(w.sink.lines[0][1])
	for _, forged := range []string{"gc refused", "severity", "team-b"} {
		if strings.Contains(string(out), forged) {
			t.Errorf("the written line %s carries the VM's %q", out, forged)
		}
	}
}
