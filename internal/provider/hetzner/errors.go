package hetzner

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/egress-proxies/egress/internal/provider"
)

// kinds maps Hetzner's error codes (the error table of the API reference,
// hcloud.ErrorCode) to the contract's kinds: what the reconciler should
// do about each. A code not here is classified by its HTTP status.
var kinds = map[hcloud.ErrorCode]provider.Kind{
	hcloud.ErrorCodeNotFound:          provider.KindNotFound,
	hcloud.ErrorCodeUniquenessError:   provider.KindAlreadyExists,
	hcloud.ErrorCodeRateLimitExceeded: provider.KindRateLimited,
	// No room for the server type in the location right now, or a
	// placement that failed: another location may have it.
	hcloud.ErrorCodeResourceUnavailable: provider.KindCapacity,
	hcloud.ErrorCodePlacementError:      provider.KindCapacity,
	// The project's limit of servers, cores or Primary IPs: Hetzner's
	// quota, raised by asking Hetzner.
	hcloud.ErrorCodeResourceLimitExceeded: provider.KindQuota,
	// Another action runs on the resource, or it changed under the
	// request, or Hetzner could not answer: try again.
	hcloud.ErrorCodeLocked:           provider.KindTransient,
	hcloud.ErrorCodeConflict:         provider.KindTransient,
	hcloud.ErrorCodeServiceError:     provider.KindTransient,
	hcloud.ErrorCodeServerError:      provider.KindTransient,
	hcloud.ErrorCodeBadGateway:       provider.KindTransient,
	hcloud.ErrorCodeTimeout:          provider.KindTransient,
	hcloud.ErrorCodeMaintenance:      provider.KindTransient,
	hcloud.ErrorCodeUnknownError:     provider.KindTransient,
	hcloud.ErrorCodeRobotUnavailable: provider.KindTransient,
	// The request can never pass as it is: a field, a token, a
	// permission, a protected resource, a server type or Primary IP that
	// does not fit.
	hcloud.ErrorCodeInvalidInput:                provider.KindPermanent,
	hcloud.ErrorCodeJSONError:                   provider.KindPermanent,
	hcloud.ErrorCodeForbidden:                   provider.KindPermanent,
	hcloud.ErrorCodeUnauthorized:                provider.KindPermanent,
	hcloud.ErrorCodeProtected:                   provider.KindPermanent,
	hcloud.ErrorCodeInvalidServerType:           provider.KindPermanent,
	hcloud.ErrorUnsupportedError:                provider.KindPermanent,
	hcloud.ErrorDeprecatedAPIEndpoint:           provider.KindPermanent,
	hcloud.ErrorCodePrimaryIPAssigned:           provider.KindPermanent,
	hcloud.ErrorCodePrimaryIPDatacenterMismatch: provider.KindPermanent,
	hcloud.ErrorCodePrimaryIPVersionMismatch:    provider.KindPermanent,
}

// classify reads the kind of an error the SDK returned.
func classify(err error) provider.Kind {
	if err == nil {
		return ""
	}
	var herr hcloud.Error
	if !errors.As(err, &herr) {
		// No answer from Hetzner, or one without an error body (a proxy's
		// 502): worth another try.
		return provider.KindTransient
	}
	if k, ok := kinds[herr.Code]; ok {
		return k
	}
	if resp := herr.Response(); resp != nil && resp.StatusCode < http.StatusInternalServerError {
		return provider.KindPermanent
	}
	return provider.KindTransient
}

// wrap classifies err as an error of op on target; a rate limit carries
// the wait the API asked for.
func (p *Provider) wrap(op, target string, err error) error {
	if err == nil {
		return nil
	}
	kind := classify(err)
	e := provider.NewError(kind, op, target, err)
	switch kind {
	case provider.KindNotFound:
		e.Err = fmt.Errorf("%w: %w", provider.ErrNotFound, err)
	case provider.KindRateLimited:
		e.RetryAfter = retryAfter(err, p.cfg.Now())
		p.cfg.Log.Warn("hetzner rate limit reached; the call waits", slog.String("op", op), slog.String("target", target), slog.Duration("retryAfter", e.RetryAfter))
	}
	return e
}

// retryAfter is the wait a 429's RateLimit-* headers ask for. Hetzner
// refills its bucket gradually, one request every hour/limit ("when your
// limit is 3600 requests per hour, the number of remaining requests will
// increase by 1 every second"), and RateLimit-Reset is when the whole
// bucket is full again; so the next request is back after the time to
// the reset divided by the requests missing, at least a second. Without
// the headers it is 0, and the caller's backoff decides.
func retryAfter(err error, now time.Time) time.Duration {
	var herr hcloud.Error
	if !errors.As(err, &herr) || herr.Response() == nil {
		return 0
	}
	rl := herr.Response().Meta.Ratelimit
	missing := rl.Limit - rl.Remaining
	if rl.Limit <= 0 || rl.Reset.IsZero() || missing <= 0 {
		return 0
	}
	return max(rl.Reset.Sub(now)/time.Duration(missing), time.Second)
}
