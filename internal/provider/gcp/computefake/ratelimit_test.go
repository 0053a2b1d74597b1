package computefake_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"

	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
)

// TestRateQuotas: each group of a project counts its own requests in the
// minute of the fake's clock, the one past its limit is refused with
// Compute's 403 rateLimitExceeded (as googleapi decodes it), other groups
// and other projects go on, and the next minute, not a minute after the
// refusal, fills the group again; a scaled-down interval counts as the
// minute does, synchronized to its multiples of the clock. Every metered
// request of the project is counted, refused ones too.
func TestRateQuotas(t *testing.T) {
	const other = "other-project"
	get := "GET /compute/v1/projects/" + project + "/zones/us-central1-a/instances/absent"
	list := "GET /compute/v1/projects/" + project + "/aggregated/instances"
	del := "DELETE /compute/v1/projects/" + project + "/zones/us-central1-a/instances/absent"
	wait := "POST /compute/v1/projects/" + project + "/zones/us-central1-a/operations/absent/wait"
	otherGet := "GET /compute/v1/projects/" + other + "/zones/us-central1-a/instances/absent"
	type answer struct {
		Status         int
		Reason, Domain string
	}
	passed := func(status int) answer { return answer{Status: status} }
	refused := answer{http.StatusForbidden, "rateLimitExceeded", "usageLimits"}
	cases := map[string]struct {
		reason string
		limits computefake.RateLimits
		// interval, when set, scales the minute down
		// (SetRateLimitWindow).
		interval time.Duration
		steps    []string // a request, or "+DURATION" to advance the clock
		want     []answer // one per request
		used     map[string]int
		refused  int
	}{
		"Off": {
			reason: "a new fake does not meter",
			steps:  []string{get, get, get},
			want:   []answer{passed(404), passed(404), passed(404)},
			used:   map[string]int{},
		},
		"ReadsSpent": {
			reason: "the third get of a minute is past a limit of two, and stays refused",
			limits: computefake.RateLimits{Reads: 2},
			steps:  []string{get, get, get, get},
			want:   []answer{passed(404), passed(404), refused, refused},
			used:   map[string]int{"Read requests": 2}, refused: 2,
		},
		"GroupsApart": {
			reason: "a list, a delete and an operation's wait count in their own groups, and another project in its own",
			limits: computefake.RateLimits{Reads: 1, Lists: 1, Mutations: 1, OperationReads: 1},
			steps:  []string{get, list, del, wait, otherGet, get, list, del, wait},
			want:   []answer{passed(404), passed(200), passed(404), passed(404), passed(404), refused, refused, refused, refused},
			used:   map[string]int{"Read requests": 1, "List requests": 1, "Queries": 1, "Operation read requests": 1}, refused: 4,
		},
		"NextMinute": {
			reason: "refused at 12:00:15, the get passes at 12:01:00 and not before",
			limits: computefake.RateLimits{Reads: 1},
			steps:  []string{get, get, "+44s", get, "+1s", get, get},
			want:   []answer{passed(404), refused, refused, passed(404), refused},
			used:   map[string]int{"Read requests": 1}, refused: 3,
		},
		"ScaledInterval": {
			reason:   "in intervals of 10 s, refused at 12:00:15 and 12:00:19, the get passes at 12:00:20",
			limits:   computefake.RateLimits{Reads: 1},
			interval: 10 * time.Second,
			steps:    []string{get, get, "+4s", get, "+1s", get, get},
			want:     []answer{passed(404), refused, refused, passed(404), refused},
			used:     map[string]int{"Read requests": 1}, refused: 3,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := computefake.New()
			t.Cleanup(f.Close)
			f.SetClock(func() time.Time { return time.Date(2026, 12, 7, 12, 0, 15, 0, time.UTC) })
			switch {
			case c.interval > 0:
				f.SetRateLimitWindow(c.limits, c.interval)
			case c.limits != (computefake.RateLimits{}):
				f.SetRateLimits(c.limits)
			}
			var got []answer
			for _, step := range c.steps {
				if d, ok := strings.CutPrefix(step, "+"); ok {
					dur, err := time.ParseDuration(d)
					if err != nil {
						t.Fatal(err)
					}
					f.Advance(dur)
					continue
				}
				got = append(got, send(t, f.URL, step))
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.reason, diff)
			}
			if diff := cmp.Diff(c.used, f.RateLimitUsed(project)); diff != "" {
				t.Errorf("%s: the minute's counts (-want +got):\n%s", c.reason, diff)
			}
			if got := f.Calls("rateLimited"); got != c.refused {
				t.Errorf("%s: %d refused, want %d", c.reason, got, c.refused)
			}
			if c.limits != (computefake.RateLimits{}) {
				counted, refused := f.RateLimitCounted(project)
				if want := len(c.want) - strings.Count(strings.Join(c.steps, " "), other); counted != want || refused != c.refused {
					t.Errorf("%s: RateLimitCounted = %d counted, %d refused; want %d and %d", c.reason, counted, refused, want, c.refused)
				}
			}
		})
	}
}

// TestRateLimitRemaining: SetRateLimitRemaining lets n requests pass
// whatever their groups and refuses the next, until the minute ends.
func TestRateLimitRemaining(t *testing.T) {
	f := computefake.New()
	t.Cleanup(f.Close)
	f.SetClock(func() time.Time { return time.Date(2026, 12, 7, 12, 0, 15, 0, time.UTC) })
	f.SetRateLimits(computefake.ComputeRateLimits)
	f.SetRateLimitRemaining(2)
	get := "GET /compute/v1/projects/" + project + "/zones/us-central1-a/instances/absent"
	list := "GET /compute/v1/projects/" + project + "/aggregated/instances"
	var got []int
	for _, step := range []string{list, get, get, get} {
		got = append(got, send(t, f.URL, step).Status)
	}
	f.Advance(45 * time.Second)
	got = append(got, send(t, f.URL, get).Status)
	if diff := cmp.Diff([]int{200, 404, 403, 403, 404}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

// send makes a request ("METHOD /path") and reads the answer: its status,
// and for an error the reason as googleapi decodes it and the domain of
// the body's errors[].
func send(t *testing.T, base, step string) struct {
	Status         int
	Reason, Domain string
} {
	t.Helper()
	method, path, _ := strings.Cut(step, " ")
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := struct {
		Status         int
		Reason, Domain string
	}{Status: resp.StatusCode}
	if resp.StatusCode != http.StatusForbidden {
		return out
	}
	var body struct {
		Error struct {
			Errors []struct{ Domain string }
		}
	}
	gerr := googleapi.CheckResponse(resp).(*googleapi.Error)
	if err := json.Unmarshal([]byte(gerr.Body), &body); err != nil || len(body.Error.Errors) != 1 || len(gerr.Errors) != 1 {
		t.Fatalf("the refusal %q: %v", gerr.Body, err)
	}
	out.Reason, out.Domain = gerr.Errors[0].Reason, body.Error.Errors[0].Domain
	return out
}
