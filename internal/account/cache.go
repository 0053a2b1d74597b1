package account

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
)

// Source is what the accounts are read from: the store (*store.Store,
// *storefake.Store).
type Source interface {
	ListAccounts(ctx context.Context) ([]Account, error)
	CountPlaced(ctx context.Context, typ, id, region string) (int, error)
}

// DefaultCacheTTL is how long a Cache keeps the list of accounts: a new
// or drained account is seen by placement within it.
const DefaultCacheTTL = time.Minute

// Cache is a Source that reads the list of accounts at most once a TTL
// (placement reads it for every new proxy, and a deployment's accounts
// change by an admin's hand, rarely) and counts without a cache (a count
// is what a cap is held against). A failed read is not kept. It is safe
// for concurrent use.
type Cache struct {
	src   Source
	clock clock.Clock
	ttl   time.Duration

	mu   sync.Mutex
	list []Account
	at   time.Time
}

// NewCache returns a cache of src; ttl 0 is DefaultCacheTTL.
func NewCache(src Source, clk clock.Clock, ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	return &Cache{src: src, clock: clk, ttl: ttl}
}

// ListAccounts is the source's list as last read, read again once it is
// a TTL old. The caller may not change what it returns.
func (c *Cache) ListAccounts(ctx context.Context) ([]Account, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if c.list != nil && now.Sub(c.at) < c.ttl {
		return c.list, nil
	}
	list, err := c.src.ListAccounts(ctx)
	if err != nil {
		return nil, err
	}
	c.list, c.at = slices.Clip(list), now
	if c.list == nil {
		c.list = []Account{}
	}
	return c.list, nil
}

// CountPlaced is the source's, uncached.
func (c *Cache) CountPlaced(ctx context.Context, typ, id, region string) (int, error) {
	return c.src.CountPlaced(ctx, typ, id, region)
}
