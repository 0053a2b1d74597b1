package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
)

// TestRemovedProvider: a proxy whose provider was removed from PROVIDERS
// while it lived. A look at it fails it once, naming the provider and
// PROVIDERS, rather than retrying for ever; deleting it completes, leaving
// its VM to the operator with an error line that names it.
func TestRemovedProvider(t *testing.T) {
	const vm, address = "gce://old-project/us-central1-a/proxy-" + uid, "gce-address://old-project/us-central1/proxy-" + uid
	type result struct {
		Phase       proxy.Phase
		Gone        bool
		Writes      int
		MockCalls   int
		Message     bool // the status or the log names the provider and PROVIDERS
		LeftVMLines int
	}
	cases := map[string]struct {
		reason string
		// deleting requests the proxy's deletion before the runs.
		deleting bool
		// triggers are the runs, in order.
		triggers []proxy.Reason
		want     result
	}{
		"LookFailsOnce": {
			reason:   "the drift look the collector asks for fails the proxy, and the sweep after it changes nothing",
			triggers: []proxy.Reason{proxy.ReasonDrift, proxy.ReasonSweep, proxy.ReasonDrift},
			want:     result{Phase: proxy.PhaseFailed, Writes: 1, Message: true},
		},
		"DeletionCompletes": {
			reason:   "a deletion deletes the document at once; the VM and address are the operator's, and an error line says which",
			deleting: true,
			triggers: []proxy.Reason{proxy.ReasonWritten},
			want:     result{Gone: true, Writes: 1, Message: true, LeftVMLines: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{})
			reg := provider.NewRegistry()
			if err := reg.Register(mock.Type, func(context.Context) (provider.Provider, error) { return w.mock, nil }); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			r := reconcile.New(w.store, provider.NewSet(reg), w.queue, nil, w.clock, logging.New(&logs, slog.LevelInfo), reconcile.Options{})
			w.create(proxy.Spec{Provider: "gcp", Placement: proxy.Placement{Region: "us-central1"}, IPPolicy: proxy.IPStatic})
			w.update(func(p *proxy.Proxy) {
				p.Status.Phase, p.Status.ProviderID, p.Status.Endpoint = proxy.PhaseReady, vm, "198.51.100.7:3128"
				p.Reconciler.AddressID = address
			})
			if tc.deleting {
				w.requestDeletion()
			}
			w.forget()
			mockCalls := w.mock.Calls(mock.MethodCreate) + w.mock.Calls(mock.MethodGet) + w.mock.Calls(mock.MethodDelete)

			for _, reason := range tc.triggers {
				if err := r.Reconcile(context.Background(), w.key, reconcile.Trigger{Reason: reason}); err != nil {
					t.Fatalf("%s\nReconcile(%s) = %v, want nil: nothing a retry would mend", tc.reason, reason, err)
				}
			}

			got := result{Writes: w.writes,
				MockCalls: w.mock.Calls(mock.MethodCreate) + w.mock.Calls(mock.MethodGet) + w.mock.Calls(mock.MethodDelete) - mockCalls}
			text := logs.String()
			if p := w.doc(); p == nil {
				got.Gone = true
			} else {
				got.Phase = p.Status.Phase
				text += p.Status.Message
			}
			got.Message = strings.Contains(text, `"gcp"`) && strings.Contains(text, "PROVIDERS: mock")
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var l map[string]any
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(l["message"].(string), "proxy deleted; its VM was left to the operator") &&
					l["severity"] == "ERROR" && l["providerID"] == vm && l["addressID"] == address {
					got.LeftVMLines++
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s\nlogs:\n%s", tc.reason, diff, logs.String())
			}
		})
	}
}
