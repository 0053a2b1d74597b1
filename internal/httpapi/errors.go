package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// ErrorDomain is the domain of every ErrorInfo the API returns.
const ErrorDomain = "egress-proxies"

// Reasons of the errors that are not a field's rule (those carry the
// rule's own reason, proxy.Reason…, provider.Reason…).
const (
	ReasonUnauthenticated        = "IDENTITY_MISSING"
	ReasonNamespaceDenied        = "NAMESPACE_ACCESS_DENIED"
	ReasonRoleInsufficient       = "ROLE_INSUFFICIENT"
	ReasonAdminRequired          = "ADMIN_REQUIRED"
	ReasonNamespaceNotFound      = "NAMESPACE_NOT_FOUND"
	ReasonProxyNotFound          = "PROXY_NOT_FOUND"
	ReasonRouteNotFound          = "ROUTE_NOT_FOUND"
	ReasonMethodNotAllowed       = "METHOD_NOT_ALLOWED"
	ReasonProxyExists            = "PROXY_EXISTS_WITH_ANOTHER_SPEC"
	ReasonProxyBeingDeleted      = "PROXY_BEING_DELETED"
	ReasonNamespaceExists        = "NAMESPACE_EXISTS_WITH_OTHER_SETTINGS"
	ReasonNamespaceNotEmpty      = "NAMESPACE_NOT_EMPTY"
	ReasonQuotaExceeded          = "NAMESPACE_QUOTA_EXCEEDED"
	ReasonBodyTooLarge           = "BODY_TOO_LARGE"
	ReasonContentType            = "CONTENT_TYPE_UNSUPPORTED"
	ReasonBodyNotJSON            = "BODY_NOT_JSON"
	ReasonFieldUnknown           = "FIELD_UNKNOWN"
	ReasonFieldWrongType         = "FIELD_WRONG_TYPE"
	ReasonFieldNotPatchable      = "FIELD_NOT_PATCHABLE"
	ReasonProxyFailed            = "PROXY_FAILED"
	ReasonPoolNotFound           = "POOL_NOT_FOUND"
	ReasonPoolBeingDeleted       = "POOL_BEING_DELETED"
	ReasonPoolSizeInvalid        = "POOL_SIZE_INVALID"
	ReasonPoolClaimsBoundInvalid = "POOL_CLAIMS_BOUND_INVALID"
	ReasonPoolSpecTwice          = "POOL_SPEC_TWICE"
	ReasonAccountNotFound        = "ACCOUNT_NOT_FOUND"
	ReasonAccountInvalid         = "ACCOUNT_INVALID"
	ReasonPageSizeInvalid        = "PAGE_SIZE_INVALID"
	ReasonPageTokenInvalid       = "PAGE_TOKEN_INVALID"
	ReasonMemberInvalid          = "MEMBER_INVALID"
	ReasonRoleInvalid            = "ROLE_INVALID"
	ReasonQuotaInvalid           = "QUOTA_INVALID"
	ReasonStoreUnavailable       = "STORE_UNAVAILABLE"
	ReasonProxyNotReady          = "PROXY_NOT_READY"
	ReasonRotatedRecently        = "ROTATED_RECENTLY"
	ReasonCreatesPerHour         = "NAMESPACE_CREATES_PER_HOUR_EXCEEDED"
	ReasonNamespaceNeedsOwner    = "NAMESPACE_NEEDS_OWNER"
	ReasonIdentityHeaderRepeated = "IDENTITY_HEADER_REPEATED"
	ReasonIdentityAmbiguous      = "IDENTITY_AMBIGUOUS"
	ReasonIAPNotEnabled          = "IAP_NOT_ENABLED"
	ReasonIAPAssertionInvalid    = "IAP_ASSERTION_INVALID"
	ReasonIAPUnavailable         = "IAP_KEYS_UNAVAILABLE"
	ReasonInternal               = "INTERNAL"
	// ReasonCrossOrigin: a browser sent the request from a page of
	// another origin (Sec-Fetch-Site, or an Origin that is not the host).
	ReasonCrossOrigin = "CROSS_ORIGIN_REQUEST"
	// ReasonBrowserOutsideConsole: a browser's IAP session used outside
	// the console (/console/), where no page of the API's sends it.
	ReasonBrowserOutsideConsole = "BROWSER_SESSION_OUTSIDE_CONSOLE"
)

// apiError is an error in the Google API shape (AIP-193): an HTTP code,
// its canonical status, a message for people, and details for programs —
// always an ErrorInfo with the reason, and a BadRequest with the fields
// when fields broke rules.
type apiError struct {
	code       int
	status     string
	reason     string
	message    string
	violations proxy.FieldErrors
	metadata   map[string]string
	// retry, when positive, is how long until the same request may be
	// taken: a RetryInfo detail and a Retry-After header say it.
	retry time.Duration
}

func (e *apiError) Error() string { return e.message }

// HTTPStatus is the answer's HTTP status code.
func (e *apiError) HTTPStatus() int { return e.code }

// statusNames are the canonical statuses of the codes, where the code
// alone says which.
var statusNames = map[int]string{
	http.StatusBadRequest:            "INVALID_ARGUMENT",
	http.StatusUnauthorized:          "UNAUTHENTICATED",
	http.StatusForbidden:             "PERMISSION_DENIED",
	http.StatusNotFound:              "NOT_FOUND",
	http.StatusConflict:              "ALREADY_EXISTS",
	http.StatusMethodNotAllowed:      "METHOD_NOT_ALLOWED",
	http.StatusRequestEntityTooLarge: "INVALID_ARGUMENT",
	http.StatusUnsupportedMediaType:  "INVALID_ARGUMENT",
	http.StatusTooManyRequests:       "RESOURCE_EXHAUSTED",
	http.StatusInternalServerError:   "INTERNAL",
	http.StatusServiceUnavailable:    "UNAVAILABLE",
}

func newError(code int, reason, format string, args ...any) *apiError {
	return &apiError{code: code, reason: reason, message: fmt.Sprintf(format, args...)}
}

// invalid is a 400 naming every broken rule; the reason is the first's.
// A rule that refuses a feature the operator has not enabled makes it a
// 403, with those rules alone: nothing else about the request matters.
func invalid(errs ...proxy.FieldError) *apiError {
	fe := proxy.FieldErrors(errs)
	code := http.StatusBadRequest
	if forbidden := fe.Forbidden(); len(forbidden) > 0 {
		fe, code = forbidden, http.StatusForbidden
	}
	return &apiError{code: code, reason: fe[0].Reason, message: fe.Error(), violations: fe}
}

// failedPrecondition is a 409 whose status says the resource is in a state
// that refuses the request (AIP-193 lets 409 carry it; a retry of the same
// request fails the same way until the state changes).
func failedPrecondition(reason, format string, args ...any) *apiError {
	e := newError(http.StatusConflict, reason, format, args...)
	e.status = "FAILED_PRECONDITION"
	return e
}

// errorBody is the JSON of an error.
type errorBody struct {
	Error struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []any  `json:"details"`
	} `json:"error"`
}

type badRequest struct {
	Type            string            `json:"@type"`
	FieldViolations proxy.FieldErrors `json:"fieldViolations"`
}

// retryInfo is google.rpc.RetryInfo: its delay is a google.protobuf.
// Duration in JSON, whole seconds here ("540s").
type retryInfo struct {
	Type       string `json:"@type"`
	RetryDelay string `json:"retryDelay"`
}

// retrySeconds is d in whole seconds, rounded up: a client that waits
// that long is not refused again.
func retrySeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// retryDelay says when a request refused at now may be taken: at.
func retryDelay(now, at time.Time) string {
	return (time.Duration(retrySeconds(at.Sub(now))) * time.Second).String()
}

type errorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

func (e *apiError) body() errorBody {
	var b errorBody
	b.Error.Code, b.Error.Message = e.code, e.message
	b.Error.Status = e.status
	if b.Error.Status == "" {
		b.Error.Status = statusNames[e.code]
	}
	if len(e.violations) > 0 {
		b.Error.Details = append(b.Error.Details, badRequest{Type: "type.googleapis.com/google.rpc.BadRequest", FieldViolations: e.violations})
	}
	b.Error.Details = append(b.Error.Details, errorInfo{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: e.reason, Domain: ErrorDomain, Metadata: e.metadata})
	if e.retry > 0 {
		b.Error.Details = append(b.Error.Details, retryInfo{Type: "type.googleapis.com/google.rpc.RetryInfo", RetryDelay: fmt.Sprintf("%ds", retrySeconds(e.retry))})
	}
	return b
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.code == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", e.metadata["allow"])
	}
	if e.retry > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(retrySeconds(e.retry), 10))
	}
	writeJSON(w, e.code, e.body())
}
