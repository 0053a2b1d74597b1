package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/googleapi"

	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/tenancy"
)

type nsResource struct {
	Name       string                  `json:"name"`
	Members    map[string]tenancy.Role `json:"members"`
	Quota      int                     `json:"quota"`
	ProxyCount int64                   `json:"proxyCount"`
}

func decodeNS(t *testing.T, b []byte) nsResource {
	t.Helper()
	var r nsResource
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("not a namespace: %v\n%s", err, b)
	}
	return r
}

// TestNamespaces: what an admin and an owner do with namespaces, step by
// step, as the docs tell it.
func TestNamespaces(t *testing.T) {
	e := memEnv(t)
	const path = "/v1/namespaces/team-b"
	steps := []struct {
		reason, who, method, path, body string
		code                            int
		want                            *nsResource
	}{
		{reason: "an admin creates a namespace; the quota defaults to NAMESPACE_QUOTA and emails are lowercase", who: admin, method: "PUT", path: path,
			body: `{"members":{"Alice@Example.com":"owner"}}`, code: 201, want: &nsResource{Name: "team-b", Members: map[string]tenancy.Role{"alice@example.com": "owner"}, Quota: 20}},
		{reason: "the same request again is the namespace", who: admin, method: "PUT", path: path, body: `{"members":{"alice@example.com":"owner"},"quota":20}`, code: 200,
			want: &nsResource{Name: "team-b", Members: map[string]tenancy.Role{"alice@example.com": "owner"}, Quota: 20}},
		{reason: "another request for the name is a conflict", who: admin, method: "PUT", path: path, body: `{"quota":5}`, code: 409},
		{reason: "its owner adds members, and the merge patch keeps the others", who: "alice@example.com", method: "PATCH", path: path,
			body: `{"members":{"bob@example.com":"editor","carol@example.com":"viewer"}}`, code: 200,
			want: &nsResource{Name: "team-b", Members: map[string]tenancy.Role{"alice@example.com": "owner", "bob@example.com": "editor", "carol@example.com": "viewer"}, Quota: 20}},
		{reason: "null removes a member; repeating the quota it has needs no admin", who: "alice@example.com", method: "PATCH", path: path,
			body: `{"members":{"carol@example.com":null},"quota":20}`, code: 200,
			want: &nsResource{Name: "team-b", Members: map[string]tenancy.Role{"alice@example.com": "owner", "bob@example.com": "editor"}, Quota: 20}},
		{reason: "an owner does not change the quota", who: "alice@example.com", method: "PATCH", path: path, body: `{"quota":50}`, code: 403},
		{reason: "an editor does not change members", who: "bob@example.com", method: "PATCH", path: path, body: `{"members":{"bob@example.com":"owner"}}`, code: 403},
		{reason: "the removed member is an outsider now", who: "carol@example.com", method: "GET", path: path, code: 403},
		{reason: "an editor creates a proxy", who: "bob@example.com", method: "POST", path: path + "/proxies", body: body("p", goodSpec), code: 201},
		{reason: "a namespace that holds a proxy does not go", who: admin, method: "DELETE", path: path, code: 409},
		{reason: "its count shows", who: "bob@example.com", method: "GET", path: path, code: 200,
			want: &nsResource{Name: "team-b", Members: map[string]tenancy.Role{"alice@example.com": "owner", "bob@example.com": "editor"}, Quota: 20, ProxyCount: 1}},
	}
	for i, s := range steps {
		resp, b := e.do(s.who, s.method, s.path, s.body)
		if resp.StatusCode != s.code {
			t.Fatalf("step %d: %s\n%s %s as %s: %d, want %d\n%s", i, s.reason, s.method, s.path, s.who, resp.StatusCode, s.code, b)
		}
		if s.want != nil {
			if diff := cmp.Diff(*s.want, decodeNS(t, b)); diff != "" {
				t.Errorf("step %d: %s\n(-want +got):\n%s", i, s.reason, diff)
			}
		}
		if s.code == 409 && s.method == "DELETE" {
			if got := decodeErr(t, b); got.Error.Status != "FAILED_PRECONDITION" || !strings.Contains(got.Error.Message, "holds 1 proxies") {
				t.Errorf("step %d: %s\nthe refusal names the count: %s", i, s.reason, b)
			}
		}
	}

	// Each lists what they may see.
	if resp, b := e.do(admin, "PUT", "/v1/namespaces/team-c", `{"members":{"carol@example.com":"viewer","dave@example.com":"owner"}}`); resp.StatusCode != 201 {
		t.Fatalf("create team-c: %d %s", resp.StatusCode, b)
	}
	for who, want := range map[string][]string{admin: {"team-b", "team-c"}, "bob@example.com": {"team-b"}, "carol@example.com": {"team-c"}, "dave@example.com": {"team-c"}, stranger: nil} {
		_, b := e.do(who, "GET", "/v1/namespaces", "")
		var page struct{ Namespaces []nsResource }
		json.Unmarshal(b, &page)
		var got []string
		for _, ns := range page.Namespaces {
			got = append(got, ns.Name)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("namespaces %s sees (-want +got):\n%s", who, diff)
		}
	}
	if resp, b := e.do(admin, "DELETE", "/v1/namespaces/team-c", ""); resp.StatusCode != 200 {
		t.Errorf("deleting an empty namespace: %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do(admin, "GET", "/v1/namespaces/team-c", ""); resp.StatusCode != 404 {
		t.Errorf("a deleted namespace: %d, want 404 to an admin", resp.StatusCode)
	}
}

// TestErrorsParseAsGoogleErrors: Google's own client library reads an
// error of ours as a *googleapi.Error whose details hold the BadRequest
// with its field violations and the ErrorInfo with reason and domain.
func TestErrorsParseAsGoogleErrors(t *testing.T) {
	e := memEnv(t)
	e.seed()
	req, _ := http.NewRequest("POST", e.url+"/v1/namespaces/team-a/proxies", strings.NewReader(body("a",
		`{"provider":"gcp","placement":{"region":"us-central1","zone":"europe-west4-a"},"allowedSourceRanges":["203.0.113.0/24"]}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token(editor))
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var gerr *googleapi.Error
	if err := googleapi.CheckResponse(resp); !errors.As(err, &gerr) {
		t.Fatalf("CheckResponse: %v, want a *googleapi.Error", err)
	}
	if gerr.Code != 400 || !strings.Contains(gerr.Message, "spec.placement.zone") {
		t.Errorf("code %d message %q, want 400 naming the zone", gerr.Code, gerr.Message)
	}
	want := []any{
		map[string]any{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": []any{map[string]any{
			"field": "spec.placement.zone", "reason": "ZONE_NOT_IN_REGION",
			"description": `zone "europe-west4-a" is not in region "us-central1": want us-central1-a, us-central1-b, …`}}},
		map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "ZONE_NOT_IN_REGION", "domain": httpapi.ErrorDomain},
	}
	if diff := cmp.Diff(want, gerr.Details); diff != "" {
		t.Errorf("details as googleapi reads them (-want +got):\n%s", diff)
	}
}

// TestOpenAPIDocumentsEveryRoute: the OpenAPI document the API serves
// names exactly its routes (and /healthz and itself), each with its 400
// and 401 answers.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	e := memEnv(t)
	resp, b := e.do("", "GET", httpapi.OpenAPIPath, "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s without identity: %d", httpapi.OpenAPIPath, resp.StatusCode)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("the OpenAPI document is not JSON: %v", err)
	}
	var documented []string
	answers := map[string]map[string]any{} // "METHOD path" → responses
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			key := strings.ToUpper(method) + " " + path
			documented = append(documented, key)
			var op struct {
				Responses map[string]any `json:"responses"`
			}
			json.Unmarshal(raw, &op)
			answers[key] = op.Responses
		}
	}
	want := []string{"GET /healthz", "GET " + httpapi.OpenAPIPath}
	for _, r := range httpapi.Routes() {
		want = append(want, r.Method+" "+r.Path)
		for _, code := range []string{"401", "400"} {
			if _, ok := answers[r.Method+" "+r.Path][code]; !ok {
				t.Errorf("the OpenAPI document gives %s %s no %s answer", r.Method, r.Path, code)
			}
		}
	}
	if diff := cmp.Diff(want, documented, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("routes (-the API's +the OpenAPI document's):\n%s", diff)
	}
}
