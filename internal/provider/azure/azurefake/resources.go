package azurefake

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
)

// resource is one ARM resource as the fake keeps it: the envelope ARM
// writes about every resource (id, name, type, location, tags, zones,
// sku, etag, managedBy) and its properties, kept as JSON the way a
// client sent them and the fake completed them.
type resource struct {
	id, name, typ, location string
	tags                    map[string]string
	zones                   []string
	sku                     map[string]any
	managedBy               string
	etag                    string
	props                   map[string]any

	// A VM's userData and customData: kept, never written in a VM's
	// properties (userData only with $expand=userData, customData never,
	// as ARM does).
	userData, customData string
	// A VM's instance view's power state.
	power string
	// failure is why a VM's provisioning failed (its create's operation's
	// fault), which its instance view says as Azure does.
	failure *Fault
}

// view is the resource as ARM writes it.
func (r *resource) view(userData, instanceView bool) map[string]any {
	out := map[string]any{"id": r.id, "name": r.name, "type": r.typ}
	if r.location != "" {
		out["location"] = r.location
	}
	if r.tags != nil {
		out["tags"] = maps.Clone(r.tags)
	}
	if len(r.zones) > 0 {
		out["zones"] = r.zones
	}
	if r.sku != nil {
		out["sku"] = r.sku
	}
	if r.managedBy != "" {
		out["managedBy"] = r.managedBy
	}
	if r.etag != "" {
		out["etag"] = r.etag
	}
	props := deepCopy(r.props)
	if userData && r.userData != "" {
		props["userData"] = r.userData
	}
	if instanceView && r.typ == typeVM {
		props["instanceView"] = r.instanceView()
	}
	out["properties"] = props
	return out
}

// The resource types of the contract.
const (
	typeVM     = "Microsoft.Compute/virtualMachines"
	typeDisk   = "Microsoft.Compute/disks"
	typeNIC    = "Microsoft.Network/networkInterfaces"
	typeIP     = "Microsoft.Network/publicIPAddresses"
	typeVNet   = "Microsoft.Network/virtualNetworks"
	typeSubnet = "Microsoft.Network/virtualNetworks/subnets"
	typeNSG    = "Microsoft.Network/networkSecurityGroups"
)

// state is the resource's provisioningState.
func (r *resource) state() string { s, _ := r.props["provisioningState"].(string); return s }

func (r *resource) setState(st string) { r.props["provisioningState"] = st }

// resourceID is the id of a resource of a type in a resource group.
func (s *Server) resourceID(rg, typ, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s", s.subscription, rg, typ, name)
}

// key is a map key of an id: ARM's ids are case-insensitive.
func key(id string) string { return strings.ToLower(strings.TrimSuffix(id, "/")) }

// table is the map of a resource type. Called with s.mu held.
func (s *Server) table(typ string) map[string]*resource {
	switch typ {
	case typeVM:
		return s.vms
	case typeDisk:
		return s.disks
	case typeNIC:
		return s.nics
	case typeIP:
		return s.ips
	case typeVNet:
		return s.vnets
	case typeSubnet:
		return s.subnets
	case typeNSG:
		return s.nsgs
	}
	panic("azurefake: no table of " + typ)
}

// lookup finds any resource by its id. Called with s.mu held.
func (s *Server) lookup(id string) *resource {
	k := key(id)
	for _, t := range []map[string]*resource{s.vms, s.disks, s.nics, s.ips, s.vnets, s.subnets, s.nsgs} {
		if r, ok := t[k]; ok {
			return r
		}
	}
	return nil
}

// inGroup returns a type's resources in a resource group. Called with
// s.mu held.
func (s *Server) inGroup(typ, rg string) []*resource {
	prefix := key(fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s", s.subscription, rg, typ)) + "/"
	var out []*resource
	for k, r := range s.table(typ) {
		if strings.HasPrefix(k, prefix) && !strings.Contains(k[len(prefix):], "/") {
			out = append(out, r)
		}
	}
	return out
}

// group finds a resource group, answering 404 ResourceGroupNotFound
// when there is none. Called with s.mu held.
func (s *Server) group(w *writer, name string) (*group, bool) {
	g, ok := s.groups[strings.ToLower(name)]
	if !ok {
		w.error(Fault{Status: http.StatusNotFound, Code: "ResourceGroupNotFound", Message: fmt.Sprintf("Resource group '%s' could not be found.", name)})
	}
	return g, ok
}

// notFound is ARM's 404 of a resource.
func notFound(typ, name, rg string) Fault {
	msg := fmt.Sprintf("The Resource '%s/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix", typ, name, rg)
	return Fault{Status: http.StatusNotFound, Code: "ResourceNotFound", Message: msg}
}

func badRequest(code, format string, args ...any) Fault {
	return Fault{Status: http.StatusBadRequest, Code: code, Message: fmt.Sprintf(format, args...)}
}

// get reads a path of nested JSON objects; nil when any step is missing.
func get(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[p]
	}
	return v
}

func str(m map[string]any, path ...string) string { s, _ := get(m, path...).(string); return s }

func obj(m map[string]any, path ...string) map[string]any {
	o, _ := get(m, path...).(map[string]any)
	return o
}

func arr(m map[string]any, path ...string) []any { a, _ := get(m, path...).([]any); return a }

// ensure returns m[k] as an object, making it when missing.
func ensure(m map[string]any, k string) map[string]any {
	o, ok := m[k].(map[string]any)
	if !ok {
		o = map[string]any{}
		m[k] = o
	}
	return o
}

func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	b, _ := json.Marshal(m)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// envelope is what a PUT body carries around the properties.
type envelope struct {
	Location   string            `json:"location"`
	Tags       map[string]string `json:"tags"`
	Zones      []string          `json:"zones"`
	SKU        map[string]any    `json:"sku"`
	Properties map[string]any    `json:"properties"`
}

// normalizeLocation writes a location as ARM does: "West Europe" is
// "westeurope".
func normalizeLocation(l string) string { return strings.ToLower(strings.ReplaceAll(l, " ", "")) }
