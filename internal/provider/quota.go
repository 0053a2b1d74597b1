package provider

import "context"

// QuotaReader, an optional interface beside Provider, is a provider whose
// cloud says how much of an account's regional quotas is in use: the
// headroom that placement (an account with room for one more proxy) reads
// instead of guessing. A cloud that publishes no quota API (Hetzner's
// limits show in its console only) has none, and placement reads the
// limits its account document holds.
type QuotaReader interface {
	// Quotas is the account's use of its quotas in region, as the cloud
	// reports them now.
	Quotas(ctx context.Context, region string) (Quotas, error)
}

// Quotas is an account's use of the regional quotas a proxy consumes. A
// zero Quota (Limit 0) is one the cloud does not report.
type Quotas struct {
	// Instances counts VMs (EC2's and DigitalOcean's limits are counts
	// of instances; Compute Engine's and Azure's are CPUs, below).
	Instances Quota
	// CPUs counts the virtual CPUs of the account's VMs in the region.
	CPUs Quota
	// Addresses counts public IPv4 addresses: Compute Engine's external
	// addresses in use, EC2's Elastic IPs, Azure's public IPs.
	Addresses Quota
}

// Quota is one limit and its use.
type Quota struct {
	Limit, Usage int
}

// Free is how many more the quota allows: Limit-Usage, never below 0;
// and -1 for a quota the cloud does not report (Limit 0).
func (q Quota) Free() int {
	if q.Limit == 0 {
		return -1
	}
	return max(q.Limit-q.Usage, 0)
}

// AsQuotaReader returns the QuotaReader beneath p's decorators, if p's
// backend is one.
func AsQuotaReader(p Provider) (QuotaReader, bool) { return beneath[QuotaReader](p) }
