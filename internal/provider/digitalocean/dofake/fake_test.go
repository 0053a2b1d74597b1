package dofake

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRateLimit: each window counts the requests of its length, each
// answer carries the ratelimit-* headers (the hour's when it passes,
// remaining counting down), the request past a window's limit is 429
// too_many_requests with that window's headers, and a request passes
// again once the oldest request of the window expired (ratelimit-reset)
// on the fake's clock. Unset, the limits are DigitalOcean's 5,000 an
// hour and 250 a minute.
func TestRateLimit(t *testing.T) {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	type answer struct {
		Code                    int
		ID                      string // the error's id, "" for none
		Limit, Remaining, Reset string
	}
	unix := func(d time.Duration) string { return strconv.FormatInt(start.Add(d).Unix(), 10) }
	ok := func(limit, remaining int, reset time.Duration) answer {
		return answer{200, "", strconv.Itoa(limit), strconv.Itoa(remaining), unix(reset)}
	}
	refused := func(limit int, reset time.Duration) answer {
		return answer{429, "too_many_requests", strconv.Itoa(limit), "0", unix(reset)}
	}
	type step struct {
		advance time.Duration // before the request
		n       int           // the same request n times (1 when 0), each answered want
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
			reason: "unset: 5,000 an hour, whose headers every answer carries",
			set:    func(*Server) {},
			steps:  []step{{want: ok(5000, 4999, time.Hour)}, {want: ok(5000, 4998, time.Hour)}},
			served: 2,
		},
		"TheDefaultMinute": {
			reason: "unset: the 251st request of a minute is refused, though the hour has room, and passes a minute on",
			set:    func(*Server) {},
			steps: []step{
				{n: 249, want: answer{200, "", "5000", "", unix(time.Hour)}},
				{want: ok(5000, 4750, time.Hour)},
				{want: refused(250, time.Minute)},
				{advance: time.Minute, want: ok(5000, 4749, time.Hour)},
			},
			served: 251, limited: 1,
		},
		"ScaledDownHour": {
			reason: "2 an hour: the 3rd is refused for the hour, still an hour on less a second, and passes at the reset",
			set:    func(s *Server) { s.SetRateLimit(time.Hour, 2, 0) },
			steps: []step{
				{want: ok(2, 1, time.Hour)},
				{want: ok(2, 0, time.Hour)},
				{want: refused(2, time.Hour)},
				{advance: time.Hour - time.Second, want: refused(2, time.Hour)},
				{advance: time.Second, want: ok(2, 1, 2*time.Hour)},
			},
			served: 3, limited: 2,
		},
		"ScaledDownMinute": {
			reason: "3 a minute: the 4th is refused with the minute's headers; the hour's count goes on",
			set:    func(s *Server) { s.SetRateLimit(time.Minute, 3, 0) },
			steps: []step{
				{want: ok(5000, 4999, time.Hour)},
				{advance: 10 * time.Second, want: ok(5000, 4998, time.Hour)},
				{want: ok(5000, 4997, time.Hour)},
				{want: refused(3, time.Minute)},
				{advance: 50 * time.Second, want: ok(5000, 4996, time.Hour)},
				{want: refused(3, 70*time.Second)},
			},
			served: 4, limited: 2,
		},
		"BothFull": {
			reason: "the hour and the minute spent: the answer is the hour's, whose reset is the later",
			set: func(s *Server) {
				s.SetRateLimit(time.Hour, 5000, 5000)
				s.SetRateLimit(time.Minute, 250, 250)
			},
			steps:   []step{{want: refused(5000, time.Hour)}, {advance: time.Minute, want: refused(5000, time.Hour)}},
			limited: 2,
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
				for range max(st.n, 1) {
					r := httptest.NewRequest(http.MethodGet, "/v2/droplets", nil)
					r.Header.Set("Authorization", "Bearer t")
					w := httptest.NewRecorder()
					s.ServeHTTP(w, r)
					var body struct{ ID string }
					if w.Code != http.StatusOK {
						json.Unmarshal(w.Body.Bytes(), &body)
					}
					h := w.Header()
					a := answer{w.Code, body.ID, h.Get("ratelimit-limit"), h.Get("ratelimit-remaining"), h.Get("ratelimit-reset")}
					if st.want.Remaining == "" {
						a.Remaining = "" // counted down through a run of requests: the last of the run is checked
					}
					got = append(got, a)
					want = append(want, st.want)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: the answers (-want +got):\n%s", c.reason, diff)
			}
			if diff := cmp.Diff([2]int{c.served, c.limited}, [2]int{s.Calls("droplets.list"), s.Calls("ratelimited")}); diff != "" {
				t.Errorf("%s: requests [served, refused for the limit] (-want +got):\n%s", c.reason, diff)
			}
		})
	}
	s := NewHandler("t")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v2/droplets", nil))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("a request without the token: %d, want 401", w.Code)
	}
}

// TestListsByTagAndPage: a list filters on one tag, and pages as godo
// reads pages (links.pages.next until the last).
func TestListsByTagAndPage(t *testing.T) {
	s := NewHandler("t")
	for i := range 5 {
		tags := []string{"a"}
		if i%2 == 0 {
			tags = append(tags, "b")
		}
		s.Put("d"+strconv.Itoa(i), "nyc1", tags)
	}
	list := func(query string) (names []string, next string) {
		r := httptest.NewRequest(http.MethodGet, "/v2/droplets?"+query, nil)
		r.Header.Set("Authorization", "Bearer t")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		var body struct {
			Droplets []struct{ Name string } `json:"droplets"`
			Links    struct {
				Pages struct{ Next string } `json:"pages"`
			} `json:"links"`
		}
		json.Unmarshal(w.Body.Bytes(), &body)
		for _, d := range body.Droplets {
			names = append(names, d.Name)
		}
		return names, body.Links.Pages.Next
	}
	if got, _ := list("tag_name=b"); !cmp.Equal(got, []string{"d0", "d2", "d4"}) {
		t.Errorf("tag_name=b: %v, want d0 d2 d4", got)
	}
	got, next := list("tag_name=a&per_page=2&page=3")
	if !cmp.Equal(got, []string{"d4"}) || next != "" {
		t.Errorf("the last page: %v, next %q; want d4 and no next", got, next)
	}
	if _, next := list("tag_name=a&per_page=2&page=1"); next == "" {
		t.Errorf("the first page has no next")
	}
}

// TestTagDelete: DELETE /v2/tags/{tag_id} answers 204 and takes the tag
// off every Droplet that carries it, being destroyed or not ("Deleting a
// tag also untags all the resources that have previously been tagged by
// the Tag"); a tag that is not there is 404; a tag stays when the last
// Droplet that carries it is gone, tagging nothing, until it is deleted.
func TestTagDelete(t *testing.T) {
	s := NewHandler("t")
	live := s.Put("live", "nyc1", []string{"a", "b"})
	gone := s.Put("gone", "nyc1", []string{"a", "c"})
	s.SetStatus(gone, "archive")
	del := func(tag string) int {
		r := httptest.NewRequest(http.MethodDelete, "/v2/tags/"+tag, nil)
		r.Header.Set("Authorization", "Bearer t")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	count := func(tag string) int {
		r := httptest.NewRequest(http.MethodGet, "/v2/tags/"+tag, nil)
		r.Header.Set("Authorization", "Bearer t")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		var body struct {
			Tag struct {
				Resources struct{ Count int } `json:"resources"`
			} `json:"tag"`
		}
		json.Unmarshal(w.Body.Bytes(), &body)
		return body.Tag.Resources.Count
	}
	type state struct {
		Codes   []int
		Tags    []string
		ByID    map[int][]string
		CountOf int
	}
	codes := []int{del("a"), del("a"), del("nothing")}
	s.Settle()
	got := state{Codes: codes, Tags: s.Tags(), ByID: map[int][]string{}, CountOf: count("c")}
	for _, d := range s.Droplets() {
		got.ByID[d.ID] = d.Tags
	}
	want := state{Codes: []int{204, 404, 404}, Tags: []string{"b", "c"}, ByID: map[int][]string{live: {"b"}}, CountOf: 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after deleting tag a twice and a tag that is not there, the destroyed Droplet gone (-want +got):\n%s", diff)
	}
}
