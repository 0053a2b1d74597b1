package computefake

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// RateLimits are Compute's rate quotas of a project: how many requests
// of each group it takes in a minute. A zero group is not metered.
//
// The groups are those of "Compute Engine rate quotas"
// (https://cloud.google.com/compute/api-quota), by the methods the
// provider calls: mutations (inserts, deletes, setMetadata, setLabels)
// count toward "Queries" (compute.googleapis.com/default), gets toward
// "Read requests", lists and aggregated lists toward "List requests", and
// operations' get, list and wait toward "Operation read requests". Each
// group is counted on its own, so a project can spend them all in the
// same minute.
type RateLimits struct {
	Mutations, Reads, Lists, OperationReads int
}

// ComputeRateLimits are the page's defaults per project: 1,500 requests a
// minute in each group (defaultPerMinutePerProject,
// ReadRequestsPerMinutePerProject, ListRequestsPerMinutePerProject,
// OperationReadRequestsPerMinutePerProject).
var ComputeRateLimits = RateLimits{Mutations: 1500, Reads: 1500, Lists: 1500, OperationReads: 1500}

// group is one of the quota groups: the metric's display name, as
// Service Usage names it in its refusal, and the limit of RateLimits it
// reads.
type group struct {
	metric string
	limit  func(RateLimits) int
}

var (
	mutations      = group{"Queries", func(l RateLimits) int { return l.Mutations }}
	reads          = group{"Read requests", func(l RateLimits) int { return l.Reads }}
	lists          = group{"List requests", func(l RateLimits) int { return l.Lists }}
	operationReads = group{"Operation read requests", func(l RateLimits) int { return l.OperationReads }}
)

// collection matches a path that names a collection rather than one
// resource: a list, or an aggregated list.
var collection = regexp.MustCompile(`/(instances|addresses|operations|regions|zones)$|/aggregated/`)

// groupOf is the quota group a request counts toward.
func groupOf(r *http.Request) group {
	switch {
	case strings.Contains(r.URL.Path, "/operations"):
		return operationReads
	case r.Method != http.MethodGet:
		return mutations
	case collection.MatchString(r.URL.Path):
		return lists
	default:
		return reads
	}
}

// projectOf is the project a request's path names.
var projectOf = regexp.MustCompile(`^/compute/v1/projects/([^/]+)/`)

// meter is what the fake counts toward the rate quotas: per project and
// group, the requests of the current interval (Compute's minute, or the
// shorter one of SetRateLimitWindow).
type meter struct {
	limits RateLimits
	// interval is how long the quotas count, a minute unless a test
	// scaled it down; start is the interval counted.
	interval time.Duration
	start    time.Time
	used     map[string]map[string]int // by project, then metric
	// counted and refused are, by project, every metered request since
	// the limits were set and those refused: what a benchmark reads
	// (RateLimitCounted).
	counted, refused map[string]int
	// left, when not negative, is how many more requests pass before the
	// next one finds its group spent (SetRateLimitRemaining).
	left int
}

// SetRateLimits meters each project's requests per minute from now on,
// every group full; a new fake does not meter (ComputeRateLimits are
// Compute's defaults). Compute counts in minutes synchronized for all
// callers: a group spent at 10:00:15 is full again at 10:01:00, not a
// minute after ("For example, if a project reaches a quota limit at
// 10:00:15, the quota refills at the start of the next synchronized
// interval, such as 10:01:00"), so the fake's minutes start on the
// minute of its clock.
func (s *Server) SetRateLimits(l RateLimits) { s.SetRateLimitWindow(l, time.Minute) }

// SetRateLimitWindow meters each project's requests per interval instead
// of per minute, the intervals synchronized as Compute's minutes are
// (each starts at a multiple of interval of the fake's clock): for a
// benchmark that must meet the limits in seconds, as a scaled-down
// Compute (l per interval is then the rate of l per minute, sped up).
func (s *Server) SetRateLimitWindow(l RateLimits, interval time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meter = meter{limits: l, interval: interval, used: map[string]map[string]int{}, counted: map[string]int{}, refused: map[string]int{}, left: -1}
}

// SetRateLimitRemaining lets the next n requests pass, whatever their
// group, and makes the one after find its group spent for the rest of
// the minute, as if the project's other callers had spent it: a test's
// way to meet the limit at any request of a call.
func (s *Server) SetRateLimitRemaining(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meter.left = n
}

// throttle counts a request toward its project's group and returns the
// refusal to answer when the group is spent for the minute. Called with
// s.mu held.
func (s *Server) throttle(r *http.Request) *Fault {
	m := &s.meter
	g := groupOf(r)
	limit := g.limit(m.limits)
	p := projectOf.FindStringSubmatch(r.URL.Path)
	if limit == 0 || p == nil {
		return nil
	}
	project := p[1]
	m.counted[project]++
	if start := s.now().Truncate(m.interval); !start.Equal(m.start) {
		m.start, m.used = start, map[string]map[string]int{}
	}
	if m.used[project] == nil {
		m.used[project] = map[string]int{}
	}
	if m.left == 0 {
		m.used[project][g.metric], m.left = limit, -1
	} else if m.left > 0 {
		m.left--
	}
	if m.used[project][g.metric] >= limit {
		s.calls["rateLimited"]++
		m.refused[project]++
		return rateLimitExceeded(g, project)
	}
	m.used[project][g.metric]++
	return nil
}

// rateLimitExceeded is Compute's refusal of a request past its group's
// quota: "If your project exceeds a rate quota, you receive a 403 error
// with the reason rateLimitExceeded" (the rate quotas page), in the
// usageLimits domain with Service Usage's message naming the metric and
// the limit. Compute sends no header saying when to try again; the
// minute's end is the answer.
func rateLimitExceeded(g group, project string) *Fault {
	return &Fault{Code: http.StatusForbidden, Reason: "rateLimitExceeded", Domain: "usageLimits",
		Message: fmt.Sprintf("Quota exceeded for quota metric '%s' and limit '%s per minute' of service 'compute.googleapis.com' for consumer 'project_number:%s'.", g.metric, g.metric, project)}
}

// RateLimitUsed returns how many requests of each group project has made
// in the fake's current minute (or interval), by the metric's name
// ("Queries", "Read requests", "List requests", "Operation read
// requests").
func (s *Server) RateLimitUsed(project string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	used := map[string]int{}
	if s.meter.interval > 0 && s.now().Truncate(s.meter.interval).Equal(s.meter.start) {
		for k, v := range s.meter.used[project] {
			used[k] = v
		}
	}
	return used
}

// RateLimitCounted returns how many of project's requests the fake
// metered since its limits were set, whatever their group, and how many
// of them it refused with rateLimitExceeded.
func (s *Server) RateLimitCounted(project string) (counted, refused int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meter.counted[project], s.meter.refused[project]
}
