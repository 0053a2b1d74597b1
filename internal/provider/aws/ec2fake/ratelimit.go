package ec2fake

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Bucket is one of EC2's throttling token buckets: it holds Size
// tokens, and Refill a second come back, up to Size.
type Bucket struct {
	Size   int
	Refill float64
}

// RateLimits are EC2's token buckets of an account in a region, by
// category of action: every request spends a token of its category's
// bucket (request rate limiting), and RunInstances and
// TerminateInstances spend besides a token of their own resource bucket
// per instance they start or end (resource rate limiting). A zero Bucket
// does not throttle.
type RateLimits struct {
	// Mutating are the actions that create, change or delete
	// (RunInstances, TerminateInstances, the addresses' Allocate,
	// Associate, Disassociate and Release); NonMutating the Describe*
	// actions.
	Mutating, NonMutating Bucket
	// RunInstances and TerminateInstances are the resource buckets, in
	// instances.
	RunInstances, TerminateInstances Bucket
}

// EC2RateLimits are the defaults of "Request throttling for the Amazon
// EC2 API" (https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html):
// mutating actions a bucket of 200 with 5 a second back, non-mutating
// 100 with 20, and the resource buckets of RunInstances 1,000 instances
// with 2 back a second and of TerminateInstances 1,000 with 20. The
// page's smaller bucket for unfiltered, unpaginated Describe calls (50,
// 5 a second) is not modelled: the provider filters every Describe.
var EC2RateLimits = RateLimits{
	Mutating: Bucket{200, 5}, NonMutating: Bucket{100, 20},
	RunInstances: Bucket{1000, 2}, TerminateInstances: Bucket{1000, 20},
}

// bucket is a Bucket's state in a region.
type bucket struct {
	Bucket
	tokens float64
	at     time.Time
}

// refill brings the bucket's tokens to now.
func (b *bucket) refill(now time.Time) {
	if now.After(b.at) {
		b.tokens = math.Min(float64(b.Size), b.tokens+now.Sub(b.at).Seconds()*b.Refill)
		b.at = now
	}
}

// throttling is the state of the buckets, by region and then by name
// ("mutating", "non-mutating", "RunInstances", "TerminateInstances").
type throttling struct {
	limits  RateLimits
	buckets map[string]map[string]*bucket
	// left, when not negative, is how many more requests pass before the
	// next finds its bucket empty (SetRateLimitRemaining).
	left    int
	refused int
}

// SetRateLimits throttles every region's requests from now on, each
// bucket full; a new fake does not throttle (EC2RateLimits are EC2's).
// The fake is one account, so its buckets are per region.
func (s *Server) SetRateLimits(l RateLimits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttling = throttling{limits: l, buckets: map[string]map[string]*bucket{}, left: -1}
}

// SetRateLimitRemaining lets the next n requests pass, whatever their
// buckets, and makes the one after find its request bucket empty, as if
// the account's other callers had spent it: a test's way to meet the
// limit at any request of a call.
func (s *Server) SetRateLimitRemaining(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttling.left = n
}

// RateLimitTokens returns the tokens left in each of region's buckets
// that a request has touched, whole, at the fake's clock.
func (s *Server) RateLimitTokens(region string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for name, b := range s.throttling.buckets[region] {
		b.refill(s.clock())
		out[name] = int(b.tokens)
	}
	return out
}

// Throttled returns how many requests the fake refused with
// RequestLimitExceeded.
func (s *Server) Throttled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.throttling.refused
}

// mutating are the actions of the fake that EC2 counts as mutating; the
// rest it serves are Describe*, non-mutating.
var mutating = map[string]bool{
	"RunInstances": true, "TerminateInstances": true, "AllocateAddress": true,
	"AssociateAddress": true, "DisassociateAddress": true, "ReleaseAddress": true,
}

// throttle spends the tokens of an action in region and returns EC2's
// refusal when a bucket it needs has too few: RequestLimitExceeded, 503
// (botocore's retry model, _retry.json, names it so: "service_error_code":
// "RequestLimitExceeded", "http_status_code": 503), with no header saying
// when to try again. A refused request spends nothing. Called with s.mu
// held.
func (s *Server) throttle(region, action string, form map[string][]string) error {
	t := &s.throttling
	if t.buckets == nil {
		return nil
	}
	type need struct {
		name   string
		bucket Bucket
		tokens float64
	}
	needs := []need{{"non-mutating", t.limits.NonMutating, 1}}
	if mutating[action] {
		needs[0] = need{"mutating", t.limits.Mutating, 1}
	}
	switch action {
	case "RunInstances":
		n, _ := strconv.Atoi(first(form["MaxCount"]))
		needs = append(needs, need{"RunInstances", t.limits.RunInstances, float64(max(n, 1))})
	case "TerminateInstances":
		n := 0
		for k := range form {
			if strings.HasPrefix(k, "InstanceId.") {
				n++
			}
		}
		needs = append(needs, need{"TerminateInstances", t.limits.TerminateInstances, float64(max(n, 1))})
	}
	if t.buckets[region] == nil {
		t.buckets[region] = map[string]*bucket{}
	}
	now := s.clock()
	ok := true
	var held []*bucket
	for i, n := range needs {
		if n.bucket.Size == 0 {
			held = append(held, nil)
			continue
		}
		b := t.buckets[region][n.name]
		if b == nil {
			b = &bucket{Bucket: n.bucket, tokens: float64(n.bucket.Size), at: now}
			t.buckets[region][n.name] = b
		}
		b.refill(now)
		if i == 0 && t.left == 0 {
			b.tokens = 0 // the other callers spent it
		}
		if b.tokens < n.tokens {
			ok = false
		}
		held = append(held, b)
	}
	if t.left >= 0 && needs[0].bucket.Size != 0 {
		t.left--
	}
	if !ok {
		t.refused++
		return errorf("RequestLimitExceeded", "%s", faultMessage("RequestLimitExceeded"))
	}
	for i, b := range held {
		if b != nil {
			b.tokens -= needs[i].tokens
		}
	}
	return nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
