package azurefake

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// Grant is one token the token endpoint answered: who asked, how they
// proved it, for what.
type Grant struct {
	Tenant   string
	ClientID string
	// Method is "client_secret" or "client_assertion" (a federated
	// credential's: the functions' Google ID token).
	Method string
	Scope  string
	token  string
}

// AddClientSecret lets clientID have tokens by client_secret: a test's
// service principal (az login --service-principal -p SECRET).
func (s *Server) AddClientSecret(clientID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[clientID] = secret
}

// AddClientAssertion lets clientID have tokens by client_assertion (the
// JWT bearer assertion of a federated credential), check saying whether
// an assertion is one its federated credential trusts (nil: any).
func (s *Server) AddClientAssertion(clientID string, check func(jwt string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if check == nil {
		check = func(string) error { return nil }
	}
	s.assertions[clientID] = check
}

// AcceptToken makes ARM take a bearer token the token endpoint never
// granted: the fixed token of a client that asks no one for its tokens
// (the azure provider against a fake without AZURE_AUTHORITY_HOST).
func (s *Server) AcceptToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accepted[token] = true
}

// Grants returns every token the token endpoint answered, in order.
func (s *Server) Grants() []Grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Grant, len(s.grants))
	for i, g := range s.grants {
		g.token = ""
		out[i] = g
	}
	return out
}

var tokenRoutes = []route{
	// Entra ID's v2.0 endpoints of a tenant, as MSAL (Go's, in azidentity,
	// and Python's, in az) reads them: the OpenID configuration first,
	// then the token endpoint it names.
	{method: http.MethodGet, name: "openid", path: regexp.MustCompile(`^/([^/]+)(?:/v2\.0)?/\.well-known/openid-configuration$`), serve: (*Server).openID},
	{method: http.MethodPost, name: "token", path: regexp.MustCompile(`^/([^/]+)/oauth2/(?:v2\.0/)?token$`), serve: (*Server).token},
	// Instance discovery, which MSAL asks login.microsoftonline.com for
	// about an authority host it does not know; served here for a client
	// that asks the fake instead (see the package doc).
	{method: http.MethodGet, name: "discovery", path: regexp.MustCompile(`^/common/discovery/instance$`), serve: (*Server).discovery},
	// The cloud's metadata, which az cloud register reads from the
	// resource manager when endpoints are left out.
	{method: http.MethodGet, name: "metadata", path: regexp.MustCompile(`^/metadata/endpoints$`), serve: (*Server).metadata},
	// What az login lists after it has a token.
	{method: http.MethodGet, name: "subscriptions.list", auth: false, path: regexp.MustCompile(`(?i)^/subscriptions$`), serve: (*Server).subscriptions},
	{method: http.MethodGet, name: "subscriptions.get", auth: true, path: armPath(subPath), serve: (*Server).subscriptionGet},
	{method: http.MethodGet, name: "tenants.list", auth: false, path: regexp.MustCompile(`(?i)^/tenants$`), serve: (*Server).tenants},
}

// openID answers a tenant's OpenID configuration: its token endpoint on
// the fake. For ADFS's authority (".../adfs", which az registers for a
// custom cloud whose active directory ends so) the token endpoint is the
// fake's tenant's, so that MSAL Python reads the tenant from it.
func (s *Server) openID(w *writer, _ *http.Request, m []string) {
	tenant := m[0]
	if strings.EqualFold(tenant, "adfs") || strings.EqualFold(tenant, "organizations") || strings.EqualFold(tenant, "common") {
		tenant = s.tenant
	}
	base := s.URL + "/" + tenant
	w.json(http.StatusOK, map[string]any{
		"token_endpoint":                        base + "/oauth2/v2.0/token",
		"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
		"device_authorization_endpoint":         base + "/oauth2/v2.0/devicecode",
		"issuer":                                s.URL + "/" + tenant + "/v2.0",
		"jwks_uri":                              base + "/discovery/v2.0/keys",
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
		"response_types_supported":              []string{"code", "id_token", "code id_token", "id_token token"},
		"subject_types_supported":               []string{"pairwise"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      []string{"openid", "profile", "email", "offline_access"},
		"tenant_region_scope":                   "EU",
		"cloud_instance_name":                   "microsoftonline.com",
	})
}

// discovery answers instance discovery for the fake's own host.
func (s *Server) discovery(w *writer, _ *http.Request, _ []string) {
	host := strings.TrimPrefix(s.URL, "https://")
	w.json(http.StatusOK, map[string]any{
		"tenant_discovery_endpoint": s.URL + "/" + s.tenant + "/v2.0/.well-known/openid-configuration",
		"api-version":               "1.1",
		"metadata":                  []map[string]any{{"preferred_network": host, "preferred_cache": host, "aliases": []string{host}}},
	})
}

// metadata answers the cloud's endpoints in the shape of
// https://management.azure.com/metadata/endpoints?api-version=2019-05-01.
func (s *Server) metadata(w *writer, _ *http.Request, _ []string) {
	w.json(http.StatusOK, map[string]any{
		"name":            "AzureFake",
		"resourceManager": s.URL + "/",
		"authentication": map[string]any{
			"loginEndpoint":    s.URL + "/adfs",
			"audiences":        []string{ARMAudience},
			"tenant":           "common",
			"identityProvider": "AAD",
		},
		"graphAudience":   ARMAudience,
		"graph":           s.URL + "/",
		"galleryEndpoint": s.URL + "/",
		"portalEndpoint":  s.URL + "/",
		"suffixes":        map[string]any{"storage": "core.fake.invalid", "keyVaultDns": "vault.fake.invalid"},
	})
}

// ARMAudience is the resource whose tokens ARM takes (the public
// cloud's, https://management.core.windows.net/): a client asks for
// ARMAudience + ".default". The fake takes a token of any audience.
const ARMAudience = "https://management.core.windows.net/"

// tokenError answers the OAuth 2.0 error shape Entra ID writes.
func tokenError(w *writer, status int, code, description string) {
	w.json(status, map[string]any{"error": code, "error_description": description, "error_codes": []int{status}, "trace_id": w.s.newID(), "correlation_id": w.s.newID()})
}

// token answers client_credentials grants, with a client secret or a
// client assertion (RFC 7523), as Entra ID's v2.0 token endpoint does.
func (s *Server) token(w *writer, r *http.Request, m []string) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request", "AADSTS900144: the request body must be application/x-www-form-urlencoded")
		return
	}
	tenant, f := m[0], r.PostForm
	if !strings.EqualFold(tenant, s.tenant) && !strings.EqualFold(tenant, "adfs") {
		tokenError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("AADSTS90002: Tenant '%s' not found.", tenant))
		return
	}
	if gt := f.Get("grant_type"); gt != "client_credentials" {
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("AADSTS70003: the fake grants client_credentials only, not %q", gt))
		return
	}
	g := Grant{Tenant: s.tenant, ClientID: f.Get("client_id"), Scope: f.Get("scope")}
	switch {
	case f.Get("client_assertion") != "":
		g.Method = "client_assertion"
		check, ok := s.assertions[g.ClientID]
		if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
			tokenError(w, http.StatusBadRequest, "invalid_request", "AADSTS50027: client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
			return
		}
		if !ok {
			tokenError(w, http.StatusBadRequest, "unauthorized_client", fmt.Sprintf("AADSTS700016: Application with identifier '%s' was not found in the directory, or has no federated credential.", g.ClientID))
			return
		}
		if err := check(f.Get("client_assertion")); err != nil {
			tokenError(w, http.StatusUnauthorized, "invalid_client", fmt.Sprintf("AADSTS70021: No matching federated identity record found for presented assertion: %v", err))
			return
		}
	case f.Get("client_secret") != "":
		g.Method = "client_secret"
		secret, ok := s.secrets[g.ClientID]
		if !ok {
			tokenError(w, http.StatusBadRequest, "unauthorized_client", fmt.Sprintf("AADSTS700016: Application with identifier '%s' was not found in the directory.", g.ClientID))
			return
		}
		if secret != f.Get("client_secret") {
			tokenError(w, http.StatusUnauthorized, "invalid_client", fmt.Sprintf("AADSTS7000215: Invalid client secret provided for '%s'.", g.ClientID))
			return
		}
	default:
		tokenError(w, http.StatusUnauthorized, "invalid_client", "AADSTS7000216: 'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type.")
		return
	}
	g.token = s.accessToken(g)
	s.issued[g.token] = g
	s.grants = append(s.grants, g)
	w.json(http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": g.token})
}

// accessToken makes a JWT-shaped token of g's claims, unsigned in
// substance (the fake is its only reader; it looks tokens up). Called
// with s.mu held.
func (s *Server) accessToken(g Grant) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	nonce := make([]byte, 16)
	rand.Read(nonce)
	now := s.now().Unix()
	return enc(map[string]string{"typ": "JWT", "alg": "RS256", "kid": "azurefake"}) + "." +
		enc(map[string]any{"aud": strings.TrimSuffix(g.Scope, ".default"), "iss": s.URL + "/" + s.tenant + "/", "tid": s.tenant,
			"appid": g.ClientID, "oid": g.ClientID, "sub": g.ClientID, "iat": now, "nbf": now, "exp": now + 3599, "uti": hex.EncodeToString(nonce)}) +
		"." + base64.RawURLEncoding.EncodeToString(nonce)
}

// authenticate checks an ARM request's bearer token: one the token
// endpoint handed out. Called with s.mu held.
func (s *Server) authenticate(r *http.Request) *Fault {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return &Fault{Status: http.StatusUnauthorized, Code: "AuthenticationFailed", Message: "Authentication failed. The 'Authorization' header is missing."}
	}
	if _, ok := s.issued[tok]; !ok && !s.accepted[tok] {
		return &Fault{Status: http.StatusUnauthorized, Code: "InvalidAuthenticationToken", Message: "The access token is invalid."}
	}
	return nil
}

// subscriptions lists the one subscription, as ARM's Subscriptions_List
// does for a principal with a role in it.
func (s *Server) subscriptions(w *writer, r *http.Request, _ []string) {
	if f := s.authenticate(r); f != nil {
		w.error(*f)
		return
	}
	w.json(http.StatusOK, map[string]any{"value": []any{s.subscriptionView()}, "count": map[string]any{"type": "Total", "value": 1}})
}

func (s *Server) subscriptionGet(w *writer, _ *http.Request, _ []string) {
	w.json(http.StatusOK, s.subscriptionView())
}

func (s *Server) subscriptionView() map[string]any {
	return map[string]any{
		"id": "/subscriptions/" + s.subscription, "authorizationSource": "RoleBased", "managedByTenants": []any{},
		"subscriptionId": s.subscription, "tenantId": s.tenant, "displayName": "azurefake", "state": "Enabled",
		"subscriptionPolicies": map[string]any{"locationPlacementId": "Public_2014-09-01", "quotaId": "PayAsYouGo_2014-09-01", "spendingLimit": "Off"},
	}
}

// tenants lists the one tenant.
func (s *Server) tenants(w *writer, r *http.Request, _ []string) {
	if f := s.authenticate(r); f != nil {
		w.error(*f)
		return
	}
	w.json(http.StatusOK, map[string]any{"value": []any{map[string]any{
		"id": "/tenants/" + s.tenant, "tenantId": s.tenant, "countryCode": "DE", "displayName": "azurefake",
		"domains": []string{"azurefake.onmicrosoft.com"}, "tenantCategory": "Home", "defaultDomain": "azurefake.onmicrosoft.com", "tenantType": "AAD",
	}}})
}
