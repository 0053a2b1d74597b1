package azure

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/egress-proxies/egress/internal/provider"
)

// Azure Resource Manager's errors are an HTTP status and a body
// {"error": {"code", "message"}}, whose code (the SDK's
// azcore.ResponseError.ErrorCode) says more than the status: one 409
// covers another operation still running on the resource and a conflict
// that never passes, one 400 a bad field and a quota. What the reconciler
// should do is read from the code first (byCode, quota phrases), then
// from the status (byStatus). The same codes come back, for an operation
// Azure accepted, as the VM's failed provisioning
// ("ProvisioningState/failed/AllocationFailed"), which Get reads with
// the same table.

// byCode maps ARM's error codes to the contract's kinds.
var byCode = map[string]provider.Kind{
	// The size is not offered in the location or zone now, or the zone (the
	// cluster pinned by the request's constraints) has no room: another
	// zone may (docs: "Troubleshoot allocation failures").
	"SkuNotAvailable":                       provider.KindCapacity,
	"AllocationFailed":                      provider.KindCapacity,
	"ZonalAllocationFailed":                 provider.KindCapacity,
	"OverconstrainedAllocationRequest":      provider.KindCapacity,
	"OverconstrainedZonalAllocationRequest": provider.KindCapacity,
	// The subscription's limits: cores of a family or of the region,
	// public IPs; raised by a quota request, not by waiting.
	"QuotaExceeded":                 provider.KindQuota,
	"PublicIPCountLimitReached":     provider.KindQuota,
	"ResourceQuotaExceeded":         provider.KindQuota,
	"SubscriptionRequestsThrottled": provider.KindRateLimited,
	// Another operation runs on the resource (a PUT while the last one
	// has not finished, a delete of a NIC the VM's delete still holds):
	// the next try passes.
	"AnotherOperationInProgress":           provider.KindTransient,
	"RetryableError":                       provider.KindTransient,
	"OperationPreempted":                   provider.KindTransient,
	"InUseNetworkInterfaceCannotBeDeleted": provider.KindTransient,
	"PublicIPAddressInUse":                 provider.KindTransient,
	"NicReservedForAnotherVm":              provider.KindTransient,
	// Not there.
	"ResourceNotFound":      provider.KindNotFound,
	"NotFound":              provider.KindNotFound,
	"ResourceGroupNotFound": provider.KindPermanent,
	// A request that cannot pass as it is: an image, a size or a field
	// Azure does not take, a role without the action.
	"InvalidParameter":           provider.KindPermanent,
	"ImageNotFound":              provider.KindPermanent,
	"PlatformImageNotFound":      provider.KindPermanent,
	"InvalidTemplateDeployment":  provider.KindPermanent,
	"AuthorizationFailed":        provider.KindPermanent,
	"LinkedAuthorizationFailed":  provider.KindPermanent,
	"InvalidAuthenticationToken": provider.KindPermanent,
}

// byStatus maps a status whose code byCode does not know. Others are
// permanent below 500 and transient from 500.
var byStatus = map[int]provider.Kind{
	http.StatusNotFound:           provider.KindNotFound,
	http.StatusTooManyRequests:    provider.KindRateLimited,
	http.StatusConflict:           provider.KindTransient,
	http.StatusPreconditionFailed: provider.KindAlreadyExists,
	http.StatusRequestTimeout:     provider.KindTransient,
}

// quotaPhrases are the words of OperationNotAllowed's message when a quota
// refuses ("Operation could not be completed as it results in exceeding
// approved Total Regional Cores quota"): the same code refuses other
// things, which are permanent.
var quotaPhrases = []string{"quota", "exceeding approved"}

// detail is what an ARM error says: its code, its message and its status
// (0 for an error with no answer from ARM).
type detail struct {
	status        int
	code, message string
	retryAfter    time.Duration
}

// detailOf reads err. The message comes from the answer's body, not from
// ResponseError's text (the whole answer, with the request's URL).
func detailOf(err error) (detail, bool) {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return detail{}, false
	}
	d := detail{status: re.StatusCode, code: re.ErrorCode}
	if re.RawResponse != nil {
		if body, perr := runtime.Payload(re.RawResponse); perr == nil {
			var b struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if json.Unmarshal(body, &b) == nil {
				d.message = b.Error.Message
				if d.code == "" {
					d.code = b.Error.Code
				}
			}
		}
		d.retryAfter = retryAfter(re.RawResponse.Header)
	}
	return d, true
}

// kindOf classifies an error code with its status and message.
func kindOf(code string, status int, message string) provider.Kind {
	if code == "OperationNotAllowed" {
		m := strings.ToLower(message)
		for _, ph := range quotaPhrases {
			if strings.Contains(m, ph) {
				return provider.KindQuota
			}
		}
		return provider.KindPermanent
	}
	if k, ok := byCode[code]; ok {
		return k
	}
	if k, ok := byStatus[status]; ok {
		return k
	}
	if status >= http.StatusInternalServerError {
		return provider.KindTransient
	}
	return provider.KindPermanent
}

// classify reads the kind of an error the SDK returned: no answer from
// ARM (the network, a deadline) is transient.
func classify(err error) provider.Kind {
	if err == nil {
		return ""
	}
	d, ok := detailOf(err)
	if !ok {
		return provider.KindTransient
	}
	return kindOf(d.code, d.status, d.message)
}

// wrap classifies err as an error of op on target: a not-found says
// ErrNotFound, a rate limit carries its wait, a quota keeps Azure's
// message (the proxy's status shows it: which quota, which region).
func (p *Provider) wrap(op, target string, err error) error {
	if err == nil {
		return nil
	}
	kind := classify(err)
	d, _ := detailOf(err)
	inner := err
	if d.code != "" {
		// ResponseError's text is the whole answer: keep the code and the
		// message, which say what happened, and the error for errors.As.
		inner = shortError{msg: fmt.Sprintf("%s (HTTP %d): %s", d.code, d.status, d.message), err: err}
	}
	e := provider.NewError(kind, op, target, inner)
	switch kind {
	case provider.KindNotFound:
		e.Err = fmt.Errorf("%w: %w", provider.ErrNotFound, inner)
	case provider.KindRateLimited:
		e.RetryAfter = d.retryAfter
		p.cfg.Log.Warn("azure throttled past the retry policy's wait; the call waits", slog.String("op", op), slog.String("target", target), slog.Duration("retryAfter", e.RetryAfter))
	case provider.KindQuota:
		p.cfg.Log.Warn("azure quota reached", slog.String("op", op), slog.String("target", target), slog.String("code", d.code), slog.String("message", d.message))
	}
	return e
}

// shortError is an SDK error said in one line (its code and message),
// that still unwraps to it.
type shortError struct {
	msg string
	err error
}

func (s shortError) Error() string { return s.msg }
func (s shortError) Unwrap() error { return s.err }

// retryAfter is the wait a throttled answer asks for: ARM's Retry-After
// (seconds), or the millisecond headers azcore reads too.
func retryAfter(h http.Header) time.Duration {
	for _, k := range []string{"retry-after-ms", "x-ms-retry-after-ms"} {
		if ms, err := strconv.Atoi(h.Get(k)); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// notFound reports whether err says the resource is not there.
func notFound(err error) bool { return err != nil && classify(err) == provider.KindNotFound }
