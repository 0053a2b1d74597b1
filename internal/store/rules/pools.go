package rules

import (
	"fmt"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// Field paths of a pool document.
const (
	PoolSizeField = "spec.size"
	// PoolClaimsBoundField is spec.claimsPerNamespacePerHour.
	PoolClaimsBoundField = "spec.claimsPerNamespacePerHour"
	// PoolDeleteRequestTimeField and GenerationField are a pool's as a
	// proxy's.
	PoolDeleteRequestTimeField = DeleteRequestTimeField
)

// ReasonPoolFieldImmutable is the rule that a pool's provider and
// placement are what its VMs are: a pool of others is another pool.
const ReasonPoolFieldImmutable = "POOL_FIELD_IMMUTABLE"

// PutPool is what a PUT of spec for the pool name makes of existing (nil:
// there is none) at now: a new pool (created), or the existing one with
// its new size and bound of claims per namespace, and generation + 1
// (fields), or, when both are the same, the existing one and no field. A pool being deleted takes no PUT
// (proxy.ErrBeingDeleted); one whose provider or placement the PUT changes
// is refused with proxy.FieldErrors naming each (ReasonPoolFieldImmutable).
func PutPool(name string, existing *proxy.Pool, spec proxy.PoolSpec, now time.Time) (next *proxy.Pool, fields []Field, created bool, err error) {
	if existing == nil {
		return &proxy.Pool{Name: name, Spec: spec, Generation: 1, CreateTime: now}, nil, true, nil
	}
	if existing.DeleteRequestTime != nil {
		return nil, nil, false, fmt.Errorf("pool %s was asked to be deleted at %s: %w", name, existing.DeleteRequestTime.Format(time.RFC3339), proxy.ErrBeingDeleted)
	}
	var errs proxy.FieldErrors
	if spec.Provider != existing.Spec.Provider {
		errs = append(errs, proxy.FieldError{Field: "spec.provider", Reason: ReasonPoolFieldImmutable,
			Description: fmt.Sprintf("pool %s is of provider %q: a pool's provider is what its VMs are, so it does not change (delete the pool and make another)", name, existing.Spec.Provider)})
	}
	if spec.Placement != existing.Spec.Placement {
		errs = append(errs, proxy.FieldError{Field: "spec.placement", Reason: ReasonPoolFieldImmutable,
			Description: fmt.Sprintf("pool %s has placement %+v: a pool's placement is where its VMs are, so it does not change (delete the pool and make another)", name, existing.Spec.Placement)})
	}
	if len(errs) > 0 {
		return nil, nil, false, errs
	}
	next = ClonePool(existing)
	if spec.Size == existing.Spec.Size && spec.ClaimsPerNamespacePerHour == existing.Spec.ClaimsPerNamespacePerHour {
		return next, nil, false, nil
	}
	next.Spec.Size, next.Spec.ClaimsPerNamespacePerHour = spec.Size, spec.ClaimsPerNamespacePerHour
	next.Generation++
	return next, []Field{{Path: PoolSizeField, Value: spec.Size}, {Path: PoolClaimsBoundField, Value: spec.ClaimsPerNamespacePerHour},
		{Path: GenerationField, Value: next.Generation}}, false, nil
}

// RequestPoolDeletion marks the pool for deletion at now: its reconcile
// deletes the unclaimed members, then the document. A pool whose deletion
// was requested already keeps its first request: nil.
func RequestPoolDeletion(p *proxy.Pool, now time.Time) []Field {
	if p.DeleteRequestTime != nil {
		return nil
	}
	p.DeleteRequestTime = &now
	return []Field{{Path: PoolDeleteRequestTimeField, Value: now}}
}

// ClonePool is a deep copy of a pool.
func ClonePool(p *proxy.Pool) *proxy.Pool {
	c := *p
	if p.DeleteRequestTime != nil {
		t := *p.DeleteRequestTime
		c.DeleteRequestTime = &t
	}
	return &c
}
