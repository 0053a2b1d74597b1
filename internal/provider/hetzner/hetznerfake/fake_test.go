package hetznerfake

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// TestRateLimit: the bucket refills one request every hour/limit, each
// answer carries the RateLimit-* headers, and a request past the limit is
// 429 rate_limit_exceeded until a request came back.
func TestRateLimit(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	s := NewHandler("t")
	s.SetClock(func() time.Time { return now })
	s.SetRateLimit(3600, 1)
	get := func() (int, http.Header) {
		r := httptest.NewRequest(http.MethodGet, "/v1/servers", nil)
		r.Header.Set("Authorization", "Bearer t")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code, w.Header()
	}
	type answer struct {
		Code                    int
		Limit, Remaining, Reset string
	}
	read := func() answer {
		code, h := get()
		return answer{code, h.Get("RateLimit-Limit"), h.Get("RateLimit-Remaining"), h.Get("RateLimit-Reset")}
	}
	unix := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	if diff := cmp.Diff(answer{200, "3600", "0", unix(3600 * time.Second)}, read()); diff != "" {
		t.Errorf("the last request of the bucket (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(answer{429, "3600", "0", unix(3600 * time.Second)}, read()); diff != "" {
		t.Errorf("one past it (-want +got):\n%s", diff)
	}
	s.Advance(time.Second)
	if got := read(); got.Code != 200 {
		t.Errorf("a second later: %+v, want 200 (one request came back)", got)
	}
	if n := s.Calls("ratelimited"); n != 1 {
		t.Errorf("%d requests refused for the limit, want 1", n)
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/servers", nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("a request without the token: %d, want 401", w.Code)
	}
}
