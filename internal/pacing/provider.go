package pacing

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
)

// Provider decorates p so that every method first reserves its cost
// (calls) in pacer's budget: a near slot is slept through and the call
// goes; a far one fails the call with provider.KindRateLimited, its
// RetryAfter when the turn is near, and a *Queued error ("queued: N
// calls ahead"), before any request reaches the cloud. A method that
// costs nothing goes at once.
//
// A backend that is a provider.Reconfigurer or a provider.QuotaReader is
// decorated by one too, so that those calls are paced like the rest; one
// that is not stays not one (provider.AsReconfigurer looks beneath the
// decorator and must find none). The console is read through the
// decorator whatever the backend (provider.ReadConsole says ErrNoConsole
// for one without). The rest of the optional interfaces (Scoped, Polled,
// TrafficStopper, which asks the VM and not the cloud) are found beneath
// through Unwrap.
func Provider(p provider.Provider, pacer *Pacer, calls Calls, log *slog.Logger) provider.Provider {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &paced{inner: p, pacer: pacer, calls: calls, log: log}
	r, reconfigures := provider.AsReconfigurer(p)
	q, quotas := provider.AsQuotaReader(p)
	switch {
	case reconfigures && quotas:
		return &pacedBoth{pacedReconfigurer{d, r}, q}
	case reconfigures:
		return &pacedReconfigurer{d, r}
	case quotas:
		return &pacedQuotas{d, q}
	}
	return d
}

// paced is the decorator Provider returns.
type paced struct {
	inner provider.Provider
	pacer *Pacer
	calls Calls
	log   *slog.Logger
}

var (
	_ provider.Provider      = (*paced)(nil)
	_ provider.ConsoleReader = (*paced)(nil)
	_ provider.Reconfigurer  = (*pacedReconfigurer)(nil)
	_ provider.QuotaReader   = (*pacedQuotas)(nil)
	_ provider.Reconfigurer  = (*pacedBoth)(nil)
	_ provider.QuotaReader   = (*pacedBoth)(nil)
)

// Unwrap returns the decorated provider.
func (d *paced) Unwrap() provider.Provider { return d.inner }

// Pacer is the decorator's budget.
func (d *paced) Pacer() *Pacer { return d.pacer }

func (d *paced) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	if err := d.pace(ctx, "create", req.Name, d.calls.Create); err != nil {
		return "", err
	}
	return d.inner.Create(ctx, req)
}

func (d *paced) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	if err := d.pace(ctx, "get", providerID, d.calls.Get); err != nil {
		return nil, err
	}
	return d.inner.Get(ctx, providerID)
}

func (d *paced) Delete(ctx context.Context, providerID string) error {
	if err := d.pace(ctx, "delete", providerID, d.calls.Delete); err != nil {
		return err
	}
	return d.inner.Delete(ctx, providerID)
}

func (d *paced) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	if err := d.pace(ctx, "list", "", d.calls.ListByTag); err != nil {
		return nil, err
	}
	return d.inner.ListByTag(ctx)
}

// Console reads the console of a backend that has one, paced.
func (d *paced) Console(ctx context.Context, providerID string) (string, error) {
	if _, ok := beneathConsole(d.inner); !ok {
		return "", provider.ErrNoConsole
	}
	if err := d.pace(ctx, "console", providerID, d.calls.Console); err != nil {
		return "", err
	}
	return provider.ReadConsole(ctx, d.inner, providerID)
}

// beneathConsole reports whether p or a provider beneath it reads
// consoles.
func beneathConsole(p provider.Provider) (provider.ConsoleReader, bool) {
	for {
		if c, ok := p.(provider.ConsoleReader); ok {
			return c, true
		}
		u, ok := p.(interface{ Unwrap() provider.Provider })
		if !ok {
			return nil, false
		}
		p = u.Unwrap()
	}
}

// pacedReconfigurer is paced over a backend that is a Reconfigurer.
type pacedReconfigurer struct {
	*paced
	reconfigurer provider.Reconfigurer
}

func (d *pacedReconfigurer) Reconfigure(ctx context.Context, providerID string, req provider.ReconfigureRequest) error {
	if err := d.pace(ctx, "reconfigure", providerID, d.calls.Reconfigure); err != nil {
		return err
	}
	return d.reconfigurer.Reconfigure(ctx, providerID, req)
}

// pacedQuotas is paced over a backend that is a QuotaReader.
type pacedQuotas struct {
	*paced
	quotas provider.QuotaReader
}

func (d *pacedQuotas) Quotas(ctx context.Context, region string) (provider.Quotas, error) {
	if err := d.pace(ctx, "quotas", region, d.calls.Quotas); err != nil {
		return provider.Quotas{}, err
	}
	return d.quotas.Quotas(ctx, region)
}

// pacedBoth is paced over a backend that is both.
type pacedBoth struct {
	pacedReconfigurer
	quotas provider.QuotaReader
}

func (d *pacedBoth) Quotas(ctx context.Context, region string) (provider.Quotas, error) {
	return (&pacedQuotas{d.paced, d.quotas}).Quotas(ctx, region)
}

// pace reserves cost calls for operation op on target and waits for the
// slot, or says why the call may not go: queued (KindRateLimited), the
// budget's store unavailable (KindTransient: the call is tried again as
// any provider call that failed for a while), or ctx done while waiting.
// A slot lost before the call could go (Pacer.Lost: the store or the
// scheduler was slower than the window's guard) is booked again, a few
// times at most.
func (d *paced) pace(ctx context.Context, op, target string, cost int) error {
	if cost <= 0 {
		return nil
	}
	for range maxLost {
		slot, err := d.pacer.Reserve(ctx, cost)
		if err != nil {
			return provider.NewError(provider.KindTransient, op, target, err)
		}
		if !slot.Reserved {
			q := &Queued{Key: d.pacer.key, Ahead: slot.Ahead}
			d.log.InfoContext(ctx, "provider call queued by the account's budget", slog.String("budget", d.pacer.key.String()), slog.String("op", op),
				slog.String("target", target), slog.Int("ahead", slot.Ahead), slog.Duration("retryAfter", slot.RetryAfter))
			e := provider.NewError(provider.KindRateLimited, op, target, q)
			e.RetryAfter = slot.RetryAfter
			return e
		}
		if wait := slot.At.Sub(d.pacer.clock.Now()); wait > 0 {
			d.log.DebugContext(ctx, "provider call waits for its slot", slog.String("budget", d.pacer.key.String()), slog.String("op", op),
				slog.Duration("wait", wait.Round(time.Millisecond)), slog.Int("ahead", slot.Ahead))
			if err := d.pacer.clock.Sleep(ctx, wait); err != nil {
				// The slot stays booked and unused: the budget is safe, the
				// caller gave up.
				return provider.NewError(provider.KindTransient, op, target, err)
			}
		}
		if !d.pacer.Lost(slot, d.pacer.clock.Now()) {
			return nil
		}
		d.log.InfoContext(ctx, "provider call's slot passed before it could go; booking again", slog.String("budget", d.pacer.key.String()),
			slog.String("op", op), slog.Int64("window", slot.Window))
	}
	return provider.NewError(provider.KindTransient, op, target,
		fmt.Errorf("pacing %s: %d slots in a row passed before the call could go: the budget's store answers slower than a window", d.pacer.key, maxLost))
}

// maxLost is how many slots in a row a call may lose (Pacer.Lost) before
// it fails as transient.
const maxLost = 3
