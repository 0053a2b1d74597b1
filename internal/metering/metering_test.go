package metering_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
)

// TestProviderDecorator counts the calls of a metered provider in the tally
// of the context they are made with.
func TestProviderDecorator(t *testing.T) {
	cases := map[string]struct {
		reason string
		calls  func(ctx context.Context, p provider.Provider)
		want   metering.Usage
	}{
		"Lifecycle": {
			reason: "Each method counts once per call.",
			calls: func(ctx context.Context, p provider.Provider) {
				id, _ := p.Create(ctx, provider.CreateRequest{Name: "proxy-a", UID: "a"})
				p.Get(ctx, id)
				p.Get(ctx, id)
				p.Delete(ctx, id)
				p.ListByTag(ctx)
			},
			want: metering.Usage{ProviderCreate: 1, ProviderGet: 2, ProviderDelete: 1, ProviderListByTag: 1},
		},
		"ReconfigureCounted": {
			reason: "The mock is a Reconfigurer, so its decorator is one too, and Reconfigure counts; a VM gone is an error.",
			calls: func(ctx context.Context, p provider.Provider) {
				r, ok := p.(provider.Reconfigurer)
				if !ok {
					t.Fatal("the decorator of a Reconfigurer is no Reconfigurer")
				}
				id, _ := p.Create(ctx, provider.CreateRequest{Name: "n", UID: "u"})
				r.Reconfigure(ctx, id, provider.ReconfigureRequest{UID: "v"})
				r.Reconfigure(ctx, "mock://absent", provider.ReconfigureRequest{UID: "v"})
			},
			want: metering.Usage{ProviderCreate: 1, ProviderReconfigure: 2, ProviderErrors: 1},
		},
		"ErrorsCounted": {
			reason: "A call that fails counts as a call and as an error; ErrNotFound is an error too.",
			calls: func(ctx context.Context, p provider.Provider) {
				p.Get(ctx, "mock://absent")
				p.Create(ctx, provider.CreateRequest{})
			},
			want: metering.Usage{ProviderCreate: 1, ProviderGet: 1, ProviderErrors: 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, inv := metering.Start(context.Background(), "Test")
			tc.calls(ctx, metering.Provider(mock.New(mock.Options{})))
			if diff := cmp.Diff(tc.want, inv.Usage()); diff != "" {
				t.Errorf("%s\nusage (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAddWithoutTallyCountsNothing(t *testing.T) {
	ctx := context.Background()
	metering.Add(ctx, metering.FirestoreRead, 1) // must not panic
	p := metering.Provider(mock.New(mock.Options{}))
	if _, err := p.ListByTag(ctx); err != nil {
		t.Fatal(err)
	}
	ctx, inv := metering.Start(ctx, "Test")
	metering.Add(context.WithoutCancel(ctx), metering.FirestoreWrite, 3)
	if diff := cmp.Diff(metering.Usage{FirestoreWrites: 3}, inv.Usage()); diff != "" {
		t.Errorf("only the counts made with the invocation's context are its own (-want +got):\n%s", diff)
	}
}

// line is the part of an invocation line the tests check.
type line struct {
	Severity string         `json:"severity"`
	Message  string         `json:"message"`
	Function string         `json:"function"`
	Outcome  string         `json:"outcome"`
	Trigger  string         `json:"trigger,omitempty"`
	Method   string         `json:"method,omitempty"`
	Status   int            `json:"status,omitempty"`
	Usage    metering.Usage `json:"usage"`
}

func decodeLine(t *testing.T, b []byte) line {
	t.Helper()
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("invocation line is not JSON: %v\n%s", err, b)
	}
	var raw map[string]any
	json.Unmarshal(b, &raw)
	if _, ok := raw["latencyMs"].(float64); !ok {
		t.Errorf("invocation line has no numeric latencyMs: %s", b)
	}
	return l
}

// TestInvocationLine checks the line an operator's log-based metrics and
// the benchmark read: one JSON object in Cloud Logging's shape.
func TestInvocationLine(t *testing.T) {
	var buf bytes.Buffer
	log := logging.New(&buf, nil)
	ctx, inv := metering.Start(context.Background(), "Reconcile")
	metering.Add(ctx, metering.FirestoreRead, 2)
	metering.Add(ctx, metering.FirestoreWrite, 3)
	metering.Add(ctx, metering.PubSubPublished, 1)
	inv.End(ctx, log, metering.Failed, slog.String("trigger", "written"))

	want := line{Severity: "INFO", Message: metering.Message, Function: "Reconcile", Outcome: "error", Trigger: "written",
		Usage: metering.Usage{FirestoreReads: 2, FirestoreWrites: 3, PubSubPublished: 1}}
	if diff := cmp.Diff(want, decodeLine(t, buf.Bytes())); diff != "" {
		t.Errorf("invocation line (-want +got):\n%s", diff)
	}
}

func TestUsageArithmetic(t *testing.T) {
	a := metering.Usage{FirestoreReads: 5, ProviderGet: 3, PubSubPublished: 1}
	b := metering.Usage{FirestoreReads: 2, ProviderGet: 1, ProviderErrors: 4}
	if diff := cmp.Diff(a, a.Plus(b).Minus(b)); diff != "" {
		t.Errorf("a+b-b (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(metering.Usage{FirestoreReads: 7, ProviderGet: 4, ProviderErrors: 4, PubSubPublished: 1}, a.Plus(b)); diff != "" {
		t.Errorf("a+b (-want +got):\n%s", diff)
	}
}

// TestUsageOnATextLine: with LOG_FORMAT=text the invocation line shows the
// usage as fields, as the JSON line does, not as a Go struct.
func TestUsageOnATextLine(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewTextHandler(&b, nil))
	log.Info("invocation", slog.Any("usage", metering.Usage{FirestoreReads: 2, ProviderGet: 1}))
	for _, want := range []string{"usage.firestoreReads=2", "usage.providerGet=1", "usage.pubsubPublished=0"} {
		if !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("text line %q lacks %s", b.String(), want)
		}
	}
	if bytes.Contains(b.Bytes(), []byte("{")) {
		t.Errorf("text line %q prints the usage as a struct", b.String())
	}
	var j bytes.Buffer
	slog.New(slog.NewJSONHandler(&j, nil)).Info("invocation", slog.Any("usage", metering.Usage{FirestoreReads: 2}))
	var line struct{ Usage map[string]int64 }
	if err := json.Unmarshal(j.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(metering.Usage{FirestoreReads: 2})
	var want map[string]int64
	json.Unmarshal(raw, &want)
	if diff := cmp.Diff(want, line.Usage); diff != "" {
		t.Errorf("JSON line's usage (-the struct's JSON +the line's):\n%s", diff)
	}
}
