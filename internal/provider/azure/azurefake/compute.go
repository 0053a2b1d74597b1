package azurefake

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

const computeProv = `/providers/Microsoft\.Compute/`

var computeRoutes = []route{
	{method: http.MethodGet, name: "virtualMachines.list", auth: true, path: armPath(rgPath + computeProv + `virtualMachines`), serve: listOf(typeVM)},
	{method: http.MethodGet, name: "virtualMachines.get", auth: true, path: armPath(rgPath + computeProv + `virtualMachines/([^/]+)`), serve: getOf(typeVM)},
	{method: http.MethodPut, name: "virtualMachines.put", auth: true, path: armPath(rgPath + computeProv + `virtualMachines/([^/]+)`), serve: (*Server).vmPut},
	{method: http.MethodPatch, name: "virtualMachines.patch", auth: true, path: armPath(rgPath + computeProv + `virtualMachines/([^/]+)`), serve: (*Server).vmPatch},
	{method: http.MethodDelete, name: "virtualMachines.delete", auth: true, path: armPath(rgPath + computeProv + `virtualMachines/([^/]+)`), serve: (*Server).vmDelete},

	{method: http.MethodGet, name: "disks.list", auth: true, path: armPath(rgPath + computeProv + `disks`), serve: listOf(typeDisk)},
	{method: http.MethodGet, name: "disks.get", auth: true, path: armPath(rgPath + computeProv + `disks/([^/]+)`), serve: getOf(typeDisk)},
	{method: http.MethodDelete, name: "disks.delete", auth: true, path: armPath(rgPath + computeProv + `disks/([^/]+)`), serve: (*Server).diskDelete},
}

// vmPut creates a VM (or updates one, without If-None-Match). Its NICs
// must exist in its location and be no other VM's; a create past an
// injected capacity or quota fault answers it (at once: SkuNotAvailable,
// quota) or makes the VM and fails its operation (AllocationFailed,
// ZonalAllocationFailed), leaving it Failed as Azure does.
func (s *Server) vmPut(w *writer, r *http.Request, m []string) {
	if _, ok := s.group(w, m[1]); !ok {
		return
	}
	var body envelope
	if !decode(w, r, &body) {
		return
	}
	id := s.resourceID(m[1], typeVM, m[2])
	old, exists := s.vms[key(id)]
	if exists && r.Header.Get("If-None-Match") == "*" {
		w.error(preconditionFailed())
		return
	}
	if exists && (old.state() == "Deleting" || old.state() == "Creating" || old.state() == "Updating") {
		w.error(Fault{Status: http.StatusConflict, Code: "OperationNotAllowed", Message: fmt.Sprintf("Operation 'PUT' is not allowed on VM '%s' since the VM is %s.", m[2], strings.ToLower(old.state()))})
		return
	}
	if exists {
		s.vmUpdate(w, old, body)
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
	size := str(props, "hardwareProfile", "vmSize")
	if size == "" {
		w.error(badRequest("InvalidParameter", "Required parameter 'hardwareProfile.vmSize' is missing (null)."))
		return
	}
	if len(arr(props, "networkProfile", "networkInterfaceConfigurations")) > 0 {
		w.error(badRequest("InvalidParameter", "azurefake serves VMs on NICs of their own (networkProfile.networkInterfaces), not networkInterfaceConfigurations."))
		return
	}
	refs := arr(props, "networkProfile", "networkInterfaces")
	if len(refs) == 0 {
		w.error(badRequest("InvalidParameter", "Required parameter 'networkProfile' is missing (null)."))
		return
	}
	var nics []*resource
	for _, ref := range refs {
		rm, _ := ref.(map[string]any)
		nicID := str(rm, "id")
		nic, ok := s.nics[key(nicID)]
		if !ok || nic.location != loc {
			w.error(badRequest("InvalidResourceReference", "Resource %s referenced by resource %s was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.", nicID, id))
			return
		}
		if vm := str(nic.props, "virtualMachine", "id"); vm != "" {
			w.error(badRequest("NicInUse", "Network Interface %s is used by existing resource %s.", nic.id, vm))
			return
		}
		rp := ensure(rm, "properties")
		if str(rp, "deleteOption") == "" {
			rp["deleteOption"] = "Detach"
		}
		if len(refs) == 1 {
			if _, ok := rp["primary"]; !ok {
				rp["primary"] = true
			}
		}
		rm["id"] = nic.id
		nics = append(nics, nic)
	}
	zone := ""
	if len(body.Zones) > 0 {
		zone = body.Zones[0]
	}
	fault := s.takeCreateFailure(loc, zone)
	if fault == nil {
		fault = s.vmOverQuota(loc, size)
	}
	if fault != nil && !fault.Async {
		f := *fault
		f.Message = strings.NewReplacer("{id}", id, "{size}", size, "{location}", loc, "{zone}", zone, "{subscription}", s.subscription).Replace(f.Message)
		w.error(f)
		return
	}

	// customData goes in and never comes back; userData comes back with
	// $expand=userData.
	customData := ""
	if osp := obj(props, "osProfile"); osp != nil {
		customData, _ = osp["customData"].(string)
		delete(osp, "customData")
		delete(osp, "adminPassword")
		for k, v := range map[string]any{"secrets": []any{}, "allowExtensionOperations": true, "requireGuestProvisionSignal": true} {
			if _, ok := osp[k]; !ok {
				osp[k] = v
			}
		}
	}
	res := &resource{id: id, name: m[2], typ: typeVM, location: loc, tags: body.Tags, zones: body.Zones, props: props, power: "starting", customData: customData}
	res.userData = str(props, "userData")
	delete(props, "userData")
	props["vmId"] = s.newID()
	props["timeCreated"] = s.now().Format(time.RFC3339Nano)

	// The OS disk: named as Azure names one it is not told the name of.
	sp := ensure(props, "storageProfile")
	od := ensure(sp, "osDisk")
	diskName := str(od, "name")
	if diskName == "" {
		diskName = fmt.Sprintf("%s_OsDisk_1_%s", m[2], strings.ReplaceAll(s.newID(), "-", ""))
		od["name"] = diskName
	}
	if str(od, "createOption") == "" {
		od["createOption"] = "FromImage"
	}
	if str(od, "deleteOption") == "" {
		od["deleteOption"] = "Detach"
	}
	if str(od, "osType") == "" {
		od["osType"] = "Linux"
	}
	if str(od, "caching") == "" {
		od["caching"] = "ReadWrite"
	}
	if _, ok := od["diskSizeGB"]; !ok {
		od["diskSizeGB"] = 30
	}
	md := ensure(od, "managedDisk")
	if str(md, "storageAccountType") == "" {
		md["storageAccountType"] = "Standard_LRS"
	}
	diskID := s.resourceID(m[1], typeDisk, diskName)
	md["id"] = diskID
	if img := obj(sp, "imageReference"); img != nil && str(img, "exactVersion") == "" && str(img, "version") != "" {
		v := str(img, "version")
		if v == "latest" {
			v = "0.20260101.2000"
		}
		img["exactVersion"] = v
	}
	if _, ok := sp["dataDisks"]; !ok {
		sp["dataDisks"] = []any{}
	}
	res.setState("Creating")
	s.vms[key(id)] = res
	for _, nic := range nics {
		nic.props["virtualMachine"] = map[string]any{"id": id}
	}
	finish := func() {
		res.setState("Succeeded")
		res.power = "running"
		s.boot(res)
		s.disks[key(diskID)] = &resource{id: diskID, name: diskName, typ: typeDisk, location: loc, zones: res.zones, managedBy: id,
			sku: map[string]any{"name": str(md, "storageAccountType"), "tier": "Standard"},
			props: map[string]any{"osType": str(od, "osType"), "hyperVGeneration": "V2", "diskSizeGB": od["diskSizeGB"], "diskState": "Attached",
				"creationData":      map[string]any{"createOption": "FromImage", "imageReference": obj(sp, "imageReference")},
				"provisioningState": "Succeeded", "timeCreated": s.now().Format(time.RFC3339Nano), "uniqueId": s.newID()}}
	}
	var opFault *Fault
	if fault != nil {
		f := *fault
		f.Message = strings.NewReplacer("{id}", id, "{size}", size, "{location}", loc, "{zone}", zone).Replace(f.Message)
		opFault = &f
	}
	fail := func() { res.setState("Failed"); res.power = "deallocated"; res.failure = opFault }
	s.begin(w, "Microsoft.Compute", res, false, opFault, finish, fail)
	w.json(http.StatusCreated, res.view(false, false))
}

// vmUpdate is a PUT on an existing VM: its tags and userData change,
// what else the body says of its properties is taken as it is, its
// identity (vmId, disk, NICs) stays.
func (s *Server) vmUpdate(w *writer, res *resource, body envelope) {
	if body.Tags != nil {
		res.tags = body.Tags
	}
	changed := false
	if ud, ok := get(body.Properties, "userData").(string); ok {
		changed = ud != res.userData
		res.userData = ud
	}
	if size := str(body.Properties, "hardwareProfile", "vmSize"); size != "" {
		ensure(res.props, "hardwareProfile")["vmSize"] = size
	}
	s.vmUpdating(w, res, changed)
}

// vmPatch is a VM's update: tags, properties.userData (the change the
// agent on the VM reads from IMDS without a reboot), the size.
func (s *Server) vmPatch(w *writer, r *http.Request, m []string) {
	if _, ok := s.group(w, m[1]); !ok {
		return
	}
	var body envelope
	if !decode(w, r, &body) {
		return
	}
	id := s.resourceID(m[1], typeVM, m[2])
	res, ok := s.vms[key(id)]
	if !ok {
		w.error(notFound(typeVM, m[2], m[1]))
		return
	}
	if st := res.state(); st == "Deleting" || st == "Creating" {
		w.error(Fault{Status: http.StatusConflict, Code: "OperationNotAllowed", Message: fmt.Sprintf("Operation 'PATCH' is not allowed on VM '%s' since the VM is %s.", m[2], strings.ToLower(st))})
		return
	}
	if body.Tags != nil {
		res.tags = body.Tags
	}
	changed := false
	if ud, ok := get(body.Properties, "userData").(string); ok {
		if len(ud) > 87380 { // base64 of 64 KiB
			w.error(badRequest("InvalidParameter", "The value of parameter userData is invalid: it is longer than 64 KB."))
			return
		}
		changed = ud != res.userData
		res.userData = ud
	}
	if size := str(body.Properties, "hardwareProfile", "vmSize"); size != "" {
		ensure(res.props, "hardwareProfile")["vmSize"] = size
	}
	s.vmUpdating(w, res, changed)
}

// vmUpdating answers an update, whose operation's end applies a changed
// userData to the VM's engine when the fake serves.
func (s *Server) vmUpdating(w *writer, res *resource, userDataChanged bool) {
	res.setState("Updating")
	s.begin(w, "Microsoft.Compute", res, false, nil, func() {
		res.setState("Succeeded")
		if userDataChanged {
			s.reconfigure(res)
		}
	}, nil)
	w.json(http.StatusOK, res.view(false, false))
}

// vmDelete deletes a VM, and with it, when its operation finishes, what
// its deleteOptions say: each NIC whose reference says Delete (and that
// NIC's public IPs whose own deleteOption says Delete), the OS disk if
// its deleteOption says Delete; what says Detach stays, free.
func (s *Server) vmDelete(w *writer, _ *http.Request, m []string) {
	if _, ok := s.group(w, m[1]); !ok {
		return
	}
	id := s.resourceID(m[1], typeVM, m[2])
	res, ok := s.vms[key(id)]
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if res.state() == "Deleting" {
		// A second delete joins the first.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	res.setState("Deleting")
	res.power = "stopping"
	s.unserve(res)
	s.begin(w, "Microsoft.Compute", res, true, nil, func() { s.removeVM(res) }, nil)
	w.WriteHeader(http.StatusAccepted)
}

// removeVM deletes a VM and what its deleteOptions take along. Called
// with s.mu held.
func (s *Server) removeVM(vm *resource) {
	delete(s.vms, key(vm.id))
	for _, ref := range arr(vm.props, "networkProfile", "networkInterfaces") {
		rm, _ := ref.(map[string]any)
		nic, ok := s.nics[key(str(rm, "id"))]
		if !ok {
			continue
		}
		delete(nic.props, "virtualMachine")
		if strings.EqualFold(str(rm, "properties", "deleteOption"), "Delete") {
			s.removeNIC(nic, true)
		}
	}
	od := obj(vm.props, "storageProfile", "osDisk")
	disk, ok := s.disks[key(str(od, "managedDisk", "id"))]
	if !ok {
		return
	}
	if strings.EqualFold(str(od, "deleteOption"), "Delete") {
		delete(s.disks, key(disk.id))
		return
	}
	disk.managedBy = ""
	disk.props["diskState"] = "Unattached"
}

// diskDelete deletes a managed disk, unless a VM holds it.
func (s *Server) diskDelete(w *writer, _ *http.Request, m []string) {
	if _, ok := s.group(w, m[1]); !ok {
		return
	}
	id := s.resourceID(m[1], typeDisk, m[2])
	res, ok := s.disks[key(id)]
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if res.managedBy != "" {
		w.error(Fault{Status: http.StatusConflict, Code: "OperationNotAllowed", Message: fmt.Sprintf("Disk %s is attached to VM %s.", m[2], res.managedBy)})
		return
	}
	res.setState("Deleting")
	s.begin(w, "Microsoft.Compute", res, true, nil, func() { delete(s.disks, key(id)) }, nil)
	w.WriteHeader(http.StatusAccepted)
}

// instanceView is what $expand=instanceView adds: the provisioning and
// power states as status codes.
func (r *resource) instanceView() map[string]any {
	prov := strings.ToLower(r.state())
	power := map[string]string{"starting": "VM starting", "running": "VM running", "stopping": "VM stopping", "deallocated": "VM deallocated"}
	provisioning := map[string]any{"code": "ProvisioningState/" + prov, "level": "Info", "displayStatus": "Provisioning " + prov}
	if prov == "failed" && r.failure != nil {
		// Azure names the failure's code in the status, and says why:
		// "ProvisioningState/failed/AllocationFailed".
		provisioning = map[string]any{"code": "ProvisioningState/failed/" + r.failure.Code, "level": "Error",
			"displayStatus": "Provisioning failed", "message": r.failure.Message}
	}
	return map[string]any{
		"computerName": str(r.props, "osProfile", "computerName"),
		"osName":       "debian", "osVersion": "13",
		"statuses": []any{
			provisioning,
			map[string]any{"code": "PowerState/" + r.power, "level": "Info", "displayStatus": power[r.power]},
		},
	}
}
