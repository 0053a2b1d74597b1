package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
)

// The accounts schedule's cloud (accounts.go): beneath each account's
// pacer, a meter that counts the calls of each window as a cloud does,
// refuses past the limit and of its own accord now and then, and keeps
// the account's regional quota of instances.

// mockCalls is what each method costs in the meter's calls: one request
// each, as the mock's cloud would count them.
var mockCalls = pacing.Calls{Create: 1, Get: 1, Delete: 1, ListByTag: 1, Reconfigure: 1, Console: 1, Quotas: 1}

// meter is an account's cloud beneath its pacer: the account's mock,
// with the cloud's count of calls per window, its refusal past the
// limit, and its regional quota of instances.
type meter struct {
	w      *accountsWorld
	id     string
	mock   *mock.Provider
	limit  int
	window time.Duration
	// quota is the regional limit of instances; live the account's VMs,
	// by providerID, as the cloud counts them.
	quota int
	live  map[string]string
	// cur is the window now counted, calls its calls so far.
	cur   int64
	calls int
	over  bool
	full  bool
}

var (
	_ provider.Reconfigurer = (*meter)(nil)
	_ provider.QuotaReader  = (*meter)(nil)
)

// call counts one call of the account and answers as its cloud does:
// past the window's limit, or now and then of its own accord, refused
// until the window resets.
func (m *meter) call(op, target string) error {
	now := m.w.clock.Now()
	if w := now.UnixNano() / int64(m.window); w != m.cur {
		m.cur, m.calls, m.over = w, 0, false
	}
	m.calls++
	m.w.res.CloudCalls++
	m.w.res.Busiest = max(m.w.res.Busiest, m.calls)
	reset := time.Unix(0, (m.cur+1)*int64(m.window)).Sub(now)
	if m.calls > m.limit {
		m.w.res.RateLimited++
		if !m.over {
			m.over = true
			m.w.violation("%s: its cloud saw more than %d calls in the window from %s: past the account's limit", placementName(m.id),
				m.limit, time.Unix(0, m.cur*int64(m.window)).UTC().Format(time.TimeOnly))
		}
		e := provider.NewError(provider.KindRateLimited, op, target, errors.New("rate limit exceeded"))
		e.RetryAfter = reset
		return e
	}
	if m.w.rng.Float64() < cloudFaultRate {
		m.w.res.CloudFaults++
		e := provider.NewError(provider.KindRateLimited, op, target, errors.New("rate limit exceeded (the cloud's own)"))
		e.RetryAfter = reset
		return e
	}
	return nil
}

func (m *meter) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	if err := m.call("create", req.Name); err != nil {
		return "", err
	}
	if len(m.live) >= m.quota {
		m.w.res.QuotaRefused++
		return "", provider.NewError(provider.KindQuota, "create", req.Name, fmt.Errorf("quota of %d instances in %s exceeded", m.quota, accountRegion))
	}
	id, err := m.mock.Create(ctx, req)
	if err == nil {
		m.live[id] = req.UID
		if len(m.live) >= m.quota && !m.full {
			m.full = true
			m.w.res.FullAccounts++
		}
	}
	return id, err
}

func (m *meter) Get(ctx context.Context, id string) (*provider.Instance, error) {
	if err := m.call("get", id); err != nil {
		return nil, err
	}
	return m.mock.Get(ctx, id)
}

func (m *meter) Delete(ctx context.Context, id string) error {
	if err := m.call("delete", id); err != nil {
		return err
	}
	err := m.mock.Delete(ctx, id)
	if err == nil || errors.Is(err, provider.ErrNotFound) {
		delete(m.live, id)
	}
	return err
}

func (m *meter) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	if err := m.call("list", ""); err != nil {
		return nil, err
	}
	return m.mock.ListByTag(ctx)
}

func (m *meter) Reconfigure(ctx context.Context, id string, req provider.ReconfigureRequest) error {
	if err := m.call("reconfigure", id); err != nil {
		return err
	}
	return m.mock.Reconfigure(ctx, id, req)
}

// Quotas is the account's regional quota of instances, as the cloud
// reports it.
func (m *meter) Quotas(_ context.Context, region string) (provider.Quotas, error) {
	if err := m.call("quotas", region); err != nil {
		return provider.Quotas{}, err
	}
	return provider.Quotas{Instances: provider.Quota{Limit: m.quota, Usage: len(m.live)}}, nil
}
