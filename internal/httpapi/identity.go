package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/egress-proxies/egress/internal/iap"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// caller is who made a request.
type caller struct {
	// email is the verified email, lowercase; "" for no identity.
	email string
	// admin: the email is a platform admin's (Options.Admins).
	admin bool
	// local: the request carried no identity and acts as
	// Options.LocalIdentity (the local stack).
	local bool
	// iap: the identity is IAP's signed assertion's.
	iap bool
}

// Caller is who a request is, as the API decides it: what the console
// shows and offers follows from it and from the caller's role in each
// namespace, by the same table (tenancy.Allowed).
type Caller struct {
	Email string
	Admin bool
	// Local is set when the request carried no identity and the API took
	// it as LOCAL_IDENTITY's, which only the local stack sets.
	Local bool
}

// Identify is who r is, or the API's answer to a request without a
// usable identity (an error whose Error() is the API's message).
func (a *API) Identify(r *http.Request) (Caller, error) {
	c, e := a.identify(r)
	if e != nil {
		return Caller{}, e
	}
	return Caller{Email: c.email, Admin: c.admin, Local: c.local}, nil
}

// IAPVerifier verifies Identity-Aware Proxy's signed header; *iap.Verifier
// satisfies it. Verify returns the assertion's email, or an error that
// wraps iap.ErrInvalid for an assertion that breaks a rule (any other is
// the verifier's own failure, such as keys it could not fetch).
type IAPVerifier interface {
	Verify(ctx context.Context, assertion string) (string, error)
}

// identify reads the caller's email from the ID token Cloud Run verified,
// or from IAP's signed assertion when the request carries one
// (identifyIAP).
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
	if assertion := r.Header.Get(iap.Header); assertion != "" {
		return a.identifyIAP(r, assertion)
	}
	header := r.Header.Get("X-Serverless-Authorization")
	if header == "" {
		header = r.Header.Get("Authorization")
	}
	var email string
	local := false
	switch {
	case header != "":
		email = tokenEmail(header)
	case a.opts.LocalIdentity != "":
		email, local = a.opts.LocalIdentity, true
	}
	e, ok := tenancy.NormalizeEmail(email)
	if !ok || (!local && isIAPAgent(e)) {
		// IAP's own token alone, without the assertion it signs beside
		// it, names no person.
		err := newError(http.StatusUnauthorized, ReasonUnauthenticated,
			"the request carries no identity: send an ID token with an email claim as Authorization: Bearer TOKEN (gcloud auth print-identity-token; a service account's with its email, --include-email or format=full)")
		return caller{}, err
	}
	return caller{email: e, admin: a.opts.Admins.Contains(e), local: local}, nil
}

// identifyIAP is the identity of a request that came through
// Identity-Aware Proxy: the email of its signed assertion, verified here
// (package iap), since Cloud Run does not verify it.
//
// IAP calls Cloud Run with an ID token of its own service agent
// (service-PROJECT_NUMBER@gcp-sa-iap.iam.gserviceaccount.com) in
// X-Serverless-Authorization: that token is IAP's hop, not a second
// identity. Any other ID token beside an assertion — in Authorization, or
// someone else's in X-Serverless-Authorization — is refused (400): one
// request, one identity, and nobody chooses which of two the API
// believes.
func (a *API) identifyIAP(r *http.Request, assertion string) (caller, *apiError) {
	if a.opts.IAP == nil {
		return caller{}, newError(http.StatusUnauthorized, ReasonIAPNotEnabled,
			"the request carries an IAP assertion (%s), but this deployment does not take them (IAP_AUDIENCE is unset): send an ID token as Authorization: Bearer TOKEN", iap.Header)
	}
	xsa := r.Header.Get("X-Serverless-Authorization")
	if r.Header.Get("Authorization") != "" || (xsa != "" && !isIAPAgent(strings.ToLower(tokenEmail(xsa)))) {
		e := invalid(proxy.FieldError{Field: iap.Header, Reason: ReasonIdentityAmbiguous,
			Description: "comes with an ID token: send one identity, the IAP assertion (through the console) or an ID token (from the CLI), not both"})
		e.code = http.StatusBadRequest
		return caller{}, e
	}
	email, err := a.opts.IAP.Verify(r.Context(), assertion)
	switch {
	case errors.Is(err, iap.ErrInvalid):
		return caller{}, newError(http.StatusUnauthorized, ReasonIAPAssertionInvalid, "%v", err)
	case err != nil:
		a.log.ErrorContext(r.Context(), "IAP assertion not verified", slog.Any("error", err))
		return caller{}, newError(http.StatusServiceUnavailable, ReasonIAPUnavailable, "the IAP assertion could not be verified now (IAP's keys were out of reach); retry later")
	}
	e, ok := tenancy.NormalizeEmail(email)
	if !ok {
		return caller{}, newError(http.StatusUnauthorized, ReasonIAPAssertionInvalid, "the IAP assertion's email %q is not an email", email)
	}
	return caller{email: e, admin: a.opts.Admins.Contains(e), iap: true}, nil
}

// isIAPAgent reports whether email is IAP's service agent, which calls
// Cloud Run on IAP's behalf.
func isIAPAgent(email string) bool {
	return strings.HasPrefix(email, "service-") && strings.HasSuffix(email, "@gcp-sa-iap.iam.gserviceaccount.com")
}

// identityHeaders are the headers that carry the caller's identity.
var identityHeaders = []string{"X-Serverless-Authorization", "Authorization", iap.Header}

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
