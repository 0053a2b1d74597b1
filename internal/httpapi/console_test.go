package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
)

// TestConsoleTail: a Failed proxy's console lines are shown to the
// namespace's editors and owners, in a get and in a list; a viewer and an
// admin who is not a member see the status, its message with the reason,
// and no console lines.
func TestConsoleTail(t *testing.T) {
	e := memEnv(t)
	p := e.seed()
	const msg = "Instance mock://x was not ready within 10m0s. 3 boots in a row failed; the proxy is not retried."
	tail := []string{"cloud-init: app exited 1", "cloud-init: giving up"}
	p.Status.Phase, p.Status.Message, p.Status.ConsoleTail = proxy.PhaseFailed, msg, tail
	if _, err := e.store.UpdateStatus(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason, who string
		want        []string
	}{
		"Owner":  {reason: "an owner", who: owner, want: tail},
		"Editor": {reason: "an editor, who may have written the cloud-init", who: editor, want: tail},
		"Viewer": {reason: "a viewer reads the reason, not what the VM printed", who: viewer},
		"Admin":  {reason: "an admin who is not a member sees no console lines", who: admin},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, b := e.do(tc.who, "GET", "/v1/namespaces/team-a/proxies/p", "")
			_, lb := e.do(tc.who, "GET", "/v1/namespaces/team-a/proxies", "")
			var page struct{ Proxies []resource }
			if err := json.Unmarshal(lb, &page); err != nil || len(page.Proxies) != 1 {
				t.Fatalf("list: %v, %s", err, lb)
			}
			for what, r := range map[string]resource{"get": decodeResource(t, b), "list": page.Proxies[0]} {
				if diff := cmp.Diff(tc.want, r.Status.ConsoleTail); diff != "" {
					t.Errorf("%s: consoleTail in a %s (-want +got):\n%s", tc.reason, what, diff)
				}
				if r.Status.Message != msg {
					t.Errorf("%s: message in a %s %q, want the reason %q", tc.reason, what, r.Status.Message, msg)
				}
			}
		})
	}
}
