package hetznerfake

import (
	"net/http"
	"strconv"
	"time"
)

// DefaultRateLimit is Hetzner's default limit, per project, as the API
// reference states it ("Rate Limiting", https://docs.hetzner.cloud):
// "The default limit is 3600 requests per hour and per Project."
const DefaultRateLimit = 3600

// DefaultRateWindow is the time the limit is counted over: the
// reference's RateLimit-Limit is "the total number of requests you can
// perform per hour".
const DefaultRateWindow = time.Hour

// bucket is Hetzner's rate limit as the reference states it: "The
// default limit is 3600 requests per hour and per Project. The number of
// remaining requests increases gradually. For example, when your limit is
// 3600 requests per hour, the number of remaining requests will increase
// by 1 every second." Every answer says where it stands:
//
//	RateLimit-Limit      the requests an hour
//	RateLimit-Remaining  those left now
//	RateLimit-Reset      the UNIX time at which the remaining requests are
//	                     back to the limit
//
// and a request past it is answered 429 rate_limit_exceeded. The
// reference says "All requests, whether they are authenticated or not,
// are subject to rate limiting"; the fake meters the project's token
// only, since a request without it spends no project's requests.
type bucket struct {
	limit, remaining int
	window           time.Duration // the time the bucket takes to fill from empty
	last             time.Time     // when the last whole request was refilled
}

// period is how long one request takes to come back.
func (b *bucket) period() time.Duration { return b.window / time.Duration(b.limit) }

// refill adds the requests that came back since last.
func (b *bucket) refill(now time.Time) {
	if b.last.IsZero() || b.remaining >= b.limit {
		b.last = now
		return
	}
	if n := int(now.Sub(b.last) / b.period()); n > 0 {
		b.remaining = min(b.limit, b.remaining+n)
		b.last = b.last.Add(time.Duration(n) * b.period())
	}
}

// take spends one request, reporting false when none is left.
func (b *bucket) take(now time.Time) bool {
	b.refill(now)
	if b.remaining == 0 {
		return false
	}
	if b.remaining == b.limit {
		b.last = now
	}
	b.remaining--
	return true
}

func (b *bucket) headers(h http.Header, now time.Time) {
	reset := b.last.Add(time.Duration(b.limit-b.remaining) * b.period())
	if reset.Before(now) {
		reset = now
	}
	h.Set("RateLimit-Limit", strconv.Itoa(b.limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(b.remaining))
	h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
}

// SetRateLimit sets the limit (requests an hour) and what remains of it
// now: SetRateLimit(3600, 0) makes the next request a 429 until a second
// of the fake's clock has passed.
func (s *Server) SetRateLimit(limit, remaining int) {
	s.SetRateLimitWindow(limit, DefaultRateWindow, remaining)
}

// SetRateLimitWindow sets the limit over another window than the hour,
// for a test that must meet it in few requests and little time:
// SetRateLimitWindow(60, time.Minute, 60) gives a request back every
// second, 60 at most.
func (s *Server) SetRateLimitWindow(limit int, window time.Duration, remaining int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bucket = bucket{limit: limit, window: window, remaining: remaining, last: s.now()}
}
