package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// list calls ListByTag on every configured provider, in every account of
// its type: the deployment's default and each account document's,
// draining ones too (what is in them is still to be collected). A
// provider that cannot be made or listed is logged and its error kept;
// the others go on. When the accounts cannot be read, the default
// accounts alone are listed, and the run is incomplete.
func (c *Collector) list(ctx context.Context) []listing {
	byType, accountsErr := c.accountsByType(ctx)
	var out []listing
	if accountsErr != nil {
		out = append(out, listing{err: accountsErr})
	}
	for _, typ := range c.providers.Types() {
		for _, id := range append([]string{account.Default}, byType[typ]...) {
			l := listing{typ: typ, account: id}
			p, err := c.providers.Account(ctx, typ, id)
			if err == nil {
				l.provider = p
				l.instances, err = p.ListByTag(ctx)
			}
			switch {
			case provider.KindOf(err) == provider.KindRateLimited:
				// The account's budget queued the listing, or the cloud
				// refused it for its rate limit: nothing is wrong, the
				// listing waits its turn, and the tick's redelivery or
				// the next tick lists again.
				l.instances = nil
				l.err = &waiting{typ: typ, account: id, err: err}
				c.log.WarnContext(ctx, "listing waits its turn under the account's rate limit; none of this provider's instances is collected this run",
					slog.String("provider", typ), slog.String("account", id), slog.Duration("retryAfter", provider.RetryAfter(err)), slog.Any("error", err))
			case err != nil:
				l.instances = nil
				l.err = fmt.Errorf("%w: listing the instances of provider %q%s: %w", ErrIncomplete, typ, inAccount(id), err)
				c.log.ErrorContext(ctx, "cannot list instances; none of this provider's is collected this run",
					slog.String("provider", typ), slog.String("account", id), slog.Any("error", err))
			}
			out = append(out, l)
		}
	}
	return out
}

// accountsByType reads the account documents' ids by provider type,
// sorted; none without Options.Accounts.
func (c *Collector) accountsByType(ctx context.Context) (map[string][]string, error) {
	if c.opts.Accounts == nil {
		return nil, nil
	}
	all, err := c.opts.Accounts.ListAccounts(ctx)
	if err != nil {
		c.log.ErrorContext(ctx, "cannot read the accounts; only the default accounts are listed this run", slog.Any("error", err))
		return nil, fmt.Errorf("%w: reading the accounts: %w", ErrIncomplete, err)
	}
	byType := map[string][]string{}
	for _, a := range all {
		byType[a.Provider] = append(byType[a.Provider], a.ID)
	}
	for _, ids := range byType {
		slices.Sort(ids)
	}
	return byType, nil
}

// inAccount names an account other than the default in a message.
func inAccount(id string) string {
	if id == account.Default {
		return ""
	}
	return fmt.Sprintf(" in account %q", id)
}

// orphan is an instance to delete.
type orphan struct {
	summary *Summary
	p       provider.Provider
	inst    provider.Instance
}

// collect decides on every listed instance and deletes the orphans, with at
// most Parallelism deletes in flight across all providers, unless the
// guard refuses the run. It fills in the summaries and returns why the run
// was refused, if it was, and the delete failures joined.
func (c *Collector) collect(ctx context.Context, now time.Time, listings []listing, uids map[string]proxy.Claim, summaries []Summary) (string, error) {
	var orphans []orphan
	for i, l := range listings {
		s := &summaries[i]
		for _, inst := range l.instances {
			if c.decide(ctx, now, s, l.account, inst, uids) {
				orphans = append(orphans, orphan{summary: s, p: l.provider, inst: inst})
			}
		}
	}
	if why := c.guard(ctx, orphans, uids); why != "" {
		for i := range summaries {
			summaries[i].Refused = true
		}
		return why, nil
	}
	if c.opts.DryRun {
		for _, o := range orphans {
			c.log.InfoContext(ctx, "would delete orphaned instance (dry run)", orphanAttrs(now, o)...)
		}
		return "", nil
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
			errs = append(errs, fmt.Errorf("deleting orphaned instance %s (uid %s) of provider %q%s: %w", o.inst.ID, o.inst.UID, o.summary.Provider, inAccount(o.summary.Account), err))
			c.log.ErrorContext(ctx, "cannot delete orphaned instance", append(orphanAttrs(now, o), slog.Any("error", err))...)
			return
		}
		o.summary.Deleted++
		c.log.InfoContext(ctx, "deleted orphaned instance", orphanAttrs(now, o)...)
	})
	return "", errors.Join(errs...)
}

// The reasons of a refused run, the "gc refused" line's why.
const (
	refusedTooMany     = "more than the most one run may delete (GC_MAX_DELETES)"
	refusedNoDocuments = "no proxy document exists at all (GC_ALLOW_EMPTY_DATABASE is off)"
)

// guard decides whether the run may delete its orphans, and if not, logs
// one "gc refused" line saying why and how many, and returns why. A run
// that would delete more than MaxDeletes resources, or any while no proxy
// document exists, looks far more like a mistake (a deployment pointed at
// the wrong or an empty database, a listing wider than it should be) than
// like that much garbage: deleting nothing costs a few minutes of VMs, a
// wrong delete costs a fleet. The operator who finds the garbage real
// raises the limit (or allows the empty database) for one run. A dry run
// is judged too, so that it says what a real run would do.
func (c *Collector) guard(ctx context.Context, orphans []orphan, uids map[string]proxy.Claim) string {
	n := len(orphans)
	var whys []string
	if n > 0 && len(uids) == 0 && !c.opts.AllowEmptyDatabase {
		whys = append(whys, refusedNoDocuments)
	}
	if n > c.opts.MaxDeletes {
		whys = append(whys, refusedTooMany)
	}
	if len(whys) == 0 {
		return ""
	}
	why := strings.Join(whys, "; and ")
	byProvider := map[string]int{}
	for _, o := range orphans {
		byProvider[o.summary.Provider]++
	}
	c.log.ErrorContext(ctx, "gc refused",
		slog.String("why", why),
		slog.Int("wouldDelete", n),
		slog.Int("maxDeletes", c.opts.MaxDeletes),
		slog.Int("documents", len(uids)),
		slog.Any("byProvider", byProvider),
		slog.String("deployment", c.opts.Deployment),
		slog.Bool("dryRun", c.opts.DryRun),
		slog.String("todo", "nothing was deleted; if these resources are garbage, run once with GC_MAX_DELETES above wouldDelete (or GC_ALLOW_EMPTY_DATABASE=true when no document exists), then set it back (docs/operations/garbage-collection.md)"))
	return why
}

// unconfigured logs, once per run, each provider type that documents
// name but that is not configured (removed from PROVIDERS while proxies
// still use it): its resources can be neither listed nor collected, and
// the reconciler fails those proxies, or deletes their documents leaving
// their VMs, as they ask. It returns those types.
func (c *Collector) unconfigured(ctx context.Context, uids map[string]proxy.Claim) []string {
	configured := c.providers.Types()
	named := map[string]int{}
	for _, claim := range uids {
		if claim.Provider != "" && !slices.Contains(configured, claim.Provider) {
			named[claim.Provider]++
		}
	}
	types := slices.Sorted(maps.Keys(named))
	for _, typ := range types {
		c.log.ErrorContext(ctx, "provider named by documents is not configured; its resources are neither listed nor collected",
			slog.String("provider", typ),
			slog.Int("documents", named[typ]),
			slog.String("configured", strings.Join(configured, ",")))
	}
	return types
}

// unknownAccounts logs, once per run, each account of a configured type
// that documents name (status.account) and the run did not list because
// no account document holds it (deleted while proxies still live there,
// or naming another type): its VMs are neither listed nor collected, and
// those documents' deletions wait (the reconciler cannot reach them). It
// returns them as TYPE/ID. A run that could not read the accounts names
// none: the defaults alone were listed, and it says so already.
func (c *Collector) unknownAccounts(ctx context.Context, all []listing, uids map[string]proxy.Claim) []string {
	listed := map[string]bool{}
	for _, l := range all {
		if l.typ == "" {
			return nil // the accounts were not read
		}
		listed[l.typ+"/"+l.account] = true
	}
	configured := c.providers.Types()
	named := map[string]int{}
	for _, claim := range uids {
		if claim.Account != account.Default && slices.Contains(configured, claim.Provider) && !listed[claim.Provider+"/"+claim.Account] {
			named[claim.Provider+"/"+claim.Account]++
		}
	}
	keys := slices.Sorted(maps.Keys(named))
	for _, k := range keys {
		typ, id, _ := strings.Cut(k, "/")
		c.log.ErrorContext(ctx, "account named by documents has no account document; its resources are neither listed nor collected",
			slog.String("provider", typ), slog.String("account", id), slog.Int("documents", named[k]),
			slog.String("todo", "write accounts/"+id+" again (docs/operations/accounts.md), or delete those proxies once their VMs are gone"))
	}
	return keys
}

// decide counts one instance in the summary and reports whether it is an
// orphan to delete.
//
// Only instances ListByTag returned are seen at all, and the provider
// contract is that it returns only those labelled
// LabelManaged=LabelManagedYes: that is the managed check, and an instance
// of another tool sharing the project is never even considered. The
// contract also keeps another deployment's out of the listing; the
// deployment is checked here again all the same, since a provider that
// listed wider would otherwise hand this collector a fleet it does not own.
func (c *Collector) decide(ctx context.Context, now time.Time, s *Summary, acct string, inst provider.Instance, uids map[string]proxy.Claim) bool {
	switch {
	case inst.Deployment == "":
		// Made before the label, by this deployment or by anything else
		// that used the two older labels: a person must say whose.
		s.Unowned++
		c.log.WarnContext(ctx, "managed resource has no deployment label; kept, never collected (docs/operations/garbage-collection.md#adopting-what-was-made-before-the-label)",
			slog.String("provider", s.Provider), slog.String("providerID", inst.ID), slog.String("uid", inst.UID),
			slog.String("deployment", c.opts.Deployment))
		return false
	case inst.Deployment != c.opts.Deployment:
		s.Unowned++
		c.log.WarnContext(ctx, "managed resource of another deployment; kept, never collected",
			slog.String("provider", s.Provider), slog.String("providerID", inst.ID), slog.String("uid", inst.UID),
			slog.String("deployment", c.opts.Deployment), slog.String("itsDeployment", inst.Deployment))
		return false
	case inst.UID == "":
		// Without a uid nothing says whose it is; a person must look.
		s.NoUID++
		c.log.WarnContext(ctx, "managed instance has no uid label; kept, never collected",
			slog.String("provider", s.Provider), slog.String("providerID", inst.ID))
		return false
	case claimed(uids, s.Provider, acct, inst.UID):
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

// claimed reports whether a live document claims the instance of uid
// listed in account acct of provider type typ: its uid, and its VM's
// account and type. An instance in one account is never kept (nor its
// twin deleted) on the strength of a claim whose VM lives in another: a
// proxy placed again after a quota refused it in one account leaves
// there, under its uid, only what is garbage. A claim that names no type
// (a document without spec.provider) is any type's.
func claimed(uids map[string]proxy.Claim, typ, acct, uid string) bool {
	c, ok := uids[uid]
	return ok && c.Account == acct && (c.Provider == "" || c.Provider == typ)
}

func orphanAttrs(now time.Time, o orphan) []any {
	return []any{
		slog.String("provider", o.summary.Provider),
		slog.String("account", o.summary.Account),
		slog.String("providerID", o.inst.ID),
		slog.String("uid", o.inst.UID),
		slog.String("age", now.Sub(o.inst.CreatedAt).String()),
	}
}
