package azurefake

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

const netProv = `/providers/Microsoft\.Network/`

var networkRoutes = []route{
	{method: http.MethodGet, name: "resourceGroups.get", auth: true, path: armPath(rgPath), serve: (*Server).groupGet},

	{method: http.MethodGet, name: "virtualNetworks.list", auth: true, path: armPath(rgPath + netProv + `virtualNetworks`), serve: listOf(typeVNet)},
	{method: http.MethodGet, name: "virtualNetworks.get", auth: true, path: armPath(rgPath + netProv + `virtualNetworks/([^/]+)`), serve: getOf(typeVNet)},
	{method: http.MethodGet, name: "subnets.get", auth: true, path: armPath(rgPath + netProv + `virtualNetworks/([^/]+)/subnets/([^/]+)`), serve: (*Server).subnetGet},
	{method: http.MethodGet, name: "networkSecurityGroups.list", auth: true, path: armPath(rgPath + netProv + `networkSecurityGroups`), serve: listOf(typeNSG)},
	{method: http.MethodGet, name: "networkSecurityGroups.get", auth: true, path: armPath(rgPath + netProv + `networkSecurityGroups/([^/]+)`), serve: getOf(typeNSG)},

	{method: http.MethodGet, name: "publicIPAddresses.list", auth: true, path: armPath(rgPath + netProv + `publicIPAddresses`), serve: listOf(typeIP)},
	{method: http.MethodGet, name: "publicIPAddresses.get", auth: true, path: armPath(rgPath + netProv + `publicIPAddresses/([^/]+)`), serve: getOf(typeIP)},
	{method: http.MethodPut, name: "publicIPAddresses.put", auth: true, path: armPath(rgPath + netProv + `publicIPAddresses/([^/]+)`), serve: (*Server).ipPut},
	{method: http.MethodDelete, name: "publicIPAddresses.delete", auth: true, path: armPath(rgPath + netProv + `publicIPAddresses/([^/]+)`), serve: (*Server).ipDelete},

	{method: http.MethodGet, name: "networkInterfaces.list", auth: true, path: armPath(rgPath + netProv + `networkInterfaces`), serve: listOf(typeNIC)},
	{method: http.MethodGet, name: "networkInterfaces.get", auth: true, path: armPath(rgPath + netProv + `networkInterfaces/([^/]+)`), serve: getOf(typeNIC)},
	{method: http.MethodPut, name: "networkInterfaces.put", auth: true, path: armPath(rgPath + netProv + `networkInterfaces/([^/]+)`), serve: (*Server).nicPut},
	{method: http.MethodDelete, name: "networkInterfaces.delete", auth: true, path: armPath(rgPath + netProv + `networkInterfaces/([^/]+)`), serve: (*Server).nicDelete},
}

func (s *Server) groupGet(w *writer, _ *http.Request, m []string) {
	g, ok := s.group(w, m[1])
	if !ok {
		return
	}
	w.json(http.StatusOK, map[string]any{"id": fmt.Sprintf("/subscriptions/%s/resourceGroups/%s", s.subscription, g.name), "name": g.name,
		"type": "Microsoft.Resources/resourceGroups", "location": g.location, "properties": map[string]any{"provisioningState": "Succeeded"}})
}

// listOf serves a list of a type in a resource group, page by page.
func listOf(typ string) func(s *Server, w *writer, r *http.Request, m []string) {
	return func(s *Server, w *writer, r *http.Request, m []string) {
		if _, ok := s.group(w, m[1]); !ok {
			return
		}
		expand := r.URL.Query().Get("$expand")
		s.list(w, r, s.inGroup(typ, m[1]), func(res *resource) any {
			return res.view(strings.Contains(expand, "userData"), strings.Contains(expand, "instanceView"))
		})
	}
}

// getOf serves a GET of one resource of a type: 404 ResourceNotFound
// when there is none.
func getOf(typ string) func(s *Server, w *writer, r *http.Request, m []string) {
	return func(s *Server, w *writer, r *http.Request, m []string) {
		if _, ok := s.group(w, m[1]); !ok {
			return
		}
		res, ok := s.table(typ)[key(s.resourceID(m[1], typ, m[2]))]
		if !ok {
			w.error(notFound(typ, m[2], m[1]))
			return
		}
		expand := r.URL.Query().Get("$expand")
		w.json(http.StatusOK, res.view(strings.Contains(expand, "userData"), strings.Contains(expand, "instanceView")))
	}
}

func (s *Server) subnetGet(w *writer, _ *http.Request, m []string) {
	if _, ok := s.group(w, m[1]); !ok {
		return
	}
	id := s.resourceID(m[1], typeVNet, m[2]) + "/subnets/" + m[3]
	res, ok := s.subnets[key(id)]
	if !ok {
		w.error(notFound(typeVNet, m[2]+"/subnets/"+m[3], m[1]))
		return
	}
	w.json(http.StatusOK, res.view(false, false))
}

// ipPut creates or updates a public IP address. Standard SKU addresses
// are allocated at once, statically; a Basic SKU is refused, as Azure
// refuses new ones since their retirement (September 2025).
func (s *Server) ipPut(w *writer, r *http.Request, m []string) {
	if _, ok := s.group(w, m[1]); !ok {
		return
	}
	var body envelope
	if !decode(w, r, &body) {
		return
	}
	id := s.resourceID(m[1], typeIP, m[2])
	old, exists := s.ips[key(id)]
	if exists && r.Header.Get("If-None-Match") == "*" {
		w.error(preconditionFailed())
		return
	}
	if exists && old.state() == "Deleting" {
		w.error(Fault{Status: http.StatusConflict, Code: "AnotherOperationInProgress", Message: fmt.Sprintf("Another operation on this or dependent resource is in progress. Public IP address %s is being deleted.", m[2])})
		return
	}
	if body.Location == "" {
		w.error(badRequest("LocationRequired", "The location property is required for this definition."))
		return
	}
	skuName, _ := body.SKU["name"].(string)
	if skuName == "" {
		skuName = "Basic"
	}
	if !strings.EqualFold(skuName, "Standard") {
		w.error(badRequest("BasicSkuPublicIpNotAllowed", "Basic SKU public IP addresses can no longer be created (retired 30 September 2025); use the Standard SKU."))
		return
	}
	props := body.Properties
	if props == nil {
		props = map[string]any{}
	}
	if a := str(props, "publicIPAllocationMethod"); a != "" && !strings.EqualFold(a, "Static") {
		w.error(badRequest("StandardSkuPublicIPAddressesMustBeStatic", "Standard sku publicIp /subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/publicIPAddresses/%s must have AllocationMethod set to Static.", s.subscription, m[1], m[2]))
		return
	}
	if f := s.ipOverQuota(normalizeLocation(body.Location)); f != nil && !exists {
		w.error(*f)
		return
	}
	props["publicIPAllocationMethod"] = "Static"
	if str(props, "publicIPAddressVersion") == "" {
		props["publicIPAddressVersion"] = "IPv4"
	}
	if _, ok := props["idleTimeoutInMinutes"]; !ok {
		props["idleTimeoutInMinutes"] = 4
	}
	if _, ok := props["ipTags"]; !ok {
		props["ipTags"] = []any{}
	}
	res := &resource{id: id, name: m[2], typ: typeIP, location: normalizeLocation(body.Location), tags: body.Tags, zones: body.Zones,
		sku: map[string]any{"name": "Standard", "tier": "Regional"}, etag: s.etag(), props: props}
	status := http.StatusCreated
	if exists {
		status = http.StatusOK
		props["ipAddress"], props["resourceGuid"] = old.props["ipAddress"], old.props["resourceGuid"]
		if c := old.props["ipConfiguration"]; c != nil {
			props["ipConfiguration"] = c
		}
		res.zones = old.zones // zones are fixed at creation
	} else {
		props["ipAddress"] = s.nextAddress()
		props["resourceGuid"] = s.newID()
	}
	res.setState("Updating")
	s.ips[key(id)] = res
	s.begin(w, "Microsoft.Network", res, false, nil, func() { res.setState("Succeeded") }, nil)
	w.json(status, res.view(false, false))
}

// nextAddress hands out a public IPv4 of 198.18.0.0/15 (the range RFC
// 2544 sets aside, so no address of the fake is anyone's), or of the
// served loopback range when the fake serves. Called with s.mu held.
func (s *Server) nextAddress() string {
	if a, ok := s.servedAddress(); ok {
		return a
	}
	s.nextIP++
	a := netip.MustParseAddr("198.18.0.0").As4()
	a[2], a[3] = byte(s.nextIP>>8), byte(s.nextIP)
	return netip.AddrFrom4(a).String()
}

func (s *Server) etag() string { return `W/"` + s.newID() + `"` }

// ipDelete deletes a public IP address, unless a NIC still holds it (400
// PublicIPAddressCannotBeDeleted, as Azure answers).
func (s *Server) ipDelete(w *writer, _ *http.Request, m []string) {
	if _, ok := s.group(w, m[1]); !ok {
		return
	}
	id := s.resourceID(m[1], typeIP, m[2])
	res, ok := s.ips[key(id)]
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if c := str(res.props, "ipConfiguration", "id"); c != "" {
		w.error(badRequest("PublicIPAddressCannotBeDeleted", "Public IP address %s can not be deleted since it is still allocated to resource %s. In order to delete the public IP, disassociate/detach the Public IP address from the resource.", res.id, c))
		return
	}
	res.setState("Deleting")
	s.begin(w, "Microsoft.Network", res, true, nil, func() { delete(s.ips, key(id)) }, nil)
	w.WriteHeader(http.StatusAccepted)
}

// nicPut creates or updates a network interface: each IP
// configuration's subnet and public IP must exist in the NIC's location
// (Azure: InvalidResourceReference), and a public IP belongs to one IP
// configuration at a time (PublicIPAddressInUse).
func (s *Server) nicPut(w *writer, r *http.Request, m []string) {
	if _, ok := s.group(w, m[1]); !ok {
		return
	}
	var body envelope
	if !decode(w, r, &body) {
		return
	}
	id := s.resourceID(m[1], typeNIC, m[2])
	old, exists := s.nics[key(id)]
	if exists && r.Header.Get("If-None-Match") == "*" {
		w.error(preconditionFailed())
		return
	}
	if body.Location == "" {
		w.error(badRequest("LocationRequired", "The location property is required for this definition."))
		return
	}
	loc := normalizeLocation(body.Location)
	props := body.Properties
	if props == nil {
		props = map[string]any{}
	}
	configs := arr(props, "ipConfigurations")
	if len(configs) == 0 {
		w.error(badRequest("NetworkInterfaceMustHaveAtLeastOneIpConfiguration", "Network interface %s must have at least one IP configuration.", id))
		return
	}
	type binding struct {
		ip     *resource
		config string
	}
	var binds []binding
	for i, c := range configs {
		cfg, _ := c.(map[string]any)
		if cfg == nil {
			w.error(badRequest("InvalidRequestFormat", "ipConfigurations[%d] is no object", i))
			return
		}
		name := str(cfg, "name")
		if name == "" {
			name = fmt.Sprintf("ipconfig%d", i+1)
			cfg["name"] = name
		}
		cid := id + "/ipConfigurations/" + name
		cp := ensure(cfg, "properties")
		subnetID := str(cp, "subnet", "id")
		subnet, ok := s.subnets[key(subnetID)]
		if !ok {
			w.error(badRequest("InvalidResourceReference", "Resource %s referenced by resource %s was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.", subnetID, id))
			return
		}
		if subnet.location != loc {
			w.error(badRequest("InvalidResourceReference", "Resource %s referenced by resource %s was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.", subnetID, id))
			return
		}
		if ipID := str(cp, "publicIPAddress", "id"); ipID != "" {
			ip, ok := s.ips[key(ipID)]
			if !ok || ip.location != loc {
				w.error(badRequest("InvalidResourceReference", "Resource %s referenced by resource %s was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.", ipID, id))
				return
			}
			if held := str(ip.props, "ipConfiguration", "id"); held != "" && !strings.EqualFold(held, cid) {
				w.error(badRequest("PublicIPAddressInUse", "Public IP address %s is already in use by %s.", ipID, held))
				return
			}
			cp["publicIPAddress"] = map[string]any{"id": ip.id}
			binds = append(binds, binding{ip, cid})
		}
		cfg["id"], cfg["type"], cfg["etag"] = cid, typeNIC+"/ipConfigurations", s.etag()
		if str(cp, "privateIPAllocationMethod") == "" {
			cp["privateIPAllocationMethod"] = "Dynamic"
		}
		if str(cp, "privateIPAddressVersion") == "" {
			cp["privateIPAddressVersion"] = "IPv4"
		}
		if _, ok := cp["primary"]; !ok {
			cp["primary"] = i == 0
		}
		cp["provisioningState"] = "Succeeded"
		cp["subnet"] = map[string]any{"id": subnet.id}
		if exists {
			if prev := s.ipConfig(old, name); prev != nil {
				cp["privateIPAddress"] = str(prev, "properties", "privateIPAddress")
			}
		}
		if str(cp, "privateIPAddress") == "" {
			cp["privateIPAddress"] = s.privateAddress(subnet)
		}
	}
	if nsgID := str(props, "networkSecurityGroup", "id"); nsgID != "" {
		if _, ok := s.nsgs[key(nsgID)]; !ok {
			w.error(badRequest("InvalidResourceReference", "Resource %s referenced by resource %s was not found.", nsgID, id))
			return
		}
	}
	// Public IPs the NIC held and holds no more are free again.
	if exists {
		for _, c := range arr(old.props, "ipConfigurations") {
			cfg, _ := c.(map[string]any)
			if ip, ok := s.ips[key(str(cfg, "properties", "publicIPAddress", "id"))]; ok {
				delete(ip.props, "ipConfiguration")
			}
		}
	}
	for _, b := range binds {
		b.ip.props["ipConfiguration"] = map[string]any{"id": b.config}
	}
	for _, k := range []string{"enableAcceleratedNetworking", "enableIPForwarding", "disableTcpStateTracking"} {
		if _, ok := props[k]; !ok {
			props[k] = false
		}
	}
	props["nicType"] = "Standard"
	props["dnsSettings"] = map[string]any{"dnsServers": []any{}, "appliedDnsServers": []any{}}
	props["hostedWorkloads"], props["tapConfigurations"] = []any{}, []any{}
	props["vnetEncryptionSupported"], props["auxiliaryMode"], props["auxiliarySku"] = false, "None", "None"
	status := http.StatusCreated
	if exists {
		status = http.StatusOK
		props["resourceGuid"], props["macAddress"] = old.props["resourceGuid"], old.props["macAddress"]
		if vm := old.props["virtualMachine"]; vm != nil {
			props["virtualMachine"] = vm
		}
	} else {
		props["resourceGuid"] = s.newID()
		props["macAddress"] = fmt.Sprintf("00-0D-3A-%02X-%02X-%02X", byte(s.nextID>>16), byte(s.nextID>>8), byte(s.nextID))
	}
	res := &resource{id: id, name: m[2], typ: typeNIC, location: loc, tags: body.Tags, etag: s.etag(), props: props}
	res.setState("Succeeded")
	s.nics[key(id)] = res
	// The network RP answers a NIC's PUT done (Succeeded) with an
	// operation that a poll finds finished.
	op := s.begin(w, "Microsoft.Network", res, false, nil, nil, nil)
	s.complete(op)
	w.json(status, res.view(false, false))
}

// ipConfig finds a NIC's IP configuration by name.
func (s *Server) ipConfig(nic *resource, name string) map[string]any {
	for _, c := range arr(nic.props, "ipConfigurations") {
		if cfg, _ := c.(map[string]any); cfg != nil && strings.EqualFold(str(cfg, "name"), name) {
			return cfg
		}
	}
	return nil
}

// privateAddress hands out the next address of a subnet, past Azure's
// five reserved ones (.0 to .3 and the last). Called with s.mu held.
func (s *Server) privateAddress(subnet *resource) string {
	p, err := netip.ParsePrefix(str(subnet.props, "addressPrefix"))
	if err != nil {
		return "10.0.0.4"
	}
	n, _ := subnet.props["nextHost"].(int)
	a := p.Addr()
	for range 4 + n {
		a = a.Next()
	}
	subnet.props["nextHost"] = n + 1
	return a.String()
}

// nicDelete deletes a NIC, unless a VM holds it (400 NicInUse); its
// public IPs are free again.
func (s *Server) nicDelete(w *writer, _ *http.Request, m []string) {
	if _, ok := s.group(w, m[1]); !ok {
		return
	}
	id := s.resourceID(m[1], typeNIC, m[2])
	res, ok := s.nics[key(id)]
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if vm := str(res.props, "virtualMachine", "id"); vm != "" {
		w.error(badRequest("NicInUse", "Network Interface %s is used by existing resource %s. In order to delete the network interface, it must be dissociated from the resource. To learn more, see aka.ms/deletenic.", res.id, vm))
		return
	}
	res.setState("Deleting")
	s.begin(w, "Microsoft.Network", res, true, nil, func() { s.removeNIC(res, false) }, nil)
	w.WriteHeader(http.StatusAccepted)
}

// removeNIC deletes a NIC and frees its public IPs; withIPs deletes
// those whose deleteOption is Delete (a VM's delete taking its NIC
// along). Called with s.mu held.
func (s *Server) removeNIC(nic *resource, withIPs bool) {
	delete(s.nics, key(nic.id))
	for _, c := range arr(nic.props, "ipConfigurations") {
		cfg, _ := c.(map[string]any)
		ip, ok := s.ips[key(str(cfg, "properties", "publicIPAddress", "id"))]
		if !ok {
			continue
		}
		delete(ip.props, "ipConfiguration")
		if withIPs && strings.EqualFold(str(ip.props, "deleteOption"), "Delete") {
			delete(s.ips, key(ip.id))
		}
	}
}

func preconditionFailed() Fault {
	return Fault{Status: http.StatusPreconditionFailed, Code: "PreconditionFailed", Message: "The condition specified using HTTP conditional header(s) is not met."}
}
