package hetznerfake

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// The catalog the fake serves: Hetzner's locations with their network
// zones, the server types the provider's defaults name and the Debian
// images. The shared x86 CX types are Hetzner's EU locations' only; the
// CPX types are in every location.
var (
	Locations = []schema.Location{
		{ID: 1, Name: "fsn1", Description: "Falkenstein DC Park 1", Country: "DE", City: "Falkenstein", NetworkZone: "eu-central"},
		{ID: 2, Name: "nbg1", Description: "Nuremberg DC Park 1", Country: "DE", City: "Nuremberg", NetworkZone: "eu-central"},
		{ID: 3, Name: "hel1", Description: "Helsinki DC Park 1", Country: "FI", City: "Helsinki", NetworkZone: "eu-central"},
		{ID: 4, Name: "ash", Description: "Ashburn, VA", Country: "US", City: "Ashburn, VA", NetworkZone: "us-east"},
		{ID: 5, Name: "hil", Description: "Hillsboro, OR", Country: "US", City: "Hillsboro, OR", NetworkZone: "us-west"},
		{ID: 6, Name: "sin", Description: "Singapore", Country: "SG", City: "Singapore", NetworkZone: "ap-southeast"},
	}
	ServerTypes = []schema.ServerType{
		serverType(101, "cx23", "shared", 2, 4, 40, "fsn1", "nbg1", "hel1"),
		serverType(102, "cx33", "shared", 4, 8, 80, "fsn1", "nbg1", "hel1"),
		serverType(103, "cpx22", "shared", 2, 4, 80, "fsn1", "nbg1", "hel1", "ash", "hil", "sin"),
		serverType(104, "cpx32", "shared", 4, 8, 160, "fsn1", "nbg1", "hel1", "ash", "hil", "sin"),
	}
	Images = []schema.Image{image(201, "debian-13", "13"), image(202, "debian-12", "12")}
)

func serverType(id int64, name, category string, cores int, memory float32, disk int, locations ...string) schema.ServerType {
	t := schema.ServerType{ID: id, Name: name, Description: name, Category: category, Cores: cores, Memory: memory, Disk: disk,
		StorageType: "local", CPUType: "shared", Architecture: "x86", IncludedTraffic: 20 << 40,
		Prices: serverTypePricesAt(name, locations)}
	for _, l := range locations {
		if loc, ok := location(l); ok {
			t.Locations = append(t.Locations, schema.ServerTypeLocation{ID: loc.ID, Name: loc.Name, Available: true, Recommended: true})
		}
	}
	return t
}

func image(id int64, name, version string) schema.Image {
	created := time.Date(2025, 8, 10, 0, 0, 0, 0, time.UTC)
	return schema.Image{ID: id, Status: "available", Type: "system", Name: &name, Description: "Debian " + version,
		DiskSize: 5, Created: &created, OSFlavor: "debian", OSVersion: &version, Architecture: "x86", RapidDeploy: true, Labels: map[string]string{}}
}

// location finds a location by name or id.
func location(nameOrID string) (schema.Location, bool) {
	for _, l := range Locations {
		if l.Name == nameOrID || strconv.FormatInt(l.ID, 10) == nameOrID {
			return l, true
		}
	}
	return schema.Location{}, false
}

func findServerType(ref schema.IDOrName) (schema.ServerType, bool) {
	for _, t := range ServerTypes {
		if (ref.ID != 0 && t.ID == ref.ID) || (ref.Name != "" && t.Name == ref.Name) {
			return t, true
		}
	}
	return schema.ServerType{}, false
}

func findImage(ref schema.IDOrName) (schema.Image, bool) {
	for _, im := range Images {
		if (ref.ID != 0 && im.ID == ref.ID) || (ref.Name != "" && *im.Name == ref.Name) {
			return im, true
		}
	}
	return schema.Image{}, false
}

// datacenter is the datacenter of a location, as servers name it.
func datacenter(l schema.Location) schema.Datacenter {
	return schema.Datacenter{ID: l.ID, Name: l.Name + "-dc1", Description: l.Description + " DC 1", Location: l}
}

var catalogRoutes = []route{
	{http.MethodGet, "locations.list", path(`/locations`), func(s *Server, w http.ResponseWriter, r *http.Request, _ []string) {
		list := filterName(r, Locations, func(l schema.Location) string { return l.Name })
		items, meta := page(r, list)
		writeJSON(w, http.StatusOK, struct {
			schema.LocationListResponse
			Meta schema.Meta `json:"meta"`
		}{schema.LocationListResponse{Locations: items}, meta})
	}},
	{http.MethodGet, "locations.get", path(`/locations/(\d+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		l, ok := location(m[0])
		if !ok {
			writeError(w, notFound("location", m[0]))
			return
		}
		writeJSON(w, http.StatusOK, schema.LocationGetResponse{Location: l})
	}},
	{http.MethodGet, "datacenters.list", path(`/datacenters`), func(s *Server, w http.ResponseWriter, r *http.Request, _ []string) {
		var all []schema.Datacenter
		for _, l := range Locations {
			all = append(all, datacenter(l))
		}
		all = filterName(r, all, func(d schema.Datacenter) string { return d.Name })
		items, meta := page(r, all)
		writeJSON(w, http.StatusOK, struct {
			schema.DatacenterListResponse
			Meta schema.Meta `json:"meta"`
		}{schema.DatacenterListResponse{Datacenters: items}, meta})
	}},
	{http.MethodGet, "server_types.list", path(`/server_types`), func(s *Server, w http.ResponseWriter, r *http.Request, _ []string) {
		list := filterName(r, ServerTypes, func(t schema.ServerType) string { return t.Name })
		items, meta := page(r, list)
		writeJSON(w, http.StatusOK, struct {
			schema.ServerTypeListResponse
			Meta schema.Meta `json:"meta"`
		}{schema.ServerTypeListResponse{ServerTypes: items}, meta})
	}},
	{http.MethodGet, "server_types.get", path(`/server_types/(\d+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		id, _ := strconv.ParseInt(m[0], 10, 64)
		t, ok := findServerType(schema.IDOrName{ID: id})
		if !ok {
			writeError(w, notFound("server_type", m[0]))
			return
		}
		writeJSON(w, http.StatusOK, schema.ServerTypeGetResponse{ServerType: t})
	}},
	{http.MethodGet, "images.list", path(`/images`), func(s *Server, w http.ResponseWriter, r *http.Request, _ []string) {
		list := filterName(r, Images, func(im schema.Image) string { return *im.Name })
		if a := r.URL.Query()["architecture"]; len(a) > 0 {
			list = slices.DeleteFunc(slices.Clone(list), func(im schema.Image) bool { return !slices.Contains(a, im.Architecture) })
		}
		items, meta := page(r, list)
		writeJSON(w, http.StatusOK, struct {
			schema.ImageListResponse
			Meta schema.Meta `json:"meta"`
		}{schema.ImageListResponse{Images: items}, meta})
	}},
	{http.MethodGet, "images.get", path(`/images/(\d+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		id, _ := strconv.ParseInt(m[0], 10, 64)
		im, ok := findImage(schema.IDOrName{ID: id})
		if !ok {
			writeError(w, notFound("image", m[0]))
			return
		}
		writeJSON(w, http.StatusOK, schema.ImageGetResponse{Image: im})
	}},
}

// filterName keeps the items of the ?name= the request asks for, if any.
func filterName[T any](r *http.Request, all []T, name func(T) string) []T {
	want := r.URL.Query().Get("name")
	if want == "" {
		return all
	}
	var out []T
	for _, it := range all {
		if name(it) == want {
			out = append(out, it)
		}
	}
	return out
}
