package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// caller is who made a request.
type caller struct {
	// email is the verified email, lowercase; "" for no identity.
	email string
	// admin: the email is a platform admin's (Options.Admins).
	admin bool
}

// identify reads the caller's email from the ID token Cloud Run verified.
//
// The function is not public: Cloud Run lets a request through only with
// a Google-signed ID token for its URL from an allowed invoker, and it has
// checked that token's signature, expiry and audience before the request
// reaches this code (it may even strip the signature). So the token is
// only decoded here, never verified again — and never trusted for
// anything but the email. X-Serverless-Authorization comes first because
// when a client sends both headers Cloud Run verifies that one and passes
// Authorization through untouched, for the client's own use: reading
// Authorization first would let a caller name anyone.
//
// A request with neither header is the local identity's (Options.
// LocalIdentity, set only by the local stack), or no one's. A header with
// a token that carries no email is no one's: a token without the email
// claim (a service account's, asked for without format=full or
// --include-email) says nothing this API can authorize.
//
// A request that repeats either header is refused (400) before either is
// read: which of two tokens Cloud Run verified, and which one a reader of
// the first value would take, need not be the same one.
func (a *API) identify(r *http.Request) (caller, *apiError) {
	for _, h := range identityHeaders {
		if n := len(r.Header.Values(h)); n > 1 {
			e := invalid(proxy.FieldError{Field: h, Reason: ReasonIdentityHeaderRepeated,
				Description: fmt.Sprintf("comes %d times: send one identity, one %s header", n, h)})
			e.metadata = map[string]string{"header": h}
			return caller{}, e
		}
	}
	header := r.Header.Get("X-Serverless-Authorization")
	if header == "" {
		header = r.Header.Get("Authorization")
	}
	var email string
	switch {
	case header != "":
		email = tokenEmail(header)
	case a.opts.LocalIdentity != "":
		email = a.opts.LocalIdentity
	}
	e, ok := tenancy.NormalizeEmail(email)
	if !ok {
		err := newError(http.StatusUnauthorized, ReasonUnauthenticated,
			"the request carries no identity: send an ID token with an email claim as Authorization: Bearer TOKEN (gcloud auth print-identity-token; a service account's with its email, --include-email or format=full)")
		return caller{}, err
	}
	return caller{email: e, admin: a.opts.Admins.Contains(e)}, nil
}

// identityHeaders are the headers that carry the caller's identity.
var identityHeaders = []string{"X-Serverless-Authorization", "Authorization"}

// tokenEmail is the email claim of a Bearer ID token, decoded only, or ""
// when there is none or the token says it is not verified.
func tokenEmail(header string) string {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return ""
	}
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified *bool  `json:"email_verified"`
	}
	if json.Unmarshal(payload, &claims) != nil || (claims.EmailVerified != nil && !*claims.EmailVerified) {
		return ""
	}
	return claims.Email
}
