package computefake

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Regional static external addresses, as
// https://cloud.google.com/compute/docs/reference/rest/v1/addresses
// describes them: addressType defaults to EXTERNAL and networkTier to
// PREMIUM; status is RESERVING, RESERVED or IN_USE; users are "the URLs of
// the resources that are using this address". The fake reserves at once
// (it skips RESERVING) and gives each address the next IP of
// 203.0.113.0/24, a documentation range apart from the 198.51.100.x of
// ephemeral NATs. An address insert or delete answers a regional
// operation, served by regionOperations, that Settle makes DONE; a
// deleted address is gone on Settle.

var addressRoutes = []route{
	{http.MethodPost, projectPath(`regions/([^/]+)/addresses`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.insertAddress(w, r, m[0], m[1])
	}},
	{http.MethodGet, projectPath(`regions/([^/]+)/addresses/([^/]+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.getAddress(w, m[0], m[1], m[2])
	}},
	{http.MethodDelete, projectPath(`regions/([^/]+)/addresses/([^/]+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.deleteAddress(w, r, m[0], m[1], m[2])
	}},
	{http.MethodGet, projectPath(`aggregated/addresses`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.listAddresses(w, r, m[0])
	}},
}

func addressNotFound(project, region, name string) Fault {
	return Fault{Code: http.StatusNotFound, Reason: "notFound",
		Message: fmt.Sprintf("The resource 'projects/%s/regions/%s/addresses/%s' was not found", project, region, name)}
}

func (s *Server) insertAddress(w http.ResponseWriter, r *http.Request, project, region string) {
	body, _ := io.ReadAll(r.Body)
	a := &computepb.Address{}
	if err := protojson.Unmarshal(body, a); err != nil {
		writeError(w, invalid("bad address body: %v", err))
		return
	}
	reqID := r.URL.Query().Get("requestId")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "addresses.insert") {
		return
	}
	if s.replayed(w, project, reqID) {
		return
	}
	if a.GetName() == "" {
		writeError(w, invalid("Invalid value for field 'resource.name': ''. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"))
		return
	}
	if a.AddressType == nil {
		a.AddressType = proto.String("EXTERNAL")
	}
	if a.GetAddressType() != "EXTERNAL" {
		writeError(w, invalid("the fake reserves only EXTERNAL addresses, not %s", a.GetAddressType()))
		return
	}
	key := region + "/" + a.GetName()
	if _, ok := s.addresses[key]; !ok {
		if f := s.addressOverQuota(region); f != nil {
			writeError(w, *f)
			return
		}
	}
	if _, ok := s.addresses[key]; ok {
		writeError(w, Fault{Code: http.StatusConflict, Reason: "alreadyExists",
			Message: fmt.Sprintf("The resource 'projects/%s/regions/%s/addresses/%s' already exists", project, region, a.GetName())})
		return
	}
	if a.Address == nil {
		s.nextAddress++
		a.Address = proto.String(fmt.Sprintf("203.0.113.%d", s.nextAddress))
	}
	if a.NetworkTier == nil {
		a.NetworkTier = proto.String("PREMIUM")
	}
	s.nextID++
	a.Id = proto.Uint64(s.nextID)
	a.Kind = proto.String("compute#address")
	a.CreationTimestamp = proto.String(s.now().Format(stamp))
	a.Region = proto.String(link(project, "regions", region))
	a.SelfLink = proto.String(link(project, "regions", region, "addresses", a.GetName()))
	a.Status = proto.String("RESERVED")
	s.addresses[key] = a
	s.addressByIP[region+"/"+a.GetAddress()] = key
	s.accept(w, project, "regions/"+region, "insert", a.GetSelfLink(), reqID, a.Id)
}

func (s *Server) getAddress(w http.ResponseWriter, project, region, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "addresses.get") {
		return
	}
	a, ok := s.addresses[region+"/"+name]
	if !ok {
		writeError(w, addressNotFound(project, region, name))
		return
	}
	writeMessage(w, a)
}

func (s *Server) deleteAddress(w http.ResponseWriter, r *http.Request, project, region, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "addresses.delete") {
		return
	}
	reqID := r.URL.Query().Get("requestId")
	if s.replayed(w, project, reqID) {
		return
	}
	key := region + "/" + name
	a, ok := s.addresses[key]
	if !ok {
		writeError(w, addressNotFound(project, region, name))
		return
	}
	if a.GetStatus() == "IN_USE" {
		// No Compute page found says what deleting an address in use does.
		// The fake refuses it with the 400 resourceInUseByAnotherResource
		// that callers report for deleting other resources still in use
		// (disks, certificates, NEGs) and for addresses a Cloud NAT uses
		// (https://github.com/hashicorp/terraform-provider-google/issues/6812).
		// Beware: the author of another fake states that Compute lets an
		// address in use be released, citing Google's release docs
		// (https://github.com/floci-io/floci-gcp/pull/191); check this
		// against the real API before relying on the refusal.
		writeError(w, Fault{Code: http.StatusBadRequest, Reason: "resourceInUseByAnotherResource",
			Message: fmt.Sprintf("The address resource 'projects/%s/regions/%s/addresses/%s' is already being used by '%s'",
				project, region, name, relative(a.GetUsers()[0]))})
		return
	}
	s.deletingAddresses[key] = true
	s.accept(w, project, "regions/"+region, "delete", a.GetSelfLink(), reqID, a.Id)
}

func (s *Server) listAddresses(w http.ResponseWriter, r *http.Request, project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "addresses.list") {
		return
	}
	key, value, err := parseLabelFilter(r.URL.Query().Get("filter"))
	if err != nil {
		writeError(w, invalid("%v", err))
		return
	}
	// As instances' (https://cloud.google.com/compute/docs/reference/rest/v1/addresses/aggregatedList).
	out := &computepb.AddressAggregatedList{
		Kind:     proto.String("compute#addressAggregatedList"),
		SelfLink: proto.String(link(project, "aggregated", "addresses")),
		Items:    map[string]*computepb.AddressesScopedList{},
	}
	for k, a := range s.addresses {
		s.visits++
		if key != "" && a.GetLabels()[key] != value {
			continue
		}
		scope := "regions/" + strings.SplitN(k, "/", 2)[0]
		if out.Items[scope] == nil {
			out.Items[scope] = &computepb.AddressesScopedList{}
		}
		out.Items[scope].Addresses = append(out.Items[scope].Addresses, a)
	}
	for _, sl := range out.Items {
		sort.Slice(sl.Addresses, func(i, j int) bool { return sl.Addresses[i].GetName() < sl.Addresses[j].GetName() })
	}
	writeMessage(w, out)
}

// regionOf is the region of a zone: us-central1 of us-central1-a.
func regionOf(zone string) string {
	if i := strings.LastIndex(zone, "-"); i > 0 {
		return zone[:i]
	}
	return zone
}

// relative is a resource URL without the API's prefix, as Compute's
// messages name resources: projects/P/zones/Z/instances/I.
func relative(url string) string {
	if _, after, ok := strings.Cut(url, "/compute/v1/"); ok {
		return after
	}
	return url
}

// natAddresses returns the reserved addresses of its region that an
// instance's natIPs name, or the fault of one that is not. Compute refuses an unknown one in the insert's HTTP answer:
// 400 invalid, "Invalid value for field
// 'resource.networkInterfaces[0].accessConfigs[0].natIP': '34.91.94.74'.
// The specified external IP address '34.91.94.74' was not found in region
// 'europe-west4'." (https://github.com/hashicorp/terraform-provider-google/issues/435).
// For an address another resource uses, the fake assumes the same 400
// with a message of its own. Called with s.mu held.
func (s *Server) natAddresses(inst *computepb.Instance, zone string) ([]*computepb.Address, *Fault) {
	region := regionOf(zone)
	var out []*computepb.Address
	for i, ni := range inst.GetNetworkInterfaces() {
		for j, ac := range ni.GetAccessConfigs() {
			ip := ac.GetNatIP()
			if ip == "" {
				continue
			}
			field := fmt.Sprintf("resource.networkInterfaces[%d].accessConfigs[%d].natIP", i, j)
			a := s.addressWithIP(region, ip)
			if a == nil {
				f := invalid("Invalid value for field '%s': '%s'. The specified external IP address '%s' was not found in region '%s'.", field, ip, ip, region)
				return nil, &f
			}
			if a.GetStatus() != "RESERVED" {
				f := invalid("Invalid value for field '%s': '%s'. The specified external IP address '%s' is in use by '%s'.", field, ip, ip, relative(a.GetUsers()[0]))
				return nil, &f
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// claim marks addresses IN_USE by the instance at selfLink. Called with
// s.mu held.
func claim(addrs []*computepb.Address, selfLink string) {
	for _, a := range addrs {
		a.Status = proto.String("IN_USE")
		a.Users = []string{selfLink}
	}
}

// addressWithIP is the address of region with ip that is not being
// deleted, or nil. Called with s.mu held.
func (s *Server) addressWithIP(region, ip string) *computepb.Address {
	k, ok := s.addressByIP[region+"/"+ip]
	if !ok || s.deletingAddresses[k] {
		return nil
	}
	return s.addresses[k]
}

// releaseNATs makes the addresses a gone instance (of zone/name key) used
// RESERVED again: those its natIPs name. Called with s.mu held, by Settle.
func (s *Server) releaseNATs(key string, inst *computepb.Instance) {
	region := regionOf(strings.SplitN(key, "/", 2)[0])
	for _, ni := range inst.GetNetworkInterfaces() {
		for _, ac := range ni.GetAccessConfigs() {
			k, ok := s.addressByIP[region+"/"+ac.GetNatIP()]
			if !ok {
				continue // an ephemeral NAT
			}
			a := s.addresses[k]
			users := a.GetUsers()[:0]
			for _, u := range a.GetUsers() {
				if u != inst.GetSelfLink() {
					users = append(users, u)
				}
			}
			a.Users = users
			if len(users) == 0 && a.GetStatus() == "IN_USE" {
				a.Status = proto.String("RESERVED")
				a.Users = nil
			}
		}
	}
}

// settleAddresses removes the deleted addresses. Called with s.mu held, by
// Settle.
func (s *Server) settleAddresses() {
	for key := range s.deletingAddresses {
		s.visits++
		if a, ok := s.addresses[key]; ok {
			region, _, _ := strings.Cut(key, "/")
			delete(s.addressByIP, region+"/"+a.GetAddress())
		}
		delete(s.addresses, key)
		delete(s.deletingAddresses, key)
	}
}
