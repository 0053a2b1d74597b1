package pools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
)

// Store is the part of the document store a pool's run uses. *store.Store
// and *storefake.Store satisfy it.
type Store interface {
	// Get reads a proxy document (proxy.ErrNotFound when none): the proxy
	// that claimed a member, to see whether the claim is done.
	Get(ctx context.Context, key proxy.Key) (*proxy.Proxy, error)
	// GetPool reads the pool document (proxy.ErrNotFound when none).
	GetPool(ctx context.Context, name string) (*proxy.Pool, error)
	// Members returns every member document of the pool.
	Members(ctx context.Context, pool string) ([]*proxy.Proxy, error)
	// EnsureMembers creates the missing live members up to the pool's
	// size, in one transaction with the query of the members.
	EnsureMembers(ctx context.Context, pool string, now time.Time) ([]*proxy.Proxy, error)
	// RequestDeletion marks a member for deletion; it is idempotent and
	// marks no claimed member.
	RequestDeletion(ctx context.Context, key proxy.Key, now time.Time) (*proxy.Proxy, error)
	// Delete removes a document if its update time is still updateTime.
	Delete(ctx context.Context, key proxy.Key, updateTime time.Time, spent ...proxy.Spent) error
	// UpdatePoolStatus writes the pool's status if its update time is
	// still p.UpdateTime (else proxy.ErrConflict).
	UpdatePoolStatus(ctx context.Context, p *proxy.Pool) (time.Time, error)
	// DeletePool removes the pool document if its update time is still
	// updateTime (else proxy.ErrConflict).
	DeletePool(ctx context.Context, name string, updateTime time.Time) error
}

// DefaultRefillBackoff is how long a pool makes no new member after one
// failed (PoolStatus.RefillAfter).
const DefaultRefillBackoff = 5 * time.Minute

// DefaultTombstoneTTL is how long a claimed member's document stays: long
// enough for the claiming proxy's run to have relabelled the VM (its uid
// claims the VM until then), and the window claimsLastHour counts.
const DefaultTombstoneTTL = time.Hour

// Reconciler runs pool reconciles. It is safe for concurrent use.
type Reconciler struct {
	store Store
	clock clock.Clock
	log   *slog.Logger
	// running holds the pools with a run in this process, each with
	// whether another was asked for meanwhile (the package doc).
	mu      sync.Mutex
	running map[string]bool
	// TombstoneTTL is how long after its claim a claimed member's document
	// is deleted; zero takes DefaultTombstoneTTL.
	TombstoneTTL time.Duration
	// RefillBackoff is how long the pool makes no new member after one
	// failed; zero takes DefaultRefillBackoff.
	RefillBackoff time.Duration
}

// New returns a Reconciler.
func New(store Store, clk clock.Clock, log *slog.Logger) *Reconciler {
	return &Reconciler{store: store, clock: clk, log: log, TombstoneTTL: DefaultTombstoneTTL, running: map[string]bool{}}
}

// Reconcile runs one reconcile of the pool: the table Runs.
// It returns an error only when the store could not be read or written, so
// that the event is delivered again. While a run of the same pool runs in
// this process it returns at once, and that run runs once more when it
// ends: its next run sees what this one would have.
func (r *Reconciler) Reconcile(ctx context.Context, name string) error {
	if !r.begin(name) {
		return nil
	}
	for {
		err := r.reconcile(ctx, name)
		if !r.more(name, err == nil) {
			return err
		}
	}
}

// begin reports whether the caller runs the pool; if a run is under way,
// it asks that run for one more and reports false.
func (r *Reconciler) begin(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running = map[string]bool{}
	}
	if _, ok := r.running[name]; ok {
		r.running[name] = true
		return false
	}
	r.running[name] = false
	return true
}

// more reports whether the caller runs the pool once more: another run was
// asked for since the last began, and the last succeeded. Otherwise it
// ends the pool's runs in this process, under the same lock, so that no
// run asked for in between is lost. A failed run ends them: its event is
// delivered again, and that run sees what the folded ones would have.
func (r *Reconciler) more(name string, succeeded bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if succeeded && r.running[name] {
		r.running[name] = false
		return true
	}
	delete(r.running, name)
	return false
}

// reconcile is one run of the pool.
func (r *Reconciler) reconcile(ctx context.Context, name string) error {
	log := r.log.With(slog.String("document", proxy.PoolPath(name)))
	pool, err := r.store.GetPool(ctx, name)
	if errors.Is(err, proxy.ErrNotFound) {
		log.DebugContext(ctx, "pool gone; nothing to do")
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", proxy.PoolPath(name), err)
	}
	members, err := r.store.Members(ctx, name)
	if err != nil {
		return err
	}
	now := r.clock.Now()
	ttl := cmp.Or(r.TombstoneTTL, DefaultTombstoneTTL)
	var errs []error
	status := proxy.PoolStatus{}
	if now.Before(pool.Status.RefillAfter) {
		// Still backing off after a failed member: say why, though the
		// member may be gone by now.
		status.RefillAfter, status.Message = pool.Status.RefillAfter, pool.Status.Message
	}
	// The claims of the last hour whose member documents went, and those
	// of the claimed members whose claim is done (done): their documents
	// go once the status counts them.
	claims, namespaces := map[string]time.Time{}, map[string]string{}
	for member, t := range pool.Status.Claims {
		if now.Sub(t) < time.Hour {
			claims[member] = t
			if ns, ok := pool.Status.ClaimNamespaces[member]; ok {
				namespaces[member] = ns
			}
		}
	}
	byNamespace := map[string]int{}
	var done []*proxy.Proxy
	var live []*proxy.Proxy
	left := 0 // member documents that stay after this run
	for _, m := range members {
		switch {
		case m.ClaimedBy != nil:
			if now.Sub(m.ClaimedBy.Time) >= ttl || r.claimDone(ctx, m) {
				if now.Sub(m.ClaimedBy.Time) < time.Hour {
					claims[m.Name], namespaces[m.Name] = m.ClaimedBy.Time, m.ClaimedBy.Namespace
				}
				done = append(done, m)
				continue
			}
			if now.Sub(m.ClaimedBy.Time) < time.Hour {
				status.ClaimsLastHour++
				byNamespace[m.ClaimedBy.Namespace]++
			}
		case m.DeleteRequestTime != nil:
		case m.Status.Phase == proxy.PhaseFailed:
			status.Message = cmp.Or(status.Message, m.Status.Message)
			if status.RefillAfter.IsZero() {
				status.RefillAfter = now.Add(cmp.Or(r.RefillBackoff, DefaultRefillBackoff))
			}
			errs = append(errs, r.requestDeletion(ctx, log, m, now, "failed"))
		case pool.DeleteRequestTime != nil:
			errs = append(errs, r.requestDeletion(ctx, log, m, now, "pool deleted"))
		default:
			live = append(live, m)
		}
		left++
	}
	if pool.DeleteRequestTime != nil {
		// A deleted pool counts no claims: the claimed members whose claim
		// is done go now, and the pool once no member is left.
		left += r.deleteClaimed(ctx, log, done, &errs)
		done = nil
		if left == 0 {
			if err := r.store.DeletePool(ctx, name, pool.UpdateTime); err != nil && !errors.Is(err, proxy.ErrNotFound) && !errors.Is(err, proxy.ErrConflict) {
				return err
			}
			log.InfoContext(ctx, "pool deleted; no member left")
			return nil
		}
	} else if excess := len(live) - pool.Spec.Size; excess > 0 {
		// Booting ones first: a warm VM is what the pool is for. Every run
		// picks the same ones, so concurrent runs do not shrink twice.
		slices.SortFunc(live, func(a, b *proxy.Proxy) int {
			return cmp.Or(cmp.Compare(boolInt(rules.Warm(a)), boolInt(rules.Warm(b))), cmp.Compare(a.Name, b.Name))
		})
		for _, m := range live[:excess] {
			errs = append(errs, r.requestDeletion(ctx, log, m, now, "pool shrunk"))
		}
		live = live[excess:]
	} else if excess < 0 && now.Before(status.RefillAfter) {
		log.InfoContext(ctx, "a member failed; the pool refills later", slog.Time("refillAfter", status.RefillAfter), slog.String("why", status.Message))
	} else if excess < 0 {
		created, err := r.store.EnsureMembers(ctx, name, now)
		if err != nil {
			return err
		}
		if len(created) > 0 {
			log.InfoContext(ctx, "members created", slog.Int("created", len(created)), slog.Int("size", pool.Spec.Size))
		}
		live = append(live, created...)
	}
	for _, m := range live {
		if rules.Warm(m) {
			status.Warm++
			continue
		}
		status.Booting++
		// Why a member does not boot (a quota, a stockout) is why the
		// pool cannot fill.
		status.Message = cmp.Or(status.Message, m.Status.Message)
	}
	status.ClaimsLastHour += len(claims)
	if len(claims) > 0 {
		status.Claims = claims
	}
	for member := range claims {
		// A claim counted before the pool kept its namespace counts in the
		// total only, for the hour it has left.
		if ns, ok := namespaces[member]; ok {
			byNamespace[ns]++
		}
	}
	if len(namespaces) > 0 {
		status.ClaimNamespaces = namespaces
	}
	if len(byNamespace) > 0 {
		status.ClaimsLastHourByNamespace = byNamespace
	}
	if !status.Equal(pool.Status) {
		next := *pool
		next.Status = status
		if _, err := r.store.UpdatePoolStatus(ctx, &next); err != nil {
			if !errors.Is(err, proxy.ErrConflict) && !errors.Is(err, proxy.ErrNotFound) {
				errs = append(errs, err)
			}
			// A conflict is another write, whose event brings the next
			// run; the claimed members stay until a status counts them.
			return errors.Join(errs...)
		}
	}
	r.deleteClaimed(ctx, log, done, &errs)
	return errors.Join(errs...)
}

// deleteClaimed deletes the documents of claimed members whose claim is
// done (never their VMs: those are the claiming proxies'), and returns how
// many are left, their deletion refused.
func (r *Reconciler) deleteClaimed(ctx context.Context, log *slog.Logger, done []*proxy.Proxy, errs *[]error) int {
	left := 0
	for _, m := range done {
		err := r.store.Delete(ctx, m.Key(), m.UpdateTime)
		if err == nil || errors.Is(err, proxy.ErrNotFound) {
			log.InfoContext(ctx, "claimed member's document deleted", slog.String("member", m.Name), slog.String("claimedBy", claimer(m)))
			continue
		}
		left++
		if !errors.Is(err, proxy.ErrConflict) {
			*errs = append(*errs, err)
		}
	}
	return left
}

// claimDone reports whether the proxy that claimed member m no longer
// needs m's uid to keep the VM from the collector: it is gone, or it has
// moved on to another VM, or it has given the VM its configuration and
// uid (SentGeneration set: the Reconfigure that relabels succeeded). A
// deleted pool lets go of such a member's document at once, rather than at
// the end of its hour (which only counts claims, and a deleted pool counts
// none). A read that fails says no: the next run asks again.
func (r *Reconciler) claimDone(ctx context.Context, m *proxy.Proxy) bool {
	c := m.ClaimedBy
	p, err := r.store.Get(ctx, proxy.Key{Namespace: c.Namespace, Name: c.Name})
	if errors.Is(err, proxy.ErrNotFound) {
		return true
	}
	if err != nil {
		return false
	}
	return p.UID != c.UID || p.Status.ProviderID != m.Status.ProviderID || p.Reconciler.SentGeneration != 0
}

// requestDeletion asks for a member's deletion: its own reconcile deletes
// the VM, then the document.
func (r *Reconciler) requestDeletion(ctx context.Context, log *slog.Logger, m *proxy.Proxy, now time.Time, why string) error {
	_, err := r.store.RequestDeletion(ctx, m.Key(), now)
	if errors.Is(err, proxy.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "member deletion requested", slog.String("member", m.Name), slog.String("why", why))
	return nil
}

func claimer(m *proxy.Proxy) string {
	return proxy.Key{Namespace: m.ClaimedBy.Namespace, Name: m.ClaimedBy.Name}.Path()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
