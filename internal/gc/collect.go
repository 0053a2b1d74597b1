package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// list calls ListByTag on every configured provider. A provider that cannot
// be made or listed is logged and its error kept; the others go on.
func (c *Collector) list(ctx context.Context) []listing {
	types := c.providers.Types()
	out := make([]listing, len(types))
	for i, typ := range types {
		out[i].typ = typ
		p, err := c.providers.Get(ctx, typ)
		if err == nil {
			out[i].provider = p
			out[i].instances, err = p.ListByTag(ctx)
		}
		if err != nil {
			out[i].instances = nil
			out[i].err = fmt.Errorf("%w: listing the instances of provider %q: %w", ErrIncomplete, typ, err)
			c.log.ErrorContext(ctx, "cannot list instances; none of this provider's is collected this run",
				slog.String("provider", typ), slog.Any("error", err))
		}
	}
	return out
}

// orphan is an instance to delete.
type orphan struct {
	summary *Summary
	p       provider.Provider
	inst    provider.Instance
}

// collect decides on every listed instance and deletes the orphans, with at
// most Parallelism deletes in flight across all providers. It fills in the
// summaries and returns the delete failures joined.
func (c *Collector) collect(ctx context.Context, now time.Time, listings []listing, uids map[string]proxy.Claim, summaries []Summary) error {
	var orphans []orphan
	for i, l := range listings {
		s := &summaries[i]
		for _, inst := range l.instances {
			if c.decide(ctx, now, s, inst, uids) {
				orphans = append(orphans, orphan{summary: s, p: l.provider, inst: inst})
			}
		}
	}
	if c.opts.DryRun {
		for _, o := range orphans {
			c.log.InfoContext(ctx, "would delete orphaned instance (dry run)", orphanAttrs(now, o)...)
		}
		return nil
	}

	var (
		mu   sync.Mutex
		errs []error
	)
	c.forEach(len(orphans), func(i int) {
		o := orphans[i]
		err := o.p.Delete(ctx, o.inst.ID)
		if errors.Is(err, provider.ErrNotFound) {
			// Delete is idempotent by contract; a provider that says
			// NotFound anyway means the VM is gone, which is the goal.
			err = nil
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			o.summary.Failed++
			errs = append(errs, fmt.Errorf("deleting orphaned instance %s (uid %s) of provider %q: %w", o.inst.ID, o.inst.UID, o.summary.Provider, err))
			c.log.ErrorContext(ctx, "cannot delete orphaned instance", append(orphanAttrs(now, o), slog.Any("error", err))...)
			return
		}
		o.summary.Deleted++
		c.log.InfoContext(ctx, "deleted orphaned instance", orphanAttrs(now, o)...)
	})
	return errors.Join(errs...)
}

// decide counts one instance in the summary and reports whether it is an
// orphan to delete.
//
// Only instances ListByTag returned are seen at all, and the provider
// contract is that it returns only those labelled
// LabelManaged=LabelManagedYes: that is the managed check, and an instance
// of another tool sharing the project is never even considered.
func (c *Collector) decide(ctx context.Context, now time.Time, s *Summary, inst provider.Instance, uids map[string]proxy.Claim) bool {
	switch {
	case inst.UID == "":
		// Without a uid nothing says whose it is; a person must look.
		s.NoUID++
		c.log.WarnContext(ctx, "managed instance has no uid label; kept, never collected",
			slog.String("provider", s.Provider), slog.String("providerID", inst.ID))
		return false
	case claimed(uids, inst.UID):
		s.Claimed++
		return false
	case inst.CreatedAt.IsZero():
		// An age we do not know is not an age past the grace period.
		s.TooYoung++
		c.log.WarnContext(ctx, "unclaimed instance has no creation time; kept",
			slog.String("provider", s.Provider), slog.String("providerID", inst.ID), slog.String("uid", inst.UID))
		return false
	case now.Sub(inst.CreatedAt) < c.opts.GracePeriod:
		// It may be the VM of a Create still in flight whose document was
		// deleted meanwhile, and a VM mid-create is not reliably deletable.
		// It is garbage all the same, and a run after the grace period
		// deletes it.
		s.TooYoung++
		c.log.InfoContext(ctx, "unclaimed instance is younger than the grace period; kept for now",
			slog.String("provider", s.Provider), slog.String("providerID", inst.ID), slog.String("uid", inst.UID),
			slog.String("age", now.Sub(inst.CreatedAt).String()))
		return false
	default:
		s.Orphaned++
		return true
	}
}

func claimed(uids map[string]proxy.Claim, uid string) bool {
	_, ok := uids[uid]
	return ok
}

func orphanAttrs(now time.Time, o orphan) []any {
	return []any{
		slog.String("provider", o.summary.Provider),
		slog.String("providerID", o.inst.ID),
		slog.String("uid", o.inst.UID),
		slog.String("age", now.Sub(o.inst.CreatedAt).String()),
	}
}
