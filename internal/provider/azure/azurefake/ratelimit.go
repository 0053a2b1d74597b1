package azurefake

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Bucket is one of ARM's throttling buckets of a subscription: it holds
// Size tokens, a request spends one, and Refill a second come back.
type Bucket struct {
	Size   int
	Refill float64
}

// RateLimits are ARM's buckets of a subscription, by kind of request
// (GETs read, PUTs and PATCHes write, DELETEs delete); a zero Bucket
// does not throttle.
type RateLimits struct {
	Reads, Writes, Deletes Bucket
}

// AzureRateLimits are ARM's per-subscription buckets as Microsoft's
// "Understand how Azure Resource Manager throttles requests" gives them
// for the token bucket algorithm (a subscription's reads 250 with 25 a
// second back, writes and deletes 200 with 10 a second back).
var AzureRateLimits = RateLimits{Reads: Bucket{250, 25}, Writes: Bucket{200, 10}, Deletes: Bucket{200, 10}}

// bucket is a Bucket's state.
type bucket struct {
	Bucket
	tokens float64
	at     time.Time
}

// take spends a token at now, reporting how long until one is back when
// there is none.
func (b *bucket) take(now time.Time) (bool, time.Duration) {
	if b.Size == 0 {
		return true, 0
	}
	if !b.at.IsZero() {
		b.tokens = math.Min(float64(b.Size), b.tokens+now.Sub(b.at).Seconds()*b.Refill)
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / b.Refill * float64(time.Second))
}

// SetRateLimits throttles ARM's routes from now on, each bucket full; a
// new fake does not throttle (AzureRateLimits are Azure's).
func (s *Server) SetRateLimits(l RateLimits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buckets = map[string]*bucket{
		"reads":   {Bucket: l.Reads, tokens: float64(l.Reads.Size)},
		"writes":  {Bucket: l.Writes, tokens: float64(l.Writes.Size)},
		"deletes": {Bucket: l.Deletes, tokens: float64(l.Deletes.Size)},
	}
}

// throttle spends a token of the request's bucket, writing ARM's
// x-ms-ratelimit-remaining-subscription-* header, and returns the 429 to
// answer when the bucket is empty. Called with s.mu held.
func (s *Server) throttle(w *writer, r *http.Request) *Fault {
	kind := map[string]string{http.MethodGet: "reads", http.MethodPut: "writes", http.MethodPatch: "writes", http.MethodDelete: "deletes"}[r.Method]
	b := s.buckets[kind]
	if b == nil || b.Size == 0 {
		return nil
	}
	ok, wait := b.take(s.clock())
	w.Header().Set("x-ms-ratelimit-remaining-subscription-"+kind, strconv.Itoa(int(b.tokens)))
	if ok {
		return nil
	}
	s.calls["throttled"]++
	secs := int(math.Ceil(wait.Seconds()))
	singular := kind[:len(kind)-1]
	return &Fault{Status: http.StatusTooManyRequests, Code: "SubscriptionRequestsThrottled", RetryAfter: max(secs, 1),
		Message: fmt.Sprintf("Number of '%s' requests for subscription '%s' actor '%s' exceeded. Please try again after '%d' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling for additional information.", singular, s.subscription, "azurefake", max(secs, 1))}
}
