package dofake

import (
	"net/http"
	"strconv"
	"time"
)

// DefaultRateLimit is DigitalOcean's limit of requests an hour per token
// ("Rate Limit": 5,000 requests per hour, and 250 per minute).
const DefaultRateLimit = 5000

// window is DigitalOcean's rate limit as its reference states it: the
// requests of the last hour are counted (a sliding window, not a bucket
// refilled at the hour), and every answer says where it stands:
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

// take spends one request, reporting false when none is left.
func (w *window) take(now time.Time) bool {
	w.expire(now)
	if len(w.spent) >= w.limit {
		return false
	}
	w.spent = append(w.spent, now)
	return true
}

func (w *window) headers(h http.Header, now time.Time) {
	reset := now
	if len(w.spent) > 0 {
		reset = w.spent[0].Add(w.length)
	}
	h.Set("ratelimit-limit", strconv.Itoa(w.limit))
	h.Set("ratelimit-remaining", strconv.Itoa(max(w.limit-len(w.spent), 0)))
	h.Set("ratelimit-reset", strconv.FormatInt(reset.Unix(), 10))
}

// SetRateLimit sets the window (an hour for DigitalOcean's 5,000, a
// minute for its 250), its limit, and the requests spent in it now:
// SetRateLimit(time.Minute, 250, 250) makes the next request a 429 until
// a minute of the fake's clock has passed.
func (s *Server) SetRateLimit(length time.Duration, limit, spent int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.window = window{limit: limit, length: length}
	for range spent {
		s.window.spent = append(s.window.spent, now)
	}
}
