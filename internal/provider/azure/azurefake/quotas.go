package azurefake

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
)

// Quotas are a subscription's quotas in a location that a proxy
// consumes, as the usages APIs report them
// (https://learn.microsoft.com/en-us/rest/api/compute/usage/list and
// https://learn.microsoft.com/en-us/rest/api/virtualnetwork/usages/list):
// Cores, "Total Regional vCPUs" (usage name "cores"), which counts every
// VM of the location, deallocated ones too; VirtualMachines
// ("virtualMachines"); and PublicIPAddresses ("PublicIPAddresses"). A zero
// limit is not enforced, nor reported.
//
// Azure's defaults depend on the subscription's offer (20 vCPUs a region
// for pay-as-you-go, 25,000 VMs, 1,000 public IPs: "Azure subscription
// and service limits, quotas, and constraints",
// https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/azure-subscription-service-limits),
// so a new fake enforces none, and a test sets the limits it means.
type Quotas struct {
	Cores, VirtualMachines, PublicIPAddresses int
}

// SetQuotas sets location's quota limits from now on; what the location
// holds already counts toward them.
func (s *Server) SetQuotas(location string, q Quotas) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quotas[normalizeLocation(location)] = q
}

// sizeCPUs reads a size's vCPUs from its name, as Azure names sizes
// ("Standard_B1s", "Standard_D2s_v5": the figure after the family's
// letters, https://learn.microsoft.com/en-us/azure/virtual-machines/vm-naming-conventions);
// a name without one counts one, the fake's assumption.
var sizeCPUs = regexp.MustCompile(`^(?i:standard|basic)_[A-Za-z]+(\d+)`)

func vCPUs(size string) int {
	if m := sizeCPUs.FindStringSubmatch(size); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// quotaUse is a location's use of each quota. Called with s.mu held.
func (s *Server) quotaUse(location string) Quotas {
	var u Quotas
	for _, vm := range s.vms {
		if vm.location == location {
			u.VirtualMachines++
			u.Cores += vCPUs(str(vm.props, "hardwareProfile", "vmSize"))
		}
	}
	for _, ip := range s.ips {
		if ip.location == location {
			u.PublicIPAddresses++
		}
	}
	return u
}

// vmOverQuota is Azure's refusal of a VM of size in location past its
// quotas, or nil: 409 with code QuotaExceeded and the message Azure
// writes for a cores quota (QuotaExceeded's). Azure's page on quota
// errors shows the older code OperationNotAllowed for the same refusal
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/templates/error-resource-quota),
// which the azure provider maps by its message; current API versions
// answer QuotaExceeded, as az prints it: the fake answers that. The
// count of VMs, refused in the same words with "Virtual Machines" for
// the family, is the fake's assumption. Called with s.mu held.
func (s *Server) vmOverQuota(location, size string) *Fault {
	q, ok := s.quotas[location]
	if !ok {
		return nil
	}
	u := s.quotaUse(location)
	var f Fault
	switch need := vCPUs(size); {
	case q.Cores > 0 && u.Cores+need > q.Cores:
		f = QuotaExceeded("Total Regional", q.Cores, u.Cores, need)
	case q.VirtualMachines > 0 && u.VirtualMachines+1 > q.VirtualMachines:
		f = QuotaExceeded("Virtual Machines", q.VirtualMachines, u.VirtualMachines, 1)
	default:
		return nil
	}
	f.Code = "QuotaExceeded"
	return &f
}

// ipOverQuota is Azure's refusal of a public IP past the location's
// quota, or nil: 400 PublicIPCountLimitReached, "Cannot create more than
// N public IP addresses for this subscription in this region." (the
// Network resource provider's wording, as its static-allocation sibling
// StaticPublicIPCountLimitReached reads in
// https://github.com/Azure/data-management-zone/issues/314). Called with
// s.mu held.
func (s *Server) ipOverQuota(location string) *Fault {
	q := s.quotas[location]
	if q.PublicIPAddresses == 0 || s.quotaUse(location).PublicIPAddresses < q.PublicIPAddresses {
		return nil
	}
	f := badRequest("PublicIPCountLimitReached", "Cannot create more than %d public IP addresses for this subscription in this region.", q.PublicIPAddresses)
	return &f
}

var usageRoutes = []route{
	{method: http.MethodGet, name: "computeUsages.list", auth: true, path: armPath(subPath + `/providers/Microsoft\.Compute/locations/([^/]+)/usages`), serve: (*Server).computeUsages},
	{method: http.MethodGet, name: "networkUsages.list", auth: true, path: armPath(subPath + `/providers/Microsoft\.Network/locations/([^/]+)/usages`), serve: (*Server).networkUsages},
}

// usage is one entry of a usages list. Compute writes no id; Network
// does.
type usage struct {
	ID           string    `json:"id,omitempty"`
	Unit         string    `json:"unit"`
	CurrentValue int       `json:"currentValue"`
	Limit        int       `json:"limit"`
	Name         usageName `json:"name"`
}

type usageName struct {
	Value          string `json:"value"`
	LocalizedValue string `json:"localizedValue"`
}

// computeUsages answers Microsoft.Compute's usages of a location: cores
// and virtualMachines, where their quota is set.
func (s *Server) computeUsages(w *writer, _ *http.Request, m []string) {
	loc := normalizeLocation(m[1])
	q, u := s.quotas[loc], s.quotaUse(loc)
	out := []usage{}
	if q.Cores > 0 {
		out = append(out, usage{Unit: "Count", CurrentValue: u.Cores, Limit: q.Cores, Name: usageName{"cores", "Total Regional vCPUs"}})
	}
	if q.VirtualMachines > 0 {
		out = append(out, usage{Unit: "Count", CurrentValue: u.VirtualMachines, Limit: q.VirtualMachines, Name: usageName{"virtualMachines", "Virtual Machines"}})
	}
	w.json(http.StatusOK, map[string]any{"value": out})
}

// networkUsages answers Microsoft.Network's usages of a location:
// PublicIPAddresses, where its quota is set.
func (s *Server) networkUsages(w *writer, _ *http.Request, m []string) {
	loc := normalizeLocation(m[1])
	q, u := s.quotas[loc], s.quotaUse(loc)
	out := []usage{}
	if q.PublicIPAddresses > 0 {
		out = append(out, usage{ID: fmt.Sprintf("/subscriptions/%s/providers/Microsoft.Network/locations/%s/usages/PublicIPAddresses", s.subscription, loc),
			Unit: "Count", CurrentValue: u.PublicIPAddresses, Limit: q.PublicIPAddresses, Name: usageName{"PublicIPAddresses", "Public IP Addresses"}})
	}
	w.json(http.StatusOK, map[string]any{"value": out})
}
