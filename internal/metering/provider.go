package metering

import (
	"context"

	"github.com/egress-proxies/egress/internal/provider"
)

// Provider decorates p so that every call counts, by method, in the tally of
// the context it is made with, and its errors in ProviderError. The
// composition root wraps every provider it builds, so every backend is
// metered the same way without knowing it.
//
// A backend that is a provider.Reconfigurer is decorated by one too, so
// that its Reconfigure counts like the rest; one that is not stays not one,
// and the reconciler gives it a new VM for a change, as it must.
func Provider(p provider.Provider) provider.Provider {
	m := &metered{inner: p}
	if r, ok := provider.AsReconfigurer(p); ok {
		return &meteredReconfigurer{metered: m, reconfigurer: r}
	}
	return m
}

// metered is the decorator Provider returns.
type metered struct{ inner provider.Provider }

// meteredReconfigurer is metered over a backend that is a Reconfigurer.
type meteredReconfigurer struct {
	*metered
	reconfigurer provider.Reconfigurer
}

func (m *meteredReconfigurer) Reconfigure(ctx context.Context, providerID string, req provider.ReconfigureRequest) error {
	err := m.reconfigurer.Reconfigure(ctx, providerID, req)
	count(ctx, ProviderReconfigure, err)
	return err
}

var _ provider.Provider = (*metered)(nil)

// Unwrap returns the decorated provider, for the local stack's view of the
// mock's instances.
func (m *metered) Unwrap() provider.Provider { return m.inner }

func (m *metered) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	id, err := m.inner.Create(ctx, req)
	count(ctx, ProviderCreate, err)
	return id, err
}

func (m *metered) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	in, err := m.inner.Get(ctx, providerID)
	count(ctx, ProviderGet, err)
	return in, err
}

func (m *metered) Delete(ctx context.Context, providerID string) error {
	err := m.inner.Delete(ctx, providerID)
	count(ctx, ProviderDelete, err)
	return err
}

func (m *metered) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	list, err := m.inner.ListByTag(ctx)
	count(ctx, ProviderListByTag, err)
	return list, err
}

func count(ctx context.Context, c Counter, err error) {
	Add(ctx, c, 1)
	if err != nil {
		Add(ctx, ProviderError, 1)
	}
}
