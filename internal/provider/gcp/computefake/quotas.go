package computefake

import (
	"net/http"
	"path"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Quotas are the regional quotas of a project that a proxy consumes, by
// the metrics regions.get reports them under in Region.quotas
// (https://cloud.google.com/compute/docs/reference/rest/v1/regions/get;
// the metrics are those of the Quota enum,
// https://cloud.google.com/compute/docs/reference/rest/v1/Quota): CPUS,
// the vCPUs of the region's instances; INSTANCES; IN_USE_ADDRESSES, the
// external IPv4 addresses instances use, ephemeral or static; and
// STATIC_ADDRESSES, the external addresses reserved. A zero limit is not
// enforced, nor reported.
//
// Compute publishes no fixed defaults: "quotas vary by project"
// and grow with its history (https://cloud.google.com/compute/resource-usage),
// so a new fake enforces none, and a test sets the limits it means.
type Quotas struct {
	CPUs, Instances, InUseAddresses, StaticAddresses int
}

// SetQuotas sets region's quota limits from now on; what the region
// holds already counts toward them.
func (s *Server) SetQuotas(region string, q Quotas) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quotas[region] = q
}

// quotaUse is a region's use of each metric. Called with s.mu held.
// An instance deleting still counts, as Compute frees its quota once the
// delete is done (Settle). It walks every instance and address, counted
// in Visits: only a region with quotas set pays it (SetQuotas), as a
// fake of a fleet meant for the work test sets none.
func (s *Server) quotaUse(region string) Quotas {
	var u Quotas
	for key, inst := range s.instances {
		s.visits++
		if regionOf(strings.SplitN(key, "/", 2)[0]) != region {
			continue
		}
		u.Instances++
		u.CPUs += vCPUs(inst.GetMachineType())
		if externalIPv4(inst) {
			u.InUseAddresses++
		}
	}
	for key := range s.addresses {
		s.visits++
		if strings.SplitN(key, "/", 2)[0] == region {
			u.StaticAddresses++
		}
	}
	return u
}

// externalIPv4 reports whether an instance has an external IPv4 address
// (an access config of ONE_TO_ONE_NAT), which counts toward
// IN_USE_ADDRESSES.
func externalIPv4(inst *computepb.Instance) bool {
	for _, ni := range inst.GetNetworkInterfaces() {
		if len(ni.GetAccessConfigs()) > 0 {
			return true
		}
	}
	return false
}

// vCPUs is the vCPUs a machine type counts toward CPUS: N of a
// predefined type ending in -N (n2-standard-4) or of custom-N-MEM; two
// for E2's shared-core types, which "have 2 vCPUs" of which they use a
// fraction (https://cloud.google.com/compute/docs/general-purpose-machines#e2-shared-core);
// one for f1-micro and g1-small. Any other type counts one: the fake's
// assumption.
func vCPUs(machineType string) int {
	name := path.Base(machineType)
	switch name {
	case "e2-micro", "e2-small", "e2-medium":
		return 2
	}
	parts := strings.Split(name, "-")
	if len(parts) >= 3 && parts[len(parts)-3] == "custom" {
		if n, err := strconv.Atoi(parts[len(parts)-2]); err == nil {
			return n
		}
	}
	if n, err := strconv.Atoi(parts[len(parts)-1]); err == nil && n > 0 {
		return n
	}
	return 1
}

// instanceOverQuota returns the error of an instance insert into zone
// that would take a regional quota past its limit, or nil. Compute takes
// such an insert and fails it in its operation with QUOTA_EXCEEDED and
// 403 (an operation of type insert with httpErrorStatusCode 403 and
// "Quota 'CPUS_ALL_REGIONS' exceeded",
// https://github.com/GoogleCloudPlatform/ai-on-gke/issues/849; "Quota
// exceeded: If the following API response fields are present when you
// poll the operation",
// https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-bulk-vm-creation),
// which the provider reads in Get. Called with s.mu held.
func (s *Server) instanceOverQuota(zone string, inst *computepb.Instance) *OperationError {
	region := regionOf(zone)
	q, ok := s.quotas[region]
	if !ok {
		return nil
	}
	u := s.quotaUse(region)
	for _, c := range []struct {
		metric      string
		limit, need int
	}{
		{"CPUS", q.CPUs, u.CPUs + vCPUs(inst.GetMachineType())},
		{"INSTANCES", q.Instances, u.Instances + 1},
		{"IN_USE_ADDRESSES", q.InUseAddresses, u.InUseAddresses + boolInt(externalIPv4(inst))},
	} {
		if c.limit > 0 && c.need > c.limit {
			e := QuotaExceeded(c.metric, region, float64(c.limit))
			return &e
		}
	}
	return nil
}

// addressOverQuota returns the refusal of an address insert past
// STATIC_ADDRESSES, or nil. The fake refuses it in the insert's answer,
// 403 quotaExceeded with the operation's message ("Quota
// 'STATIC_ADDRESSES' exceeded. Limit: 1.0 in region us-east1.",
// https://github.com/mesosphere-backup/terraform-dcos/issues/61): no page
// says whether Compute answers it there or in the operation, so this is
// the fake's assumption. Called with s.mu held.
func (s *Server) addressOverQuota(region string) *Fault {
	q := s.quotas[region]
	if q.StaticAddresses == 0 || s.quotaUse(region).StaticAddresses < q.StaticAddresses {
		return nil
	}
	e := QuotaExceeded("STATIC_ADDRESSES", region, float64(q.StaticAddresses))
	return &Fault{Code: http.StatusForbidden, Reason: "quotaExceeded", Message: e.Message}
}

// regionQuotas is Region.quotas: each metric the region enforces, with
// its limit and use. Called with s.mu held.
func (s *Server) regionQuotas(region string) []*computepb.Quota {
	q, ok := s.quotas[region]
	if !ok {
		return nil
	}
	u := s.quotaUse(region)
	var out []*computepb.Quota
	for _, m := range []struct {
		metric       string
		limit, usage int
	}{
		{"CPUS", q.CPUs, u.CPUs},
		{"INSTANCES", q.Instances, u.Instances},
		{"IN_USE_ADDRESSES", q.InUseAddresses, u.InUseAddresses},
		{"STATIC_ADDRESSES", q.StaticAddresses, u.StaticAddresses},
	} {
		if m.limit > 0 {
			out = append(out, &computepb.Quota{Metric: proto.String(m.metric), Limit: proto.Float64(float64(m.limit)), Usage: proto.Float64(float64(m.usage))})
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
