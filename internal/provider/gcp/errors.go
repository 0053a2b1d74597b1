package gcp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/api/googleapi"

	"github.com/egress-proxies/egress/internal/provider"
)

// capacityReasons are Compute's ways of saying the zone has no room.
var capacityReasons = map[string]bool{
	"ZONE_RESOURCE_POOL_EXHAUSTED":              true,
	"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS": true,
	"resourcePoolExhausted":                     true,
	"RESOURCE_POOL_EXHAUSTED":                   true,
	"insufficientCapacity":                      true,
}

// classify reads the kind of a Compute error.
func classify(err error) provider.Kind {
	if err == nil {
		return ""
	}
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		// No answer from Compute (a timeout, a reset): worth another try.
		return provider.KindTransient
	}
	reasons := map[string]bool{}
	for _, e := range gerr.Errors {
		reasons[e.Reason] = true
		for r := range capacityReasons {
			if strings.Contains(e.Message, r) {
				reasons[r] = true
			}
		}
	}
	for r := range capacityReasons {
		if reasons[r] || strings.Contains(gerr.Message, r) {
			return provider.KindCapacity
		}
	}
	switch {
	case gerr.Code == http.StatusNotFound:
		return provider.KindNotFound
	case gerr.Code == http.StatusConflict && (reasons["alreadyExists"] || len(reasons) == 0):
		return provider.KindAlreadyExists
	case gerr.Code == http.StatusTooManyRequests, reasons["rateLimitExceeded"], reasons["userRateLimitExceeded"]:
		return provider.KindRateLimited
	case reasons["quotaExceeded"], reasons["QUOTA_EXCEEDED"]:
		return provider.KindQuota
	case gerr.Code >= 500:
		return provider.KindTransient
	case gerr.Code == http.StatusConflict:
		// Another operation on the resource is in flight: try again.
		return provider.KindTransient
	default:
		return provider.KindPermanent
	}
}

// wrap classifies err as an error of op on target; a rate limit carries
// the wait to the start of the next minute (Config.RateInterval).
func (p *Provider) wrap(op, target string, err error) error {
	if err == nil {
		return nil
	}
	kind := classify(err)
	if kind == provider.KindNotFound {
		return provider.NewError(kind, op, target, fmt.Errorf("%w: %w", provider.ErrNotFound, err))
	}
	e := provider.NewError(kind, op, target, err)
	if kind == provider.KindRateLimited {
		e.RetryAfter = untilNextInterval(p.now(), p.cfg.RateInterval)
	}
	return e
}

// untilNextInterval is the wait after a rate quota's refusal. Compute
// sends no Retry-After; its rate quotas are counted in synchronized
// minutes, a group spent at 10:00:15 full again at 10:01:00
// (https://cloud.google.com/compute/api-quota), so the next minute of the
// clock (interval 0) is when the call passes again.
func untilNextInterval(now time.Time, interval time.Duration) time.Duration {
	if interval <= 0 {
		interval = time.Minute
	}
	return now.Truncate(interval).Add(interval).Sub(now)
}

func (p *Provider) now() time.Time {
	if p.cfg.Now != nil {
		return p.cfg.Now()
	}
	return time.Now()
}
