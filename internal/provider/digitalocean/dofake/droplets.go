package dofake

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/digitalocean/godo"
)

// MaxUserDataBytes is DigitalOcean's limit on a Droplet's user_data (64
// KiB).
const MaxUserDataBytes = 64 << 10

// droplet is what the fake keeps of a Droplet.
type droplet struct {
	godo.Droplet
	userData string
}

// wire is the Droplet as the API writes it.
func (d *droplet) wire() wireDroplet {
	rg, _ := findRegion(d.Region.Slug)
	z, _ := findSize(d.SizeSlug)
	start, _ := time.Parse(time.RFC3339, d.Created)
	start = start.Add(24 * time.Hour).Truncate(24 * time.Hour)
	return wireDroplet{Droplet: d.Droplet, Region: wireRegionOf(rg), Size: wireSizeOf(z), BackupIDs: []int{}, SnapshotIDs: []int{},
		Features: orEmpty(d.Features), Locked: d.Locked, Tags: orEmpty(slices.Clone(d.Tags)), Networks: d.Networks,
		NextBackupWindow: &godo.BackupWindow{Start: &godo.Timestamp{Time: start}, End: &godo.Timestamp{Time: start.Add(4 * time.Hour)}}}
}

// hostnameRE is what a Droplet's name must be: "The human-readable
// string you wish to use when displaying the Droplet name … must be a
// valid hostname" (the reference); 255 characters at most.
var hostnameRE = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$`)

var dropletRoutes = []route{
	{http.MethodPost, "droplets.create", path(`/droplets`), (*Server).createDroplet},
	{http.MethodGet, "droplets.list", path(`/droplets`), func(s *Server, w *writer, r *http.Request, _ []string) {
		q := r.URL.Query()
		tag, name := q.Get("tag_name"), q.Get("name")
		if tag != "" && name != "" {
			// The reference: "name … cannot be combined with tag_name".
			w.error(badRequest("tag_name and name cannot be combined"))
			return
		}
		var all []wireDroplet
		for _, id := range slices.Sorted(maps.Keys(s.droplets)) {
			d := s.droplets[id]
			if (tag == "" || slices.Contains(d.Tags, tag)) && (name == "" || d.Name == name) {
				all = append(all, d.wire())
			}
		}
		items, links, meta := page(s, r, all)
		w.json(http.StatusOK, struct {
			Droplets []wireDroplet `json:"droplets"`
			Links    *godo.Links   `json:"links"`
			Meta     *godo.Meta    `json:"meta"`
		}{items, links, meta})
	}},
	{http.MethodGet, "droplets.get", path(`/droplets/(\d+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		d, ok := s.droplet(m[0])
		if !ok {
			w.error(notFound())
			return
		}
		w.json(http.StatusOK, struct {
			Droplet wireDroplet `json:"droplet"`
		}{d.wire()})
	}},
	{http.MethodDelete, "droplets.delete", path(`/droplets/(\d+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		d, ok := s.droplet(m[0])
		if !ok || d.Status == "archive" {
			// A Droplet being destroyed is as good as gone: the fake's
			// assumption, as the reference says nothing of a second
			// delete.
			w.error(notFound())
			return
		}
		// The Droplet stays, "archive", until Settle; its proxy stops at
		// once, as a destroyed VM's tunnels are cut.
		d.Status = "archive"
		s.unserve(d.ID)
		s.action("destroy", "droplet", d.ID, d.Region.Slug)
		w.noContent()
	}},
}

// droplet finds a Droplet by its id in the path. Called with s.mu held.
func (s *Server) droplet(id string) (*droplet, bool) {
	n, err := strconv.Atoi(id)
	if err != nil {
		return nil, false
	}
	d, ok := s.droplets[n]
	return d, ok
}

// createDroplet makes a Droplet as POST /v2/droplets does, refusing it in
// the order the fake assumes DigitalOcean checks: the request's own
// fields, the account's Droplet limit, then the region's capacity. Names
// are not unique: a second create of a name makes a second Droplet.
func (s *Server) createDroplet(w *writer, r *http.Request, _ []string) {
	// godo writes the image as its slug or its id (DropletCreateImage's
	// MarshalJSON), and reads it no way back.
	var body struct {
		godo.DropletCreateRequest
		Image json.RawMessage `json:"image"`
	}
	if !decode(w, r, &body) {
		return
	}
	req := body.DropletCreateRequest
	if err := json.Unmarshal(body.Image, &req.Image.Slug); err != nil {
		if err := json.Unmarshal(body.Image, &req.Image.ID); err != nil {
			w.error(badRequest("image: %s is no slug and no id", body.Image))
			return
		}
	}
	s.creates = append(s.creates, req)
	if f := s.checkCreate(req); f != nil {
		w.error(*f)
		return
	}
	rg, _ := findRegion(req.Region)
	z, _ := findSize(req.Size)
	im, _ := findImage(req.Image)
	d := &droplet{userData: req.UserData, Droplet: godo.Droplet{
		ID: s.id(), Name: req.Name, Memory: z.Memory, Vcpus: z.Vcpus, Disk: z.Disk, Region: &rg, Image: &im, Size: &z, SizeSlug: z.Slug,
		Status: "new", Created: s.now().Format(time.RFC3339), Tags: slices.Clone(req.Tags), VolumeIDs: []string{},
		Features: []string{}, VPCUUID: "5a4981aa-9653-4bd1-bef5-d6bff52042e4",
	}}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	addr, served := s.nextAddress(false)
	if !served {
		s.nextIPv4++
		addr = fmt.Sprintf("198.51.100.%d", s.nextIPv4%250+1)
	}
	d.Networks = &godo.Networks{V4: []godo.NetworkV4{
		{IPAddress: addr, Netmask: "255.255.240.0", Gateway: "198.51.100.254", Type: "public"},
		{IPAddress: fmt.Sprintf("10.10.0.%d", s.nextIPv4%250+1), Netmask: "255.255.0.0", Gateway: "10.10.0.1", Type: "private"},
	}, V6: []godo.NetworkV6{}}
	if req.IPv6 {
		d.Features = append(d.Features, "ipv6")
		// As the description's example: the first address of the
		// Droplet's own /124 (16 addresses), on a /64 with its gateway.
		// The id takes two groups: one holds 16 bits, and ids are larger.
		d.Networks.V6 = append(d.Networks.V6, godo.NetworkV6{IPAddress: fmt.Sprintf("2001:db8:d0:0:%x:%x::1", d.ID>>16, d.ID&0xffff), Netmask: 64, Gateway: "2001:db8:d0::1", Type: "public"})
	}
	for _, t := range d.Tags {
		s.tags[t] = true
	}
	s.droplets[d.ID] = d
	s.boot(d.ID, addr, req.UserData)
	a := s.action("create", "droplet", d.ID, rg.Slug)
	w.json(http.StatusAccepted, struct {
		Droplet wireDroplet `json:"droplet"`
		Links   godo.Links  `json:"links"`
	}{d.wire(), godo.Links{Actions: []godo.LinkAction{{ID: a.ID, Rel: "create", HREF: s.URL + "/v2/actions/" + strconv.Itoa(a.ID)}}}})
}

// tagRE is what a tag's name must be (the description's pattern, 255
// characters at most).
var tagRE = regexp.MustCompile(`^[a-zA-Z0-9_\-:]{1,255}$`)

func (s *Server) checkCreate(req godo.DropletCreateRequest) *Fault {
	fault := func(f Fault) *Fault { return &f }
	rg, ok := findRegion(req.Region)
	switch {
	case !hostnameRE.MatchString(req.Name) || len(req.Name) > 255:
		return fault(unprocessable("Name is invalid: %q is not a valid hostname", req.Name))
	case !ok:
		return fault(unprocessable("Region is invalid: %q", req.Region))
	case !rg.Available:
		return fault(RegionUnavailable())
	case len(req.UserData) > MaxUserDataBytes:
		return fault(unprocessable("User data is too long (%d bytes, at most %d)", len(req.UserData), MaxUserDataBytes))
	}
	z, ok := findSize(req.Size)
	switch {
	case !ok:
		return fault(unprocessable("Size is invalid: %q", req.Size))
	case !slices.Contains(z.Regions, rg.Slug):
		return fault(SizeUnavailable())
	}
	if _, ok := findImage(req.Image); !ok {
		return fault(unprocessable("Image is invalid: %+v", req.Image))
	}
	for _, t := range req.Tags {
		if !tagRE.MatchString(t) {
			return fault(unprocessable("Tag %q is invalid: tags may contain letters, numbers, colons, dashes, and underscores, at most 255", t))
		}
	}
	live := 0
	for _, d := range s.droplets {
		if d.Status != "archive" {
			live++
		}
	}
	if s.dropletLimit > 0 && live >= s.dropletLimit {
		return fault(DropletLimit())
	}
	return s.takeCreateFailure(rg.Slug)
}

// Put plants an active Droplet in region as another tool would have made
// it, with these tags, and returns its id.
func (s *Server) Put(name, region string, tags []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rg, ok := findRegion(region)
	if !ok {
		panic("dofake: no region " + region)
	}
	z, im := Sizes[0], Images[0]
	s.nextIPv4++
	d := &droplet{Droplet: godo.Droplet{ID: s.id(), Name: name, Memory: z.Memory, Vcpus: z.Vcpus, Disk: z.Disk, Region: &rg, Image: &im,
		Size: &z, SizeSlug: z.Slug, Status: "active", Created: s.now().Format(time.RFC3339), Tags: slices.Clone(tags), VolumeIDs: []string{},
		Features: []string{}, Networks: &godo.Networks{V4: []godo.NetworkV4{{IPAddress: fmt.Sprintf("198.51.100.%d", s.nextIPv4%250+1),
			Netmask: "255.255.240.0", Gateway: "198.51.100.254", Type: "public"}}, V6: []godo.NetworkV6{}}}}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	for _, t := range d.Tags {
		s.tags[t] = true
	}
	s.droplets[d.ID] = d
	return d.ID
}

// SetStatus sets a Droplet's status, as DigitalOcean would on its own (a
// Droplet powered off by someone, "off"), reporting whether it exists.
func (s *Server) SetStatus(id int, status string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.droplets[id]
	if ok {
		d.Status = status
	}
	return ok
}

// UserData returns the user_data a Droplet was created with.
func (s *Server) UserData(id int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.droplets[id]; ok {
		return d.userData
	}
	return ""
}

// Droplets returns every Droplet, by id, those being destroyed too.
func (s *Server) Droplets() []godo.Droplet {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []godo.Droplet
	for _, id := range slices.Sorted(maps.Keys(s.droplets)) {
		d := s.droplets[id].Droplet
		d.Tags = slices.Clone(d.Tags)
		out = append(out, d)
	}
	return out
}
