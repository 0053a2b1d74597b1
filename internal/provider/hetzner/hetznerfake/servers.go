package hetznerfake

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// MaxUserDataBytes is Hetzner's limit on a server's user_data (32 KiB,
// "user_data: Cloud-Init user data to use during Server creation. This
// field is limited to 32KiB").
const MaxUserDataBytes = 32 << 10

// wireServer is a server as the API sends it: the SDK's schema.Server,
// and the datacenter Hetzner sent beside the location until it dropped
// the field, which clients built before (Debian's hcloud CLI, 1.30) still
// read for the location they print.
type wireServer struct {
	schema.Server
	Datacenter schema.Datacenter `json:"datacenter"`
}

func wire(sv *schema.Server) wireServer {
	return wireServer{Server: *sv, Datacenter: datacenter(sv.Location)}
}

// hostnameRE is what a server's name must be: "Name of the Server to
// create (must be unique per Project and a valid hostname as per RFC
// 1123)".
var hostnameRE = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$`)

var serverRoutes = []route{
	{http.MethodPost, "servers.create", path(`/servers`), (*Server).createServer},
	{http.MethodGet, "servers.list", path(`/servers`), (*Server).listServers},
	{http.MethodGet, "servers.get", path(`/servers/(\d+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		sv, ok := s.server(m[0])
		if !ok {
			writeError(w, notFound("server", m[0]))
			return
		}
		writeJSON(w, http.StatusOK, struct {
			Server wireServer `json:"server"`
		}{wire(sv)})
	}},
	{http.MethodPut, "servers.update", path(`/servers/(\d+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		sv, ok := s.server(m[0])
		if !ok {
			writeError(w, notFound("server", m[0]))
			return
		}
		var req schema.ServerUpdateRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeError(w, Fault{Code: "json_error", Status: http.StatusBadRequest, Message: err.Error()})
			return
		}
		if req.Labels != nil {
			if f := checkLabels(*req.Labels); f != nil {
				writeError(w, *f)
				return
			}
			sv.Labels = maps.Clone(*req.Labels)
		}
		if req.Name != "" {
			sv.Name = req.Name
		}
		writeJSON(w, http.StatusOK, struct {
			Server wireServer `json:"server"`
		}{wire(sv)})
	}},
	{http.MethodDelete, "servers.delete", path(`/servers/(\d+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		sv, ok := s.server(m[0])
		if !ok {
			writeError(w, notFound("server", m[0]))
			return
		}
		if sv.Protection.Delete {
			writeError(w, Fault{Code: "protected", Status: http.StatusForbidden, Message: "server is delete protected"})
			return
		}
		// The server stays, "deleting", until its action finishes; its
		// proxy stops at once.
		sv.Status = "deleting"
		s.unserve(sv.ID)
		writeJSON(w, http.StatusOK, schema.ServerDeleteResponse{Action: *s.action("delete_server", "server", sv.ID)})
	}},
}

// server finds a server by its id in the path. Called with s.mu held.
func (s *Server) server(id string) (*schema.Server, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, false
	}
	sv, ok := s.servers[n]
	return sv, ok
}

// createServer makes a server as POST /servers does, refusing it in the
// order the fake assumes Hetzner checks: the request's own fields, the
// name's uniqueness, the project's limit, then the location's capacity.
func (s *Server) createServer(w http.ResponseWriter, r *http.Request, _ []string) {
	var req schema.ServerCreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, Fault{Code: "json_error", Status: http.StatusBadRequest, Message: err.Error()})
		return
	}
	s.creates = append(s.creates, req)
	if f := s.checkCreate(req); f != nil {
		writeError(w, *f)
		return
	}
	loc, _ := location(cmpOr(req.Location, "fsn1"))
	st, _ := findServerType(req.ServerType)
	im, _ := findImage(req.Image)
	now := s.now()
	sv := &schema.Server{
		ID: s.id(), Name: req.Name, Status: "initializing", Created: now,
		ServerType: st, Location: loc, Image: &im, IncludedTraffic: uint64(st.IncludedTraffic),
		Labels: map[string]string{}, Volumes: []int64{}, LoadBalancers: []int64{}, PrivateNet: []schema.ServerPrivateNet{},
		PrimaryDiskSize: st.Disk,
	}
	sv.PublicNet.FloatingIPs, sv.PublicNet.Firewalls = []int64{}, []schema.ServerFirewall{}
	if req.Labels != nil {
		sv.Labels = maps.Clone(*req.Labels)
	}
	pn := req.PublicNet
	if pn == nil {
		pn = &schema.ServerCreatePublicNet{EnableIPv4: true, EnableIPv6: true}
	}
	// Every public address of a server is a Primary IP: the one the
	// request names, or one made with it that goes with it
	// (auto_delete), as the reference's Primary IPs section describes.
	if pn.IPv4ID != 0 {
		ip := s.primaryIPs[pn.IPv4ID]
		ip.AssigneeID, ip.AssigneeType = &sv.ID, "server"
		sv.PublicNet.IPv4 = schema.ServerPublicNetIPv4{ID: ip.ID, IP: ip.IP}
	} else if pn.EnableIPv4 {
		addr, served := s.nextAddress(false)
		if !served {
			s.nextIPv4++
			addr = fmt.Sprintf("198.51.100.%d", s.nextIPv4%250+1)
		}
		ip := s.newPrimaryIP(fmt.Sprintf("primary_ip-%d", s.nextID+1), "ipv4", addr, loc, nil, true)
		ip.AssigneeID, ip.AssigneeType = &sv.ID, "server"
		sv.PublicNet.IPv4 = schema.ServerPublicNetIPv4{ID: ip.ID, IP: ip.IP}
	}
	if pn.EnableIPv6 {
		ip := s.newPrimaryIP(fmt.Sprintf("primary_ip-%d", s.nextID+1), "ipv6", fmt.Sprintf("2001:db8:%x::/64", s.nextID+1), loc, nil, true)
		ip.AssigneeID, ip.AssigneeType = &sv.ID, "server"
		sv.PublicNet.IPv6 = schema.ServerPublicNetIPv6{ID: ip.ID, IP: ip.IP, DNSPtr: []schema.ServerPublicNetIPv6DNSPtr{}}
	}
	s.servers[sv.ID] = sv
	s.userData[sv.ID] = req.UserData
	s.boot(sv.ID, sv.PublicNet.IPv4.IP, req.UserData)
	create := s.action("create_server", "server", sv.ID)
	start := s.action("start_server", "server", sv.ID)
	writeJSON(w, http.StatusCreated, struct {
		Server       wireServer      `json:"server"`
		Action       schema.Action   `json:"action"`
		NextActions  []schema.Action `json:"next_actions"`
		RootPassword *string         `json:"root_password"`
	}{wire(sv), *create, []schema.Action{*start}, nil})
}

func (s *Server) checkCreate(req schema.ServerCreateRequest) *Fault {
	fault := func(f Fault) *Fault { return &f }
	loc, ok := location(cmpOr(req.Location, "fsn1"))
	switch {
	case !hostnameRE.MatchString(req.Name) || len(req.Name) > 63:
		return fault(invalidInput("invalid input in field 'name': %q is not a valid hostname", req.Name))
	case !ok:
		return fault(invalidInput("invalid input in field 'location': location %q not found", req.Location))
	case len(req.UserData) > MaxUserDataBytes:
		return fault(invalidInput("invalid input in field 'user_data': is %d bytes, over %d", len(req.UserData), MaxUserDataBytes))
	}
	st, ok := findServerType(req.ServerType)
	if !ok {
		return fault(invalidInput("invalid input in field 'server_type': server type %v not found", req.ServerType))
	}
	if !slices.ContainsFunc(st.Locations, func(l schema.ServerTypeLocation) bool { return l.Name == loc.Name }) {
		return fault(invalidInput("invalid input in field 'server_type': server type %s is not available in location %s", st.Name, loc.Name))
	}
	if _, ok := findImage(req.Image); !ok {
		return fault(invalidInput("invalid input in field 'image': image %v not found", req.Image))
	}
	if req.Labels != nil {
		if f := checkLabels(*req.Labels); f != nil {
			return f
		}
	}
	if pn := req.PublicNet; pn != nil && pn.IPv4ID != 0 {
		ip, ok := s.primaryIPs[pn.IPv4ID]
		switch {
		case !ok:
			return fault(notFound("primary_ip", strconv.FormatInt(pn.IPv4ID, 10)))
		case ip.AssigneeID != nil:
			return fault(Fault{Code: "primary_ip_assigned", Status: http.StatusConflict, Message: fmt.Sprintf("primary IP %d is already assigned", ip.ID)})
		case ip.Location.Name != loc.Name:
			return fault(Fault{Code: "primary_ip_datacenter_mismatch", Status: http.StatusPreconditionFailed,
				Message: fmt.Sprintf("primary IP %d is in %s, not %s", ip.ID, ip.Location.Name, loc.Name)})
		}
	}
	for _, sv := range s.servers {
		if sv.Name == req.Name {
			return fault(Fault{Code: "uniqueness_error", Status: http.StatusConflict, Message: "server name is already used"})
		}
	}
	if s.serverLimit > 0 && len(s.servers) >= s.serverLimit {
		return fault(LimitExceeded("server"))
	}
	if s.primaryIPLimit > 0 && len(s.primaryIPs)+newPrimaryIPs(req.PublicNet) > s.primaryIPLimit {
		return fault(LimitExceeded("Primary IP"))
	}
	return s.takeCreateFailure(loc.Name)
}

// listServers lists servers by id, filtered by label_selector, name and
// status.
func (s *Server) listServers(w http.ResponseWriter, r *http.Request, _ []string) {
	q := r.URL.Query()
	sel, err := parseSelector(q.Get("label_selector"))
	if err != nil {
		writeError(w, invalidInput("%v", err))
		return
	}
	var all []wireServer
	for _, id := range slices.Sorted(maps.Keys(s.servers)) {
		sv := s.servers[id]
		if !sel.matches(sv.Labels) || (q.Get("name") != "" && sv.Name != q.Get("name")) ||
			(len(q["status"]) > 0 && !slices.Contains(q["status"], sv.Status)) {
			continue
		}
		all = append(all, wire(sv))
	}
	items, meta := page(r, all)
	writeJSON(w, http.StatusOK, struct {
		Servers []wireServer `json:"servers"`
		Meta    schema.Meta  `json:"meta"`
	}{orEmpty(items), meta})
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Put plants a server in location where as another tool would have made it,
// running, with these labels, and returns its id.
func (s *Server) Put(name, where string, labels map[string]string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	loc, ok := location(where)
	if !ok {
		panic("hetznerfake: no location " + where)
	}
	st := ServerTypes[0]
	im := Images[0]
	sv := &schema.Server{ID: s.id(), Name: name, Status: "running", Created: s.now(), ServerType: st, Location: loc, Image: &im,
		Labels: maps.Clone(labels), Volumes: []int64{}, LoadBalancers: []int64{}, PrivateNet: []schema.ServerPrivateNet{}}
	if sv.Labels == nil {
		sv.Labels = map[string]string{}
	}
	s.nextIPv4++
	ip := s.newPrimaryIP(fmt.Sprintf("primary_ip-%d", s.nextID+1), "ipv4", fmt.Sprintf("198.51.100.%d", s.nextIPv4%250+1), loc, nil, true)
	ip.AssigneeID, ip.AssigneeType = &sv.ID, "server"
	sv.PublicNet = schema.ServerPublicNet{IPv4: schema.ServerPublicNetIPv4{ID: ip.ID, IP: ip.IP}, FloatingIPs: []int64{}, Firewalls: []schema.ServerFirewall{}}
	s.servers[sv.ID] = sv
	return sv.ID
}

// SetStatus sets a server's status, as Hetzner would on its own (a
// server powered off by someone, "off"), reporting whether it exists.
func (s *Server) SetStatus(id int64, status string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.servers[id]
	if ok {
		sv.Status = status
	}
	return ok
}

// UserData returns the user_data a server was created with.
func (s *Server) UserData(id int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userData[id]
}

// Servers returns every server, by id.
func (s *Server) Servers() []schema.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []schema.Server
	for _, id := range slices.Sorted(maps.Keys(s.servers)) {
		out = append(out, *s.servers[id])
	}
	return out
}

// newPrimaryIPs is how many Primary IPs a server create makes of its
// own: its IPv4 unless it names one, and its IPv6, both by default.
func newPrimaryIPs(pn *schema.ServerCreatePublicNet) int {
	if pn == nil {
		return 2
	}
	n := 0
	if pn.IPv4ID == 0 && pn.EnableIPv4 {
		n++
	}
	if pn.EnableIPv6 {
		n++
	}
	return n
}
