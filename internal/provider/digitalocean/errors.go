package digitalocean

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
)

// DigitalOcean's errors are an HTTP status and a body {"id", "message",
// "request_id"}, whose id names the status again (not_found,
// unprocessable_entity, too_many_requests): what the reconciler should do
// is read from the status, and, for a 422, from the message, since one
// id covers an invalid field, a full region and the account's Droplet
// limit alike. The whole mapping is this file's two tables.

// byStatus maps DigitalOcean's statuses to the contract's kinds. A status
// not here is permanent below 500 and transient from 500.
var byStatus = map[int]provider.Kind{
	http.StatusNotFound:        provider.KindNotFound,
	http.StatusTooManyRequests: provider.KindRateLimited,
	// A bad field, a bad token, a token without the scope, a request the
	// API cannot take as it is.
	http.StatusBadRequest:          provider.KindPermanent,
	http.StatusUnauthorized:        provider.KindPermanent,
	http.StatusForbidden:           provider.KindPermanent,
	http.StatusUnprocessableEntity: provider.KindPermanent,
	// Another event runs on the resource: try again.
	http.StatusConflict: provider.KindTransient,
	http.StatusLocked:   provider.KindTransient,
	// DigitalOcean could not answer.
	http.StatusInternalServerError: provider.KindTransient,
	http.StatusBadGateway:          provider.KindTransient,
	http.StatusServiceUnavailable:  provider.KindTransient,
	http.StatusGatewayTimeout:      provider.KindTransient,
}

// byMessage refines a status by what its message says, first match
// first; the phrases are DigitalOcean's own (lower-cased).
var byMessage = []struct {
	status int
	phrase string
	kind   provider.Kind
}{
	// "creating this/these droplet(s) will exceed your droplet limit":
	// the account's Droplet limit (10 for a new account), raised only by
	// asking DigitalOcean.
	{http.StatusUnprocessableEntity, "droplet limit", provider.KindQuota},
	// The account's reserved IP limit (a few per account, more with more
	// Droplets).
	{http.StatusUnprocessableEntity, "reserved ip limit", provider.KindQuota},
	{http.StatusUnprocessableEntity, "floating ip limit", provider.KindQuota},
	// The size is not sold in the region right now, or the region takes
	// no new Droplets: another region may have it.
	{http.StatusUnprocessableEntity, "not available in this region", provider.KindCapacity},
	{http.StatusUnprocessableEntity, "region is not available", provider.KindCapacity},
	{http.StatusUnprocessableEntity, "currently unavailable", provider.KindCapacity},
	// Another event (a create, an assign) still runs on the Droplet or the
	// address: the next try passes.
	{http.StatusUnprocessableEntity, "pending event", provider.KindTransient},
	{http.StatusUnprocessableEntity, "is not active", provider.KindTransient},
}

// classify reads the kind of an error godo returned.
func classify(err error) provider.Kind {
	if err == nil {
		return ""
	}
	var derr *godo.ErrorResponse
	if !errors.As(err, &derr) || derr.Response == nil {
		// No answer from DigitalOcean: worth another try.
		return provider.KindTransient
	}
	status := derr.Response.StatusCode
	msg := strings.ToLower(derr.Message)
	for _, m := range byMessage {
		if m.status == status && strings.Contains(msg, m.phrase) {
			return m.kind
		}
	}
	if k, ok := byStatus[status]; ok {
		return k
	}
	if status < http.StatusInternalServerError {
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
		p.cfg.Log.Warn("digitalocean rate limit reached; the call waits", slog.String("op", op), slog.String("target", target), slog.Duration("retryAfter", e.RetryAfter))
	}
	return e
}

// retryAfter is the wait a 429 asks for. DigitalOcean counts the requests
// of a sliding hour (and minute), and ratelimit-reset is "the time when
// the oldest request will expire", in Unix seconds: from then, a request
// is back. A 429 whose ratelimit-remaining ("the number of requests in
// your hourly quota that remain") is above zero was refused by a limit of
// 60 seconds (the 250 a minute, or an endpoint's own such as 12 reserved
// IP creates a minute), not by the hour the reset may speak of: the wait
// is a minute at most. At least a second; 0 without the header, and the
// caller's backoff decides.
func retryAfter(err error, now time.Time) time.Duration {
	var derr *godo.ErrorResponse
	if !errors.As(err, &derr) || derr.Response == nil {
		return 0
	}
	h := derr.Response.Header
	reset, perr := strconv.ParseInt(h.Get("ratelimit-reset"), 10, 64)
	if perr != nil || reset <= 0 {
		return 0
	}
	wait := max(time.Unix(reset, 0).Sub(now), time.Second)
	if remaining, err := strconv.Atoi(h.Get("ratelimit-remaining")); err == nil && remaining > 0 {
		wait = min(wait, time.Minute)
	}
	return wait
}
