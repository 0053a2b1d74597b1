package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

func proxiesPath(ns string) string { return "/v1/namespaces/" + escape(ns) + "/proxies" }

func proxyPath(ns, name string) string { return proxiesPath(ns) + "/" + escape(name) }

// CreateProxy asks for a proxy. created is false when the same spec had
// already been asked for under that name: the API's 200, the proxy as it
// is.
func (c *Client) CreateProxy(ctx context.Context, ns, name string, spec proxy.Spec) (p *proxy.Proxy, created bool, err error) {
	in := struct {
		Name string     `json:"name"`
		Spec proxy.Spec `json:"spec"`
	}{name, spec}
	p = &proxy.Proxy{}
	code, err := c.call(ctx, http.MethodPost, proxiesPath(ns), nil, in, p)
	if err != nil {
		return nil, false, err
	}
	return p, code == http.StatusCreated, nil
}

// GetProxy reads a proxy; a proxy that does not exist is an error for
// which IsNotFound is true.
func (c *Client) GetProxy(ctx context.Context, ns, name string) (*proxy.Proxy, error) {
	p := &proxy.Proxy{}
	if _, err := c.call(ctx, http.MethodGet, proxyPath(ns, name), nil, nil, p); err != nil {
		return nil, err
	}
	return p, nil
}

// ProxyPage is one page of a namespace's proxies.
type ProxyPage struct {
	Proxies       []proxy.Proxy `json:"proxies"`
	NextPageToken string        `json:"nextPageToken,omitempty"`
}

// ListProxies reads one page of a namespace's proxies, ordered by name;
// pageSize 0 is the API's default.
func (c *Client) ListProxies(ctx context.Context, ns string, pageSize int, pageToken string) (*ProxyPage, error) {
	page := &ProxyPage{}
	if _, err := c.call(ctx, http.MethodGet, proxiesPath(ns), pageQuery(pageSize, pageToken), nil, page); err != nil {
		return nil, err
	}
	return page, nil
}

// AllProxies reads every page of a namespace's proxies.
func (c *Client) AllProxies(ctx context.Context, ns string) ([]proxy.Proxy, error) {
	var all []proxy.Proxy
	token := ""
	for {
		page, err := c.ListProxies(ctx, ns, 0, token)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Proxies...)
		if token = page.NextPageToken; token == "" {
			return all, nil
		}
	}
}

func pageQuery(size int, token string) url.Values {
	q := url.Values{}
	if size > 0 {
		q.Set("pageSize", strconv.Itoa(size))
	}
	if token != "" {
		q.Set("pageToken", token)
	}
	return q
}

// DeleteProxy asks for a proxy's deletion, and returns it as it is now:
// Deleting, until its VM is gone and with it the proxy.
func (c *Client) DeleteProxy(ctx context.Context, ns, name string) (*proxy.Proxy, error) {
	p := &proxy.Proxy{}
	if _, err := c.call(ctx, http.MethodDelete, proxyPath(ns, name), nil, nil, p); err != nil {
		return nil, err
	}
	return p, nil
}

// RotateProxy asks for a new VM for the proxy, and with it a new IP
// unless the proxy's address is Static; status.rotations counts the
// rotation once it happened.
func (c *Client) RotateProxy(ctx context.Context, ns, name string) (*proxy.Proxy, error) {
	p := &proxy.Proxy{}
	if _, err := c.call(ctx, http.MethodPost, proxyPath(ns, name)+":rotate", nil, nil, p); err != nil {
		return nil, err
	}
	return p, nil
}

// Condition says whether a wait is over: p is the proxy as just read, nil
// once it is gone. A non-nil error ends the wait as a failure.
type Condition func(p *proxy.Proxy) (done bool, err error)

// FailedError is a wait ended by the proxy's Failed phase.
type FailedError struct{ Proxy *proxy.Proxy }

func (e *FailedError) Error() string {
	return fmt.Sprintf("proxy %s/%s is Failed: %s", e.Proxy.Namespace, e.Proxy.Name, Message(e.Proxy))
}

// Message is what the proxy's status says of it: the status message, or
// else the Ready condition's.
func Message(p *proxy.Proxy) string {
	if p.Status.Message != "" {
		return p.Status.Message
	}
	for _, c := range p.Status.Conditions {
		if c.Type == proxy.ConditionReady {
			return c.Message
		}
	}
	return ""
}

// ConnectPorts are the ports a CONNECT through p may reach, as a person
// reads them: the spec's, or the default named so.
func ConnectPorts(p *proxy.Proxy) string {
	ports, suffix := p.Spec.ConnectPorts, ""
	if len(ports) == 0 {
		ports, suffix = proxy.DefaultConnectPorts, " (the default)"
	}
	parts := make([]string, len(ports))
	for i, n := range ports {
		parts[i] = strconv.Itoa(int(n))
	}
	return strings.Join(parts, ", ") + suffix
}

// Ready is over once the proxy is Ready, and fails once it is Failed.
func Ready(p *proxy.Proxy) (bool, error) {
	switch {
	case p == nil:
		return false, fmt.Errorf("the proxy was deleted while waiting for it to be Ready")
	case p.Status.Phase == proxy.PhaseFailed:
		return false, &FailedError{Proxy: p}
	}
	return p.Status.Phase == proxy.PhaseReady, nil
}

// Gone is over once the proxy no longer exists: its VM is gone.
func Gone(p *proxy.Proxy) (bool, error) { return p == nil, nil }

// Rotated is over once the proxy is Ready after more than n rotations,
// and fails once it is Failed.
func Rotated(n int64) Condition {
	return func(p *proxy.Proxy) (bool, error) {
		ready, err := Ready(p)
		return ready && p.Status.Rotations > n, err
	}
}

// Wait reads the proxy every interval until until says the wait is over,
// and returns it as last read (nil once gone). Each time the phase or the
// message changes, seen is called with the proxy (nil once gone), so a
// person watches the progress. The wait ends with ctx: give it a
// deadline.
func (c *Client) Wait(ctx context.Context, ns, name string, interval time.Duration, until Condition, seen func(*proxy.Proxy)) (*proxy.Proxy, error) {
	var last *proxy.Proxy
	first := true
	for {
		p, err := c.GetProxy(ctx, ns, name)
		switch {
		case IsNotFound(err):
			p = nil
		case err != nil:
			return last, err
		}
		if seen != nil && (first || changed(last, p)) {
			seen(p)
		}
		first, last = false, p
		done, err := until(p)
		if done || err != nil {
			return p, err
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("waiting for proxy %s/%s (phase %s): %w", ns, name, phase(last), ctx.Err())
		case <-time.After(interval):
		}
	}
}

func changed(a, b *proxy.Proxy) bool {
	if a == nil || b == nil {
		return a != b
	}
	return a.Status.Phase != b.Status.Phase || Message(a) != Message(b)
}

func phase(p *proxy.Proxy) string {
	if p == nil {
		return "gone"
	}
	return string(p.Status.Phase)
}
