package azure

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"
)

// entra is a stand-in of a Microsoft Entra authority: its OpenID
// configuration and its token endpoint, which records the client
// assertions it is sent.
type entra struct {
	mu         sync.Mutex
	assertions []string
	forms      []url.Values
}

func (e *entra) Do(req *http.Request) (*http.Response, error) {
	reply := func(v any) (*http.Response, error) {
		b, _ := json.Marshal(v)
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(b)), Request: req}, nil
	}
	base := "https://" + req.URL.Host + "/" + testSubscription
	switch {
	case strings.HasSuffix(req.URL.Path, "/.well-known/openid-configuration"):
		return reply(map[string]any{"token_endpoint": base + "/oauth2/v2.0/token", "authorization_endpoint": base + "/oauth2/v2.0/authorize",
			"issuer": base + "/v2.0"})
	case strings.HasSuffix(req.URL.Path, "/oauth2/v2.0/token"):
		body, _ := io.ReadAll(req.Body)
		form, _ := url.ParseQuery(string(body))
		e.mu.Lock()
		e.assertions = append(e.assertions, form.Get("client_assertion"))
		e.forms = append(e.forms, form)
		e.mu.Unlock()
		return reply(map[string]any{"token_type": "Bearer", "expires_in": 3600, "access_token": "an-azure-token"})
	}
	return &http.Response{StatusCode: http.StatusNotFound, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// TestCredentialPresentsTheGoogleIDToken: the federated credential sends
// Entra the function's Google ID token as its client assertion (of the
// JWT-bearer type), for the client id, and no secret of any kind; the
// Azure token it gets back is what ARM is sent.
func TestCredentialPresentsTheGoogleIDToken(t *testing.T) {
	authority := &entra{}
	cred, err := Credential(Federation{TenantID: testSubscription, ClientID: "22222222-3333-4444-8555-666666666666",
		Tokens: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "a-google-id-token"}), AuthorityHost: "https://login.example.test/",
		Transport: authority})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cred.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{"https://management.azure.com/.default"}})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Token != "an-azure-token" {
		t.Errorf("token = %q, want the authority's", tok.Token)
	}
	if diff := cmp.Diff([]string{"a-google-id-token"}, authority.assertions); diff != "" {
		t.Errorf("client assertions sent (-want +got):\n%s", diff)
	}
	form := authority.forms[0]
	got := map[string]string{"client_id": form.Get("client_id"), "client_assertion_type": form.Get("client_assertion_type"), "client_secret": form.Get("client_secret")}
	want := map[string]string{"client_id": "22222222-3333-4444-8555-666666666666", "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "client_secret": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the token request (-want +got):\n%s", diff)
	}
}
