package hetznerfake

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// TestSelector holds the label selector language to the reference's
// examples, each term alone and joined.
func TestSelector(t *testing.T) {
	labels := map[string]string{"env": "prod", "team": "a", "k8s.io/role": "edge"}
	cases := map[string]struct {
		reason   string
		selector string
		want     bool
	}{
		"Empty":      {"selects everything", "", true},
		"Equal":      {"k=v", "env=prod", true},
		"DoubleEq":   {"k==v", "env==prod", true},
		"NotEqual":   {"k!=v of another value", "env!=dev", true},
		"NotEqualNo": {"k!=v of its value", "env!=prod", false},
		"Present":    {"k", "team", true},
		"Absent":     {"!k of a label it has", "!team", false},
		"AbsentYes":  {"!k of one it lacks", "!egress-deployment", true},
		"In":         {"k in (…)", "env in (dev, prod)", true},
		"NotIn":      {"k notin (…)", "env notin (dev,prod)", false},
		"Prefixed":   {"a prefixed key", "k8s.io/role=edge", true},
		"Joined":     {"every term must match", "env=prod,team=b", false},
		"JoinedIn":   {"commas inside in (…) are no separators", "env in (dev,prod),team=a", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := parseSelector(tc.selector)
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if got := sel.matches(labels); got != tc.want {
				t.Errorf("%s: %q matches %v, want %v", tc.reason, tc.selector, got, tc.want)
			}
		})
	}
	if _, err := parseSelector("env=prod,=x"); err == nil {
		t.Error("a term without a key parses")
	}
}

// TestRateLimit: the bucket refills one request every window/limit, each
// answer carries the RateLimit-* headers (Remaining counting down, Reset
// when the bucket is full again), the request past the limit is 429
// rate_limit_exceeded with them, and a request passes again once one
// came back on the fake's clock. Unset, the limit is Hetzner's 3600 an
// hour.
func TestRateLimit(t *testing.T) {
	start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	type answer struct {
		Code                    int
		Error                   string // the error's code, "" for none
		Limit, Remaining, Reset string
	}
	unix := func(d time.Duration) string { return strconv.FormatInt(start.Add(d).Unix(), 10) }
	ok := func(limit, remaining int, reset time.Duration) answer {
		return answer{200, "", strconv.Itoa(limit), strconv.Itoa(remaining), unix(reset)}
	}
	refused := func(limit int, reset time.Duration) answer {
		return answer{429, "rate_limit_exceeded", strconv.Itoa(limit), "0", unix(reset)}
	}
	type step struct {
		advance time.Duration // before the request
		want    answer
	}
	cases := map[string]struct {
		reason string
		set    func(s *Server)
		steps  []step
		// The requests the route answered, and those refused.
		served, limited int
	}{
		"Default": {
			reason: "unset, the bucket is Hetzner's 3600 an hour: one request spent comes back in a second",
			set:    func(*Server) {},
			steps:  []step{{0, ok(3600, 3599, time.Second)}, {0, ok(3600, 3598, 2*time.Second)}},
			served: 2,
		},
		"LastOfTheHour": {
			reason: "one request left of 3600 an hour: the next is refused until a second passed",
			set:    func(s *Server) { s.SetRateLimit(3600, 1) },
			steps: []step{
				{0, ok(3600, 0, time.Hour)},
				{0, refused(3600, time.Hour)},
				{time.Second, ok(3600, 0, time.Hour+time.Second)},
			},
			served: 2, limited: 1,
		},
		"ScaledDown": {
			reason: "3 a minute: a request every 20 s; the 4th within the window is refused, and one passes 20 s on",
			set:    func(s *Server) { s.SetRateLimitWindow(3, time.Minute, 3) },
			steps: []step{
				{0, ok(3, 2, 20*time.Second)},
				{0, ok(3, 1, 40*time.Second)},
				{0, ok(3, 0, time.Minute)},
				{0, refused(3, time.Minute)},
				{19 * time.Second, refused(3, time.Minute)},
				{time.Second, ok(3, 0, 80*time.Second)},
				{time.Minute, ok(3, 2, 100*time.Second)},
			},
			served: 5, limited: 2,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewHandler("t")
			var skew time.Duration
			s.SetClock(func() time.Time { return start.Add(skew) })
			c.set(s)
			var got, want []answer
			for _, st := range c.steps {
				skew += st.advance
				r := httptest.NewRequest(http.MethodGet, "/v1/servers", nil)
				r.Header.Set("Authorization", "Bearer t")
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r)
				var body schema.ErrorResponse
				json.Unmarshal(w.Body.Bytes(), &body)
				h := w.Header()
				got = append(got, answer{w.Code, body.Error.Code, h.Get("RateLimit-Limit"), h.Get("RateLimit-Remaining"), h.Get("RateLimit-Reset")})
				want = append(want, st.want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: the answers (-want +got):\n%s", c.reason, diff)
			}
			if diff := cmp.Diff([2]int{c.served, c.limited}, [2]int{s.Calls("servers.list"), s.Calls("ratelimited")}); diff != "" {
				t.Errorf("%s: requests [served, refused for the limit] (-want +got):\n%s", c.reason, diff)
			}
		})
	}
	s := NewHandler("t")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/servers", nil))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("a request without the token: %d, want 401", w.Code)
	}
}
