package azurefake

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"
)

// AddResourceGroup makes a resource group, as the deployment's
// Terraform does.
func (s *Server) AddResourceGroup(name, location string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[strings.ToLower(name)] = &group{name: name, location: normalizeLocation(location)}
}

// AddNetworkSecurityGroup makes an NSG and returns its id.
func (s *Server) AddNetworkSecurityGroup(rg, name, location string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.resourceID(rg, typeNSG, name)
	s.nsgs[key(id)] = &resource{id: id, name: name, typ: typeNSG, location: normalizeLocation(location), etag: s.etag(),
		props: map[string]any{"provisioningState": "Succeeded", "resourceGuid": s.newID(), "securityRules": []any{}, "defaultSecurityRules": []any{}}}
	return id
}

// AddVirtualNetwork makes a VNet of an address prefix and returns its id.
func (s *Server) AddVirtualNetwork(rg, name, location, prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.resourceID(rg, typeVNet, name)
	s.vnets[key(id)] = &resource{id: id, name: name, typ: typeVNet, location: normalizeLocation(location), etag: s.etag(),
		props: map[string]any{"provisioningState": "Succeeded", "resourceGuid": s.newID(), "addressSpace": map[string]any{"addressPrefixes": []any{prefix}}, "subnets": []any{}}}
	return id
}

// AddSubnet makes a subnet of a VNet, with its NSG ("" for none), and
// returns its id: what AZURE_SUBNET_IDS names.
func (s *Server) AddSubnet(vnetID, name, prefix, nsgID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	vnet, ok := s.vnets[key(vnetID)]
	if !ok {
		panic("azurefake: AddSubnet of no VNet " + vnetID)
	}
	id := vnet.id + "/subnets/" + name
	props := map[string]any{"provisioningState": "Succeeded", "addressPrefix": prefix, "privateEndpointNetworkPolicies": "Disabled", "privateLinkServiceNetworkPolicies": "Enabled"}
	if nsgID != "" {
		nsg := s.nsgs[key(nsgID)]
		props["networkSecurityGroup"] = map[string]any{"id": nsg.id}
	}
	sub := &resource{id: id, name: name, typ: typeSubnet, location: vnet.location, etag: s.etag(), props: props}
	s.subnets[key(id)] = sub
	vnet.props["subnets"] = append(vnet.props["subnets"].([]any), map[string]any{"id": id, "name": name, "type": typeSubnet, "etag": sub.etag, "properties": props})
	return id
}

// SeedNetwork makes what the deployment's Terraform makes: the resource
// group (in the first location) and, per location, a VNet
// "egress-LOCATION" (10.N.0.0/16), an NSG "egress-LOCATION" and a subnet
// "proxies" (10.N.0.0/24) behind it. It returns each location's subnet
// id, as AZURE_SUBNET_IDS pairs them.
func (s *Server) SeedNetwork(rg string, locations ...string) map[string]string {
	if len(locations) > 0 {
		s.AddResourceGroup(rg, locations[0])
	}
	out := map[string]string{}
	for i, loc := range locations {
		loc = normalizeLocation(loc)
		nsg := s.AddNetworkSecurityGroup(rg, "egress-"+loc, loc)
		vnet := s.AddVirtualNetwork(rg, "egress-"+loc, loc, fmt.Sprintf("10.%d.0.0/16", i))
		out[loc] = s.AddSubnet(vnet, "proxies", fmt.Sprintf("10.%d.0.0/24", i), nsg)
	}
	return out
}

// PutVM makes a running VM as another tool would (another deployment's,
// an orphan): a Standard public IP NAME-ip, a NIC NAME-nic on the
// location's first subnet, the VM and its OS disk, all deleted with the
// VM, with these tags on each. It returns the VM's id.
func (s *Server) PutVM(rg, name, location string, tags map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	loc := normalizeLocation(location)
	var subnet *resource
	for _, k := range sortedKeys(s.subnets) {
		if sub := s.subnets[k]; sub.location == loc && strings.Contains(k, "/resourcegroups/"+strings.ToLower(rg)+"/") {
			subnet = sub
			break
		}
	}
	if subnet == nil {
		panic("azurefake: PutVM in " + loc + ", where resource group " + rg + " has no subnet")
	}
	now := s.now().Format(time.RFC3339Nano)
	ipID, nicID, vmID := s.resourceID(rg, typeIP, name+"-ip"), s.resourceID(rg, typeNIC, name+"-nic"), s.resourceID(rg, typeVM, name)
	diskName := name + "_OsDisk_1_" + strings.ReplaceAll(s.newID(), "-", "")
	diskID := s.resourceID(rg, typeDisk, diskName)
	config := nicID + "/ipConfigurations/ipconfig1"
	s.ips[key(ipID)] = &resource{id: ipID, name: name + "-ip", typ: typeIP, location: loc, tags: maps.Clone(tags), etag: s.etag(),
		sku: map[string]any{"name": "Standard", "tier": "Regional"},
		props: map[string]any{"provisioningState": "Succeeded", "resourceGuid": s.newID(), "ipAddress": s.nextAddress(), "publicIPAddressVersion": "IPv4",
			"publicIPAllocationMethod": "Static", "idleTimeoutInMinutes": 4, "ipTags": []any{}, "deleteOption": "Delete", "ipConfiguration": map[string]any{"id": config}}}
	s.nics[key(nicID)] = &resource{id: nicID, name: name + "-nic", typ: typeNIC, location: loc, tags: maps.Clone(tags), etag: s.etag(),
		props: map[string]any{"provisioningState": "Succeeded", "resourceGuid": s.newID(), "nicType": "Standard", "enableAcceleratedNetworking": false, "enableIPForwarding": false,
			"virtualMachine": map[string]any{"id": vmID},
			"ipConfigurations": []any{map[string]any{"id": config, "name": "ipconfig1", "type": typeNIC + "/ipConfigurations", "etag": s.etag(),
				"properties": map[string]any{"provisioningState": "Succeeded", "privateIPAddress": s.privateAddress(subnet), "privateIPAllocationMethod": "Dynamic",
					"privateIPAddressVersion": "IPv4", "primary": true, "subnet": map[string]any{"id": subnet.id}, "publicIPAddress": map[string]any{"id": ipID}}}}}}
	s.disks[key(diskID)] = &resource{id: diskID, name: diskName, typ: typeDisk, location: loc, managedBy: vmID, sku: map[string]any{"name": "Standard_LRS", "tier": "Standard"},
		props: map[string]any{"osType": "Linux", "hyperVGeneration": "V2", "diskSizeGB": 30, "diskState": "Attached", "provisioningState": "Succeeded", "timeCreated": now, "uniqueId": s.newID(),
			"creationData": map[string]any{"createOption": "FromImage"}}}
	s.vms[key(vmID)] = &resource{id: vmID, name: name, typ: typeVM, location: loc, tags: maps.Clone(tags), power: "running",
		props: map[string]any{"provisioningState": "Succeeded", "vmId": s.newID(), "timeCreated": now,
			"hardwareProfile": map[string]any{"vmSize": "Standard_B1s"},
			"storageProfile": map[string]any{"imageReference": map[string]any{"publisher": "Debian", "offer": "debian-13", "sku": "13-gen2", "version": "latest", "exactVersion": "0.20260101.2000"},
				"osDisk":    map[string]any{"osType": "Linux", "name": diskName, "createOption": "FromImage", "caching": "ReadWrite", "deleteOption": "Delete", "diskSizeGB": 30, "managedDisk": map[string]any{"id": diskID, "storageAccountType": "Standard_LRS"}},
				"dataDisks": []any{}},
			"osProfile":      map[string]any{"computerName": name, "adminUsername": "azureuser", "linuxConfiguration": map[string]any{"disablePasswordAuthentication": true}, "secrets": []any{}, "allowExtensionOperations": true, "requireGuestProvisionSignal": true},
			"networkProfile": map[string]any{"networkInterfaces": []any{map[string]any{"id": nicID, "properties": map[string]any{"primary": true, "deleteOption": "Delete"}}}}}}
	return vmID
}

func sortedKeys(m map[string]*resource) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Inventory is what exists, by kind ("virtualMachines",
// "networkInterfaces", "publicIPAddresses", "disks"), each kind's names
// sorted: what a test compares after a delete.
type Inventory map[string][]string

// Inventory returns the VMs, NICs, public IPs and disks of a resource
// group; a kind with none is left out.
func (s *Server) Inventory(rg string) Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Inventory{}
	for kind, typ := range map[string]string{"virtualMachines": typeVM, "networkInterfaces": typeNIC, "publicIPAddresses": typeIP, "disks": typeDisk} {
		for _, r := range s.inGroup(typ, rg) {
			out[kind] = append(out[kind], r.name)
		}
		sort.Strings(out[kind])
	}
	return out
}

// VM is a VM as a test reads it back.
type VM struct {
	ID, Name, Location string
	Zones              []string
	Size               string
	Tags               map[string]string
	ProvisioningState  string
	// UserData and CustomData are base64, as sent.
	UserData, CustomData string
	// NICs maps each NIC's id to its deleteOption.
	NICs map[string]string
	// OSDisk and OSDiskDeleteOption are the OS disk's name and
	// deleteOption.
	OSDisk, OSDiskDeleteOption string
	Image                      string // publisher:offer:sku:version
}

// VM returns a VM of a resource group by name.
func (s *Server) VM(rg, name string) (VM, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.vms[key(s.resourceID(rg, typeVM, name))]
	if !ok {
		return VM{}, false
	}
	vm := VM{ID: r.id, Name: r.name, Location: r.location, Zones: r.zones, Size: str(r.props, "hardwareProfile", "vmSize"), Tags: maps.Clone(r.tags),
		ProvisioningState: r.state(), UserData: r.userData, CustomData: r.customData, NICs: map[string]string{},
		OSDisk: str(r.props, "storageProfile", "osDisk", "name"), OSDiskDeleteOption: str(r.props, "storageProfile", "osDisk", "deleteOption")}
	if img := obj(r.props, "storageProfile", "imageReference"); img != nil {
		vm.Image = strings.Join([]string{str(img, "publisher"), str(img, "offer"), str(img, "sku"), str(img, "version")}, ":")
	}
	for _, ref := range arr(r.props, "networkProfile", "networkInterfaces") {
		rm, _ := ref.(map[string]any)
		vm.NICs[str(rm, "id")] = str(rm, "properties", "deleteOption")
	}
	return vm, true
}

// PublicIP is a public IP address as a test reads it back.
type PublicIP struct {
	ID, Name, Location, Address, SKU, Allocation, DeleteOption string
	Tags                                                       map[string]string
	// IPConfiguration is the id of the NIC IP configuration holding it,
	// "" when free.
	IPConfiguration string
}

// PublicIP returns a public IP address of a resource group by name.
func (s *Server) PublicIP(rg, name string) (PublicIP, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.ips[key(s.resourceID(rg, typeIP, name))]
	if !ok {
		return PublicIP{}, false
	}
	sku, _ := r.sku["name"].(string)
	return PublicIP{ID: r.id, Name: r.name, Location: r.location, Address: str(r.props, "ipAddress"), SKU: sku,
		Allocation: str(r.props, "publicIPAllocationMethod"), DeleteOption: str(r.props, "deleteOption"), Tags: maps.Clone(r.tags),
		IPConfiguration: str(r.props, "ipConfiguration", "id")}, true
}

// NIC is a network interface as a test reads it back.
type NIC struct {
	ID, Name, Location string
	Tags               map[string]string
	VM                 string   // the id of the VM holding it, "" when free
	Subnets, PublicIPs []string // of its IP configurations, by id
}

// NIC returns a network interface of a resource group by name.
func (s *Server) NIC(rg, name string) (NIC, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.nics[key(s.resourceID(rg, typeNIC, name))]
	if !ok {
		return NIC{}, false
	}
	n := NIC{ID: r.id, Name: r.name, Location: r.location, Tags: maps.Clone(r.tags), VM: str(r.props, "virtualMachine", "id")}
	for _, c := range arr(r.props, "ipConfigurations") {
		cfg, _ := c.(map[string]any)
		n.Subnets = append(n.Subnets, str(cfg, "properties", "subnet", "id"))
		if ip := str(cfg, "properties", "publicIPAddress", "id"); ip != "" {
			n.PublicIPs = append(n.PublicIPs, ip)
		}
	}
	return n, true
}
