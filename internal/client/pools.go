package client

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// PoolPage is one page of the warm pools.
type PoolPage struct {
	Pools         []proxy.Pool `json:"pools"`
	NextPageToken string       `json:"nextPageToken,omitempty"`
}

func poolPath(name string) string { return "/v1/pools/" + escape(name) }

// PutPool makes the warm pool, or changes its size (a platform admin's
// call); created is false when it existed.
func (c *Client) PutPool(ctx context.Context, name string, spec proxy.PoolSpec) (p *proxy.Pool, created bool, err error) {
	p = &proxy.Pool{}
	code, err := c.call(ctx, http.MethodPut, poolPath(name), nil, spec, p)
	if err != nil {
		return nil, false, err
	}
	return p, code == http.StatusCreated, nil
}

// GetPool reads a pool; one that does not exist is an error for which
// IsNotFound is true.
func (c *Client) GetPool(ctx context.Context, name string) (*proxy.Pool, error) {
	p := &proxy.Pool{}
	if _, err := c.call(ctx, http.MethodGet, poolPath(name), nil, nil, p); err != nil {
		return nil, err
	}
	return p, nil
}

// ListPools reads one page of the pools, ordered by name.
func (c *Client) ListPools(ctx context.Context, pageSize int, pageToken string) (*PoolPage, error) {
	page := &PoolPage{}
	if _, err := c.call(ctx, http.MethodGet, "/v1/pools", pageQuery(pageSize, pageToken), nil, page); err != nil {
		return nil, err
	}
	return page, nil
}

// AllPools reads every page of the pools.
func (c *Client) AllPools(ctx context.Context) ([]proxy.Pool, error) {
	var all []proxy.Pool
	for token := ""; ; {
		page, err := c.ListPools(ctx, 0, token)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Pools...)
		if token = page.NextPageToken; token == "" {
			return all, nil
		}
	}
}

// DeletePool asks for the pool's deletion and returns it as it now is:
// it goes once its unclaimed VMs are gone.
func (c *Client) DeletePool(ctx context.Context, name string) (*proxy.Pool, error) {
	p := &proxy.Pool{}
	if _, err := c.call(ctx, http.MethodDelete, poolPath(name), nil, nil, p); err != nil {
		return nil, err
	}
	return p, nil
}

// WaitPoolGone reads the pool every interval until it no longer exists.
// The wait ends with ctx: give it a deadline.
func (c *Client) WaitPoolGone(ctx context.Context, name string, interval time.Duration) error {
	for {
		p, err := c.GetPool(ctx, name)
		switch {
		case IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for pool %s to go (%d warm, %d booting): %w", name, p.Status.Warm, p.Status.Booting, ctx.Err())
		case <-time.After(interval):
		}
	}
}
