package gc_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// listed lists a fixed set of instances, or fails to.
type listed struct {
	provider.Provider
	instances []provider.Instance
	err       error
}

func (l listed) ListByTag(context.Context) ([]provider.Instance, error) { return l.instances, l.err }

// messages records the reconcile requests whole.
type messages struct {
	mu  sync.Mutex
	got []proxy.ReconcileMessage
}

func (m *messages) Publish(_ context.Context, msg proxy.ReconcileMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, msg)
	return nil
}

// TestAccessPullRequest: each run asks once for the access lines of the
// VMs read by pull, naming what its listings found of them (this
// deployment's, with a status port and the status id each is asked
// with), and the providers listed completely; without such a provider or VM, it asks nothing.
func TestAccessPullRequest(t *testing.T) {
	hz := func(id, uid string, state provider.InstanceState) provider.Instance {
		return provider.Instance{ID: "hcloud://" + id, UID: uid, IP: "192.0.2." + id, Zone: "fsn1", State: state, StatusPort: 3128,
			StatusID: "s" + id, Deployment: provider.DefaultDeployment, CreatedAt: epoch}
	}
	otherDeployment := hz("3", "u3", provider.StateRunning)
	otherDeployment.Deployment = "staging"
	customCloudInit := hz("4", "u4", provider.StateRunning)
	customCloudInit.StatusPort = 0
	gce := provider.Instance{ID: "gce://p/z/vm", UID: "u5", State: provider.StateRunning, Deployment: provider.DefaultDeployment, CreatedAt: epoch}
	cases := map[string]struct {
		reason    string
		providers map[string]provider.Provider
		pulled    []string
		want      []proxy.ReconcileMessage
	}{
		"VMs read by pull": {
			reason: "this deployment's VMs with a status port are named, running or not; another deployment's, one without the port (its own cloud-init) and a GCE VM are not",
			providers: map[string]provider.Provider{
				"hetzner": listed{instances: []provider.Instance{hz("1", "u1", provider.StateRunning), hz("2", "u2", provider.StateStopped), otherDeployment, customCloudInit}},
				"gcp":     listed{instances: []provider.Instance{gce}},
			},
			pulled: []string{"hetzner"},
			want: []proxy.ReconcileMessage{{Reason: proxy.ReasonAccessPull, AccessPull: &proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{
				{Provider: "hetzner", ProviderID: "hcloud://1", UID: "u1", IP: "192.0.2.1", Zone: "fsn1", Port: 3128, StatusID: "s1", Running: true},
				{Provider: "hetzner", ProviderID: "hcloud://2", UID: "u2", IP: "192.0.2.2", Zone: "fsn1", Port: 3128, StatusID: "s2"},
			}}}},
		},
		"none of their VMs": {
			reason:    "a provider of VMs read by pull with none still gets the request, so the cursors of its VMs gone are deleted",
			providers: map[string]provider.Provider{"aws": listed{}},
			pulled:    []string{"aws"},
			want:      []proxy.ReconcileMessage{{Reason: proxy.ReasonAccessPull, AccessPull: &proxy.AccessPull{Listed: []string{"aws"}}}},
		},
		"a listing failed": {
			reason: "a provider that could not be listed is not named as listed, so its cursors are kept; the others are",
			providers: map[string]provider.Provider{
				"aws":     listed{err: errors.New("unavailable")},
				"hetzner": listed{instances: []provider.Instance{hz("1", "u1", provider.StateRunning)}},
			},
			pulled: []string{"aws", "hetzner"},
			want: []proxy.ReconcileMessage{{Reason: proxy.ReasonAccessPull, AccessPull: &proxy.AccessPull{Listed: []string{"hetzner"}, VMs: []proxy.PulledVM{
				{Provider: "hetzner", ProviderID: "hcloud://1", UID: "u1", IP: "192.0.2.1", Zone: "fsn1", Port: 3128, StatusID: "s1", Running: true},
			}}}},
		},
		"no such provider": {
			reason:    "a deployment of GCE VMs alone asks nothing",
			providers: map[string]provider.Provider{"gcp": listed{instances: []provider.Instance{gce}}},
		},
		"not read by pull here": {
			reason:    "VMs with a status port of a provider this deployment does not read by pull (a double of the VM side, in the benchmark) are asked for by no one",
			providers: map[string]provider.Provider{"hetzner": listed{instances: []provider.Instance{hz("1", "u1", provider.StateRunning)}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := &messages{}
			uids := uidSet("u1", "u2", "u3", "u4", "u5")
			c := gc.New(providersOf(t, tc.providers), &fakeStore{uids: uids}, q, clock.NewFake(epoch),
				slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), gc.Options{PulledTypes: tc.pulled})
			c.Run(context.Background())
			var got []proxy.ReconcileMessage
			for _, m := range q.got {
				if m.Reason == proxy.ReasonAccessPull {
					got = append(got, m)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\naccess-pull requests (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
