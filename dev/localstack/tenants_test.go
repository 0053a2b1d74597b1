package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// tenantSafety holds the local stack to what keeps one namespace from
// another and from the project's money, through the real functions:
// proxy first of namespace demo has just been rotated.
func (s *liveStack) tenantSafety(t *testing.T) {
	type answer struct {
		code   int
		status string
		reason string
		delay  string
		body   string
	}
	read := func(resp *http.Response) answer {
		t.Helper()
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct {
			Error struct {
				Status  string
				Details []struct {
					Type       string `json:"@type"`
					Reason     string
					RetryDelay string
				}
			}
		}
		json.Unmarshal(b, &e)
		a := answer{code: resp.StatusCode, status: e.Error.Status, body: string(b)}
		for _, d := range e.Error.Details {
			switch d.Type {
			case "type.googleapis.com/google.rpc.ErrorInfo":
				a.reason = d.Reason
			case "type.googleapis.com/google.rpc.RetryInfo":
				a.delay = d.RetryDelay
			}
		}
		return a
	}

	// A second rotation within ROTATE_MIN_INTERVAL (10m): 429, saying when.
	a := read(s.do(t, http.MethodPost, "/v1/namespaces/demo/proxies/first:rotate", nil))
	if a.code != 429 || a.status != "RESOURCE_EXHAUSTED" || a.reason != "ROTATED_RECENTLY" || !strings.HasSuffix(a.delay, "s") {
		t.Errorf("a second rotation at once: %d %s %s retryDelay %q; want 429 RESOURCE_EXHAUSTED ROTATED_RECENTLY with a RetryInfo\n%s", a.code, a.status, a.reason, a.delay, a.body)
	}

	// Namespace demo naming demo-prod's secret.
	spec := `{"name":"secret","spec":{"placement":{"region":"us-central1"},"allowedSourceRanges":["203.0.113.0/24"],"cloudInitSecret":"projects/demo-egress/secrets/egress-demo-prod_init/versions/latest"}}`
	a = read(s.do(t, http.MethodPost, "/v1/namespaces/demo/proxies", []byte(spec)))
	if a.code != 400 || a.reason != "SECRET_OUTSIDE_PREFIX" || !strings.Contains(a.body, `"spec.cloudInitSecret"`) {
		t.Errorf("demo naming demo-prod's secret: %d %s; want 400 naming spec.cloudInitSecret\n%s", a.code, a.reason, a.body)
	}

	// The last owner of demo (the local admin) removed.
	a = read(s.doAs(t, "", http.MethodPatch, "/v1/namespaces/demo", []byte(`{"members":{"local-admin@localhost":null}}`)))
	if a.code != 409 || a.status != "FAILED_PRECONDITION" || a.reason != "NAMESPACE_NEEDS_OWNER" {
		t.Errorf("removing demo's last owner: %d %s %s; want 409 FAILED_PRECONDITION NAMESPACE_NEEDS_OWNER\n%s", a.code, a.status, a.reason, a.body)
	}

	// Two identities in one request.
	req, err := http.NewRequest(http.MethodGet, s.url+"/v1/namespaces/demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Authorization", "Bearer "+unsignedToken("alice@example.com"))
	req.Header.Add("Authorization", "Bearer "+unsignedToken("local-admin@localhost"))
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	a = read(resp)
	if a.code != 400 || a.status != "INVALID_ARGUMENT" || a.reason != "IDENTITY_HEADER_REPEATED" {
		t.Errorf("two Authorization headers: %d %s %s; want 400 INVALID_ARGUMENT IDENTITY_HEADER_REPEATED\n%s", a.code, a.status, a.reason, a.body)
	}
}
