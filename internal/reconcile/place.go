package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/account/placement"
	"github.com/egress-proxies/egress/internal/provider"
)

// Accounts is what placement reads of the accounts collection (package
// account). *store.Store satisfies it; the composition root hands a
// cached one (account.Cache), so a create reads the collection at most
// once a minute.
type Accounts interface {
	// ListAccounts reads every account.
	ListAccounts(ctx context.Context) ([]account.Account, error)
	// CountPlaced counts the proxies of type typ placed in region of
	// account id (never the default, "").
	CountPlaced(ctx context.Context, typ, id, region string) (int, error)
}

// place chooses the account of a new proxy's VM (package
// account/placement): among the deployment's default and the active
// accounts of the spec's provider type that serve its region, one with
// headroom. It returns ErrNoHeadroom's error when none has room. Without
// accounts (no Accounts, or none of this type serving the region) it is
// the default, with no read of any quota: a deployment that has no
// account documents creates as it did before them.
func (run *run) place(ctx context.Context) (string, error) {
	src := run.r.opts.Accounts
	if src == nil {
		return account.Default, nil
	}
	p := run.doc
	typ, region := p.Spec.Provider, p.Spec.Placement.Region
	all, err := src.ListAccounts(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the accounts: %w", err)
	}
	candidates := []placement.Candidate{{ID: account.Default}}
	caps := map[string]int{}
	for _, a := range all {
		if a.Provider == typ && a.State == account.Active && a.Serves(region) {
			candidates = append(candidates, placement.Candidate{ID: a.ID})
			caps[a.ID] = a.Limits.InstancesPerRegion
		}
	}
	if len(candidates) == 1 {
		return account.Default, nil
	}
	for i := range candidates {
		c := &candidates[i]
		if c.Cap = caps[c.ID]; c.Cap > 0 {
			if c.Placed, err = src.CountPlaced(ctx, typ, c.ID, region); err != nil {
				return "", fmt.Errorf("counting the proxies of %s: %w", placement.Name(c.ID), err)
			}
		}
		prov, err := run.r.providers.Account(ctx, typ, c.ID)
		if err != nil {
			// An account whose provider cannot be made takes no proxy
			// now; the others may.
			run.log.WarnContext(ctx, "account's provider not available; not placing there", slog.String("account", c.ID), slog.Any("error", err))
			c.Unavailable = "its provider is not available: " + err.Error()
			continue
		}
		if qr, ok := provider.AsQuotaReader(prov); ok {
			// The quotas as read within a TTL by this process (quotas.go),
			// less what it placed since: not a read of every account for
			// every proxy.
			q, err := run.r.quotas.get(ctx, quotaKey{typ, c.ID, region}, run.r.clock.Now(), run.r.opts.QuotaTTL, run.r.clock.Sleep, func(ctx context.Context) (provider.Quotas, error) {
				return qr.Quotas(ctx, region)
			})
			if err != nil {
				// Unknown headroom bounds nothing: the cloud's answer to
				// the create is the final word.
				run.log.WarnContext(ctx, "cannot read the account's quotas; its headroom is unknown", slog.String("account", c.ID), slog.String("region", region), slog.Any("error", err))
				continue
			}
			c.Quotas = &q
		}
	}
	id, err := placement.Choose(p.UID, candidates)
	if err != nil {
		return "", err
	}
	run.r.quotas.placed(quotaKey{typ, id, region})
	run.log.InfoContext(ctx, "proxy placed", slog.String("account", id), slog.String("region", region), slog.Int("candidates", len(candidates)))
	return id, nil
}

// noHeadroom reports whether err is placement's: no account has room.
func noHeadroom(err error) bool { return errors.Is(err, placement.ErrNoHeadroom) }
