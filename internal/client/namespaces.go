package client

import (
	"context"
	"net/http"
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
)

// Namespace is a namespace as the API shows it.
type Namespace struct {
	Name string `json:"name"`
	// Members are the callers with a role in it ("viewer", "editor",
	// "owner"), by email.
	Members map[string]string `json:"members"`
	// Quota is how many proxies it may hold; ProxyCount how many it holds.
	Quota      int   `json:"quota"`
	ProxyCount int64 `json:"proxyCount"`
	// Budget is its monthly budget, if a platform admin gave it one;
	// Month what it costs this month (a get of one namespace, where the
	// deployment costs proxies).
	Budget *Budget       `json:"budget,omitempty"`
	Month  *pricing.Cost `json:"month,omitempty"`
	// TrafficStopped is set while its proxies carry no new connection:
	// its budget stops traffic ("stopTraffic") and its month reached it.
	TrafficStopped *TrafficStopped `json:"trafficStopped,omitempty"`
	CreateTime     *time.Time      `json:"createTime,omitempty"`
	UpdateTime     time.Time       `json:"updateTime"`
}

// TrafficStopped is the month a namespace's traffic is stopped in
// ("2006-01", UTC; the stop ends with it) and why.
type TrafficStopped struct {
	Month  string `json:"month"`
	Reason string `json:"reason"`
}

// Budget is a namespace's monthly budget: an amount, the deployment's
// currency, and what happens at it ("refuseNew", the default, or
// "stopTraffic").
type Budget struct {
	Monthly  string `json:"monthly"`
	Currency string `json:"currency"`
	AtBudget string `json:"atBudget,omitempty"`
}

// NamespacePage is one page of the namespaces the caller may see.
type NamespacePage struct {
	Namespaces    []Namespace `json:"namespaces"`
	NextPageToken string      `json:"nextPageToken,omitempty"`
}

func namespacePath(ns string) string { return "/v1/namespaces/" + escape(ns) }

// ListNamespaces reads one page of the namespaces the caller is a member
// of (every namespace, for a platform admin).
func (c *Client) ListNamespaces(ctx context.Context, pageSize int, pageToken string) (*NamespacePage, error) {
	page := &NamespacePage{}
	if _, err := c.call(ctx, http.MethodGet, "/v1/namespaces", pageQuery(pageSize, pageToken), nil, page); err != nil {
		return nil, err
	}
	return page, nil
}

// AllNamespaces reads every page of the namespaces the caller may see.
func (c *Client) AllNamespaces(ctx context.Context) ([]Namespace, error) {
	var all []Namespace
	token := ""
	for {
		page, err := c.ListNamespaces(ctx, 0, token)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Namespaces...)
		if token = page.NextPageToken; token == "" {
			return all, nil
		}
	}
}

// GetNamespace reads a namespace.
func (c *Client) GetNamespace(ctx context.Context, ns string) (*Namespace, error) {
	n := &Namespace{}
	if _, err := c.call(ctx, http.MethodGet, namespacePath(ns), nil, nil, n); err != nil {
		return nil, err
	}
	return n, nil
}

// CreateNamespace makes a namespace (a platform admin's call) with its
// first members and, when quota is not nil, its own quota. created is
// false when it existed already with these settings.
func (c *Client) CreateNamespace(ctx context.Context, ns string, members map[string]string, quota *int) (n *Namespace, created bool, err error) {
	in := struct {
		Members map[string]string `json:"members,omitempty"`
		Quota   *int              `json:"quota,omitempty"`
	}{members, quota}
	n = &Namespace{}
	code, err := c.call(ctx, http.MethodPut, namespacePath(ns), nil, in, n)
	if err != nil {
		return nil, false, err
	}
	return n, code == http.StatusCreated, nil
}

// UpdateNamespace changes a namespace as a JSON merge patch: each member
// given a role gets it, each given nil leaves, the others keep theirs; a
// non-nil quota (a platform admin's change) replaces the quota.
func (c *Client) UpdateNamespace(ctx context.Context, ns string, members map[string]*string, quota *int) (*Namespace, error) {
	in := struct {
		Members map[string]*string `json:"members,omitempty"`
		Quota   *int               `json:"quota,omitempty"`
	}{members, quota}
	n := &Namespace{}
	if _, err := c.call(ctx, http.MethodPatch, namespacePath(ns), nil, in, n); err != nil {
		return nil, err
	}
	return n, nil
}

// DeleteNamespace deletes an empty namespace.
func (c *Client) DeleteNamespace(ctx context.Context, ns string) error {
	_, err := c.call(ctx, http.MethodDelete, namespacePath(ns), nil, nil, nil)
	return err
}
