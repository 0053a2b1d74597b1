package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/version"
	"github.com/egress-proxies/egress/internal/version/versiontest"
)

// TestVersionHeader: every answer of the API, a refusal as much as a
// success, says the deployment's release in Egress-Version, as
// CHANGELOG.md names it, so a caller can tell which release it talks to.
func TestVersionHeader(t *testing.T) {
	e := memEnv(t)
	want := versiontest.Changelog(t)
	cases := map[string]struct {
		reason string
		path   string
	}{
		"Health":       {reason: "the health check", path: "/healthz"},
		"Unauthorized": {reason: "a request without an identity, refused before any route", path: "/v1/namespaces"},
		"NotFound":     {reason: "a path the API does not have", path: "/nowhere"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, err := http.Get(e.url + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if diff := cmp.Diff(want, resp.Header.Get(version.Header)); diff != "" {
				t.Errorf("%s: GET %s (%d): %s (-CHANGELOG.md's newest +the header):\n%s", tc.reason, tc.path, resp.StatusCode, version.Header, diff)
			}
		})
	}
}
