// Package placement holds the rules of a placement that several clouds
// share, so that each cloud's validator (its validate.go) keeps only what
// differs: its names, forms and limits. A cloud states its lists of
// machine types and images as Names (allowed by the operator, with the
// default a placement that names none gets), its regions made of zones
// as Groups (Hetzner's network zones of locations, DigitalOcean's metros
// of regions), and collects its broken rules in Violations, whose
// descriptions say the rule the same way on every cloud.
//
// It imports the contract only, and no cloud imports another through it:
// the words that differ are the cloud's, passed in.
package placement

import (
	"fmt"

	"github.com/egress-proxies/egress/internal/provider"
)

// Violations are the rules a request breaks, in the order they were
// found: a cloud's Validator returns them.
type Violations []provider.Violation

// Add records a broken rule: the field below the spec, the reason
// (provider.Reason…) and what is wrong and what would be right.
func (v *Violations) Add(field, reason, format string, args ...any) {
	*v = append(*v, provider.Violation{Field: field, Reason: reason, Description: fmt.Sprintf(format, args...)})
}

// NoWarmPool refuses a warm pool's placement on a cloud that cannot hand
// a running VM a new configuration, since a pool's VMs are claimed that
// way (provider.Reconfigurer). cloud is the provider type, vm what the
// cloud calls a VM ("server"), why what fixes its configuration.
func (v *Violations) NoWarmPool(req provider.ValidateRequest, cloud, vm, why string) {
	if req.Pool {
		v.Add("provider", provider.ReasonProviderCannotReconfigure,
			"%s cannot hand a running %s a new configuration (%s), so it cannot serve a warm pool, whose VMs are claimed that way; proxies on %s get a new %s for a change instead",
			cloud, vm, why, cloud, vm)
	}
}

// CloudInit refuses a cloud-init over the cloud's limit of max bytes;
// where says where it goes ("a Hetzner server's user-data").
func (v *Violations) CloudInit(cloudInit string, max int, where string) {
	if n := len(cloudInit); n > max {
		v.Add("cloudInit", provider.ReasonCloudInitTooLarge, "is %d bytes, over the %d-byte limit of %s", n, max, where)
	}
}
