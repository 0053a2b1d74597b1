package dofake

import (
	"maps"
	"net/http"
	"slices"

	"github.com/digitalocean/godo"
)

// A tag is a resource of its own: made by POST /v2/tags or with a Droplet
// that names it, and it stays when nothing carries it any more, until it
// is deleted.

var tagRoutes = []route{
	{http.MethodPost, "tags.create", path(`/tags`), func(s *Server, w *writer, r *http.Request, _ []string) {
		var req godo.TagCreateRequest
		if !decode(w, r, &req) {
			return
		}
		if !tagRE.MatchString(req.Name) {
			w.error(unprocessable("Tag %q is invalid: tags may contain letters, numbers, colons, dashes, and underscores, at most 255", req.Name))
			return
		}
		// Making a tag that exists answers it: the fake's reading of the
		// reference, whose create says nothing of a name in use.
		s.tags[req.Name] = true
		w.json(http.StatusCreated, struct {
			Tag wireTag `json:"tag"`
		}{s.wireTag(req.Name)})
	}},
	{http.MethodGet, "tags.list", path(`/tags`), func(s *Server, w *writer, r *http.Request, _ []string) {
		var all []wireTag
		for _, name := range slices.Sorted(maps.Keys(s.tags)) {
			all = append(all, s.wireTag(name))
		}
		items, links, meta := page(s, r, all)
		w.json(http.StatusOK, struct {
			Tags  []wireTag   `json:"tags"`
			Links *godo.Links `json:"links"`
			Meta  *godo.Meta  `json:"meta"`
		}{items, links, meta})
	}},
	{http.MethodGet, "tags.get", path(`/tags/([^/]+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		if !s.tags[m[0]] {
			w.error(notFound())
			return
		}
		w.json(http.StatusOK, struct {
			Tag wireTag `json:"tag"`
		}{s.wireTag(m[0])})
	}},
	{http.MethodDelete, "tags.delete", path(`/tags/([^/]+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		if !s.tags[m[0]] {
			w.error(notFound())
			return
		}
		// "Deleting a tag also untags all the resources that have
		// previously been tagged by the Tag" (the reference): Droplets
		// being destroyed too. The answer is 204 without a body, as every
		// delete's.
		delete(s.tags, m[0])
		for _, d := range s.droplets {
			d.Tags = slices.DeleteFunc(d.Tags, func(t string) bool { return t == m[0] })
		}
		w.noContent()
	}},
}

// wireTag is the tag of name with the count of Droplets it tags, those
// being destroyed included (the fake's assumption: the reference does not
// say when a destroyed Droplet stops counting; the provider does not
// rely on either). Called with s.mu held.
func (s *Server) wireTag(name string) wireTag {
	n := 0
	for _, d := range s.droplets {
		if slices.Contains(d.Tags, name) {
			n++
		}
	}
	return wireTag{Name: name, Resources: wireTagCount{Count: n, Droplets: wireCounts{Count: n}}}
}

// Tags returns every tag's name, sorted.
func (s *Server) Tags() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.tags))
}

// PutTag makes a tag, as another tool would.
func (s *Server) PutTag(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tags[name] = true
}
