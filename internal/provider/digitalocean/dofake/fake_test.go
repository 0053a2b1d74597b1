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

// TestRateLimit: the window counts the requests of its length, each
// answer carries the ratelimit-* headers, and a request past the limit is
// 429 too_many_requests until the oldest request of the window expired
// (ratelimit-reset).
func TestRateLimit(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s := NewHandler("t")
	s.SetClock(func() time.Time { return now })
	s.SetRateLimit(time.Minute, 2, 1)
	get := func() (int, http.Header) {
		r := httptest.NewRequest(http.MethodGet, "/v2/droplets", nil)
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
		return answer{code, h.Get("ratelimit-limit"), h.Get("ratelimit-remaining"), h.Get("ratelimit-reset")}
	}
	unix := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	if diff := cmp.Diff(answer{200, "2", "0", unix(time.Minute)}, read()); diff != "" {
		t.Errorf("the last request of the window (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(answer{429, "2", "0", unix(time.Minute)}, read()); diff != "" {
		t.Errorf("one past it (-want +got):\n%s", diff)
	}
	s.Advance(time.Minute)
	if got := read(); got.Code != 200 || got.Remaining != "1" {
		t.Errorf("a minute later: %+v, want 200 with one left (the window's requests expired)", got)
	}
	if n := s.Calls("ratelimited"); n != 1 {
		t.Errorf("%d requests refused for the limit, want 1", n)
	}
	r := httptest.NewRequest(http.MethodGet, "/v2/droplets", nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
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
