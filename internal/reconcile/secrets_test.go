package reconcile_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
)

// recordedSecrets is a Secret Manager that holds every version and
// records which were read.
type recordedSecrets struct{ read []string }

func (s *recordedSecrets) Access(_ context.Context, version string) (string, error) {
	s.read = append(s.read, version)
	return "#cloud-config\n", nil
}

// TestSecretsOfTheNamespaceOnly: the reconciler reads a document's
// cloudInitSecret only when it is one of the document's namespace's
// secrets, PREFIX + namespace + "_" + NAME, whatever wrote the document:
// one that bypassed the API (or was written before the rule) and names
// another namespace's secret fails without the secret being read and
// without a VM.
func TestSecretsOfTheNamespaceOnly(t *testing.T) {
	const prefix = "projects/p/secrets/egress-"
	cases := map[string]struct {
		reason, version string
		wantRead        bool
	}{
		"AnotherNamespaces":    {reason: "team-a-prod's secret, named in team-a", version: prefix + "team-a-prod_init/versions/1"},
		"OldFormOfAnother":     {reason: "the form that let team-a name team-a-prod's secrets", version: prefix + "team-a-prod-init/versions/1"},
		"OutsideThePrefix":     {reason: "a secret of the project outside the prefix", version: "projects/p/secrets/db-password/versions/1"},
		"NamespacesOwn":        {reason: "team-a's own", version: prefix + "team-a_init/versions/1", wantRead: true},
		"NamespacesOwnLatest":  {reason: "team-a's own, its latest version", version: prefix + "team-a_init-2/versions/latest", wantRead: true},
		"AnotherProjectsOwner": {reason: "the prefix names the project", version: "projects/q/secrets/egress-team-a_init/versions/1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{})
			rec := &recordedSecrets{}
			w.r = reconcile.New(w.store, providers{w.mock}, w.queue, rec, w.clock, slog.New(slog.DiscardHandler), reconcile.Options{CloudInitSecretPrefix: prefix})
			w.create(proxy.Spec{CloudInitSecret: tc.version})
			w.reconcile(reconcile.Trigger{})
			p := w.doc()
			if got := slices.Contains(rec.read, tc.version); got != tc.wantRead {
				t.Errorf("%s\nsecret read: %v, want %v", tc.reason, got, tc.wantRead)
			}
			if tc.wantRead {
				if p.Status.Phase == proxy.PhaseFailed {
					t.Errorf("%s\nphase Failed: %s", tc.reason, p.Status.Message)
				}
				return
			}
			if p.Status.Phase != proxy.PhaseFailed || !strings.Contains(p.Status.Message, tc.version) || !strings.Contains(p.Status.Message, prefix+"team-a_") {
				t.Errorf("%s\nphase %s, message %q: want Failed, naming the secret and the namespace's form", tc.reason, p.Status.Phase, p.Status.Message)
			}
			if n := len(w.mock.Instances()); n != 0 {
				t.Errorf("%s\n%d VMs, want none", tc.reason, n)
			}
		})
	}
}
