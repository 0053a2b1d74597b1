package dofake

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// DigitalOcean's rate limits per token, as its API reference states them
// ("Rate Limit", in the introduction of the OpenAPI description,
// github.com/digitalocean/openapi specification/description.yml): "5,000
// requests per hour" and "250 requests per minute (5% of the hourly
// total)"; "once you exceed either limit, you will be rate limited until
// the next cycle starts".
const (
	DefaultRateLimit       = 5000 // an hour
	DefaultMinuteRateLimit = 250  // a minute
)

// window is one of DigitalOcean's rate limits as its reference states
// it: the requests of the last length are counted ("each request
// contributes toward the RateLimit-Remaining count for one complete hour
// after the request is made": a sliding window, not a count reset at the
// hour), and an answer says where it stands:
//
//	ratelimit-limit      the requests the window allows
//	ratelimit-remaining  those left now
//	ratelimit-reset      "the time when the oldest request will expire",
//	                     in Unix seconds: from then one request is back
//
// A request past it is answered 429 too_many_requests.
type window struct {
	limit  int
	length time.Duration
	spent  []time.Time // the requests of the window, oldest first
}

// expire forgets the requests older than the window.
func (w *window) expire(now time.Time) {
	i := 0
	for i < len(w.spent) && !w.spent[i].Add(w.length).After(now) {
		i++
	}
	w.spent = w.spent[i:]
}

// full reports whether the window has no request left now.
func (w *window) full(now time.Time) bool {
	w.expire(now)
	return len(w.spent) >= w.limit
}

// reset is when the window's oldest request expires: now when it has
// none.
func (w *window) reset(now time.Time) time.Time {
	if len(w.spent) == 0 {
		return now
	}
	return w.spent[0].Add(w.length)
}

func (w *window) headers(h http.Header, now time.Time) {
	h.Set("ratelimit-limit", strconv.Itoa(w.limit))
	h.Set("ratelimit-remaining", strconv.Itoa(max(w.limit-len(w.spent), 0)))
	h.Set("ratelimit-reset", strconv.FormatInt(w.reset(now).Unix(), 10))
}

// windows are a token's rate limits, the longest first: a request
// passes when every one has room, and spends one of each.
type windows []window

func defaultWindows() windows {
	return windows{{limit: DefaultRateLimit, length: time.Hour}, {limit: DefaultMinuteRateLimit, length: time.Minute}}
}

// take spends one request of every window and writes the headers of
// the answer. A refused request spends nothing, and its headers are
// those of the full window that stays full longest, so that
// ratelimit-reset is when a request passes again. DigitalOcean's
// reference says only that the headers are the hour's; what they say
// when the minute's limit refuses is the fake's reading of "until the
// next cycle starts". An admitted request's headers are the longest
// window's, the hour's as the reference says.
func (ws windows) take(h http.Header, now time.Time) bool {
	refused := -1
	for i := range ws {
		if ws[i].full(now) && (refused < 0 || ws[i].reset(now).After(ws[refused].reset(now))) {
			refused = i
		}
	}
	if refused >= 0 {
		ws[refused].headers(h, now)
		return false
	}
	for i := range ws {
		ws[i].spent = append(ws[i].spent, now)
	}
	ws[0].headers(h, now)
	return true
}

// SetRateLimit sets the window of that length (an hour for
// DigitalOcean's 5,000, a minute for its 250; another length adds a
// window), its limit, and the requests spent in it now; the other
// windows stay as they are. SetRateLimit(time.Minute, 250, 250) makes
// the next request a 429 until a minute of the fake's clock has passed;
// SetRateLimit(time.Minute, 60, 0) scales the minute's limit down for a
// test that must meet it in few requests.
func (s *Server) SetRateLimit(length time.Duration, limit, spent int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	w := window{limit: limit, length: length}
	for range spent {
		w.spent = append(w.spent, now)
	}
	i := slices.IndexFunc(s.windows, func(w window) bool { return w.length == length })
	if i < 0 {
		s.windows = append(s.windows, w)
	} else {
		s.windows[i] = w
	}
	slices.SortStableFunc(s.windows, func(a, b window) int { return cmp.Compare(b.length, a.length) })
}
