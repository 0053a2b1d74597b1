package openapitest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/httpapi/openapitest"
)

const proxyJSON = `{"name":"p","namespace":"d","uid":"0b7e4d2c-6a5f-4c1e-9f3a-2d8b7c6e5a41","generation":1,
 "spec":{"provider":"mock","placement":{"region":"us-central1"},"port":3128,"allowedSourceRanges":["203.0.113.0/24"]},
 "status":{"phase":"Pending"},"createTime":"2026-12-03T10:00:00Z","updateTime":"2026-12-03T10:00:00Z"}`

// TestValidatorRefusesWhatTheDocumentDoesNot: the checks the API's tests
// lean on fail where they should, so their silence means something.
func TestValidatorRefusesWhatTheDocumentDoesNot(t *testing.T) {
	v, err := openapitest.New(httpapi.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		method, path string
		status       int
		body         string
		want         string // "" for valid
	}{
		"Proxy":               {"GET", "/v1/namespaces/d/proxies/p", 200, proxyJSON, ""},
		"Rotate":              {"POST", "/v1/namespaces/d/proxies/p:rotate", 202, proxyJSON, ""},
		"UndocumentedField":   {"GET", "/v1/namespaces/d/proxies/p", 200, strings.Replace(proxyJSON, `"generation":1`, `"generation":1,"owner":"x"`, 1), "owner"},
		"UnknownPhase":        {"GET", "/v1/namespaces/d/proxies/p", 200, strings.Replace(proxyJSON, "Pending", "Booting", 1), "Booting"},
		"UndocumentedStatus":  {"GET", "/v1/namespaces/d/proxies/p", 201, proxyJSON, "201"},
		"UndocumentedRoute":   {"POST", "/v1/namespaces/d/proxies/p:restart", 202, proxyJSON, "no such operation"},
		"ErrorWithoutDetails": {"GET", "/v1/namespaces/d/proxies/p", 404, `{"error":{"code":404,"status":"NOT_FOUND","message":"no"}}`, "details"},
		"Error": {"GET", "/v1/namespaces/d/proxies/p", 404,
			`{"error":{"code":404,"status":"NOT_FOUND","message":"no","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"PROXY_NOT_FOUND","domain":"egress-proxies"}]}}`, ""},
		"ErrorOfAnUnknownRoute": {"GET", "/v2/things", 404,
			`{"error":{"code":404,"status":"NOT_FOUND","message":"no","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"ROUTE_NOT_FOUND","domain":"egress-proxies"}]}}`, ""},
		"NotAnErrorOfAnUnknownRoute": {"GET", "/v2/things", 404, `404 page not found`, "not JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			err := v.Response(req, tc.status, http.Header{"Content-Type": {"application/json"}}, []byte(tc.body))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("valid answer refused: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("answer accepted, want a refusal naming %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("refusal %q does not name %q", err, tc.want)
			}
		})
	}
}

// TestValidatorChecksRequests: a client's request must be one the
// document allows.
func TestValidatorChecksRequests(t *testing.T) {
	v, err := openapitest.New(httpapi.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	ok := `{"name":"p","spec":{"placement":{"region":"us-central1"},"allowedSourceRanges":["203.0.113.0/24"]}}`
	bad := `{"name":"p","spec":{"placement":{"region":"us-central1"},"size":"large"}}`
	for body, want := range map[string]bool{ok: true, bad: false} {
		req := httptest.NewRequest("POST", "/v1/namespaces/d/proxies", nil)
		req.Header.Set("Content-Type", "application/json")
		if err := v.Request(req, []byte(body)); (err == nil) != want {
			t.Errorf("request %s: error %v, want valid=%v", body, err, want)
		}
	}
}
