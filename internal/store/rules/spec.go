package rules

import (
	"fmt"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// Field paths of the live changes of a proxy.
const (
	AllowedSourceRangesField = "spec.allowedSourceRanges"
	ConnectPortsField        = "spec.connectPorts"
	BandwidthLimitField      = "spec.bandwidthLimit"
	TrafficQuotaField        = "spec.trafficQuota"
	AccessLogField           = "spec.accessLog"
	IPv6EgressField          = "spec.ipv6Egress"
	GenerationField          = "generation"
	CredentialsField         = "reconciler.credentials"
)

// Live refuses a change of p's configuration (a PATCH, new credentials)
// on a proxy on its way out (proxy.ErrBeingDeleted) or Failed
// (proxy.ErrFailed: it has no VM to be given the change, and gets none).
func Live(p *proxy.Proxy) error {
	switch {
	case p.DeleteRequestTime != nil:
		return fmt.Errorf("%s was asked to be deleted at %s: %w", p.Key(), p.DeleteRequestTime.Format(time.RFC3339), proxy.ErrBeingDeleted)
	case p.Status.Phase == proxy.PhaseFailed:
		return fmt.Errorf("%s is Failed (%s): %w", p.Key(), p.Status.Message, proxy.ErrFailed)
	}
	return nil
}

// UpdateSpec changes p's reconfigurable fields (allowedSourceRanges,
// connectPorts, bandwidthLimit, trafficQuota, accessLog and ipv6Egress;
// nothing else of
// spec is taken from it) to those of the spec update makes of p's (its
// error is returned as it is: the API's validation of the result) at now,
// and returns the fields that changed: all six, generation + 1, and a
// progress time, so the sweep re-drives a proxy whose change's event was
// lost. A spec that changes nothing changes nothing: the result is nil and
// the generation stays. Live's refusals come first.
func UpdateSpec(p *proxy.Proxy, now time.Time, update func(proxy.Spec) (proxy.Spec, error)) ([]Field, error) {
	if err := Live(p); err != nil {
		return nil, err
	}
	spec, err := update(p.Spec)
	if err != nil {
		return nil, err
	}
	ranges, ports := nilIfEmpty(spec.AllowedSourceRanges), nilIfEmpty(spec.ConnectPorts)
	// Written as a value, never null: a document from before the field
	// (nil, which is on) and one that says on are the same proxy.
	accessLog := spec.AccessLogOn()
	if slices.Equal(ranges, p.Spec.AllowedSourceRanges) && slices.Equal(ports, p.Spec.ConnectPorts) &&
		spec.BandwidthLimit == p.Spec.BandwidthLimit && spec.TrafficQuota == p.Spec.TrafficQuota && accessLog == p.Spec.AccessLogOn() && spec.IPv6Egress == p.Spec.IPv6Egress {
		return nil, nil
	}
	p.Spec.AllowedSourceRanges, p.Spec.ConnectPorts = ranges, ports
	p.Spec.BandwidthLimit, p.Spec.AccessLog = spec.BandwidthLimit, &accessLog
	p.Spec.IPv6Egress, p.Spec.TrafficQuota = spec.IPv6Egress, spec.TrafficQuota
	p.Generation++
	p.Reconciler.ProgressTime = now
	return []Field{
		{Path: AllowedSourceRangesField, Value: ranges},
		{Path: ConnectPortsField, Value: ports},
		{Path: BandwidthLimitField, Value: spec.BandwidthLimit},
		{Path: TrafficQuotaField, Value: spec.TrafficQuota},
		{Path: AccessLogField, Value: accessLog},
		{Path: IPv6EgressField, Value: string(spec.IPv6Egress)},
		{Path: GenerationField, Value: p.Generation},
		{Path: ProgressTimeField, Value: now},
	}, nil
}

// RotateCredentials gives p new credentials (proxy.NewCredentials) at
// now: generation + 1, so the reconciler gives its VM the new ones, and a
// progress time for the sweep. Live's refusals come first.
func RotateCredentials(p *proxy.Proxy, now time.Time) ([]Field, error) {
	if err := Live(p); err != nil {
		return nil, err
	}
	creds, err := proxy.NewCredentials()
	if err != nil {
		return nil, err
	}
	p.Reconciler.Credentials = creds
	p.Generation++
	p.Reconciler.ProgressTime = now
	return []Field{
		{Path: CredentialsField, Value: creds},
		{Path: GenerationField, Value: p.Generation},
		{Path: ProgressTimeField, Value: now},
	}, nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
