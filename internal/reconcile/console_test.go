package reconcile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
)

// TestConsoleTailKeepsNoSecret: a proxy that failed its boots keeps the
// reason in status.message, and its console's last lines apart, where the
// API shows them to editors and owners only; a line that carries the
// proxy's credentials or a value of the spec's cloud-init is removed
// before anything is stored.
func TestConsoleTailKeepsNoSecret(t *testing.T) {
	const cloudInit = "#cloud-config\nwrite_files:\n  - path: /etc/app.env\n    content: DB_PASSWORD=correct-horse-battery\n"
	cases := map[string]struct {
		reason  string
		spec    proxy.Spec
		printed func(p *proxy.Proxy) []string
		secrets func(p *proxy.Proxy) []string
		kept    []string
	}{
		"Credentials": {
			reason: "the proxy's username or password on a line: the line goes",
			printed: func(p *proxy.Proxy) []string {
				c := p.Reconciler.Credentials
				return []string{"curl -x http://" + c.Username + ":" + c.Password + "@127.0.0.1:3128", "user " + c.Username, "tinyproxy: cannot bind port 3128"}
			},
			secrets: func(p *proxy.Proxy) []string {
				return []string{p.Reconciler.Credentials.Username, p.Reconciler.Credentials.Password}
			},
			kept: []string{"tinyproxy: cannot bind port 3128"},
		},
		"CloudInit": {
			reason: "a value of the spec's cloud-init on a line: the line goes",
			spec:   proxy.Spec{CloudInit: cloudInit},
			printed: func(*proxy.Proxy) []string {
				return []string{"app: env DB_PASSWORD=correct-horse-battery", "app: password correct-horse-battery rejected", "app: exited 1"}
			},
			secrets: func(*proxy.Proxy) []string { return []string{"correct-horse-battery"} },
			kept:    []string{"app: exited 1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{})
			w.mock.NeverReady(3)
			w.create(tc.spec)
			w.reconcile(reconcile.Trigger{})
			for range 2 {
				w.clock.Advance(reconcile.DefaultBootTimeout + time.Second)
				w.sweep()
			}
			p := w.doc()
			w.mock.Print(p.Status.ProviderID, tc.printed(p)...)
			w.clock.Advance(reconcile.DefaultBootTimeout + time.Second)
			w.sweep()
			p = w.doc()
			if p.Status.Phase != proxy.PhaseFailed {
				t.Fatalf("phase %s, want Failed", p.Status.Phase)
			}
			stored := p.Status.Message
			for _, c := range p.Status.Conditions {
				stored += "\n" + c.Message
			}
			for _, want := range []string{"was not ready within", "3 boots in a row failed"} {
				if !strings.Contains(p.Status.Message, want) {
					t.Errorf("message %q lacks the reason %q", p.Status.Message, want)
				}
			}
			stored += "\n" + strings.Join(p.Status.ConsoleTail, "\n")
			for _, s := range tc.secrets(p) {
				if strings.Contains(stored, s) {
					t.Errorf("%s: the status stores %q:\n%s", tc.reason, s, stored)
				}
			}
			want := append([]string{"mock: instance proxy-" + uid + " created; booting"}, tc.kept...)
			if diff := cmp.Diff(want, p.Status.ConsoleTail); diff != "" {
				t.Errorf("%s: status.consoleTail (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestSecretFragments: what of a cloud-init counts as its values — never
// its YAML keys, which cloud-init's own lines name, nor words too short to
// tell from any other.
func TestSecretFragments(t *testing.T) {
	got := reconcile.SecretFragments("#cloud-config\nwrite_files:\n  - path: /etc/app.env\n    content: DB_PASSWORD=correct-horse-battery\nruncmd:\n  - [sh, -c, \"echo 'tok3n-abcdef' > /x\"]\n")
	want := []string{"#cloud-config", "/etc/app.env", "DB_PASSWORD", "correct-horse-battery", "tok3n-abcdef"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fragments (-want +got):\n%s", diff)
	}
}
