package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// DefaultMetadataURL is the metadata server's API root on Compute Engine.
const DefaultMetadataURL = "http://169.254.169.254/computeMetadata/v1"

// Metadata is a client of the metadata server: instance attributes, the
// wait for a change, guest attributes and the VM's token.
type Metadata struct {
	// Base is the API root, DefaultMetadataURL on a VM.
	Base   string
	Client *http.Client
}

// errNotFound is a 404: an attribute that is not set.
var errNotFound = fmt.Errorf("agent: not set")

func (m *Metadata) do(ctx context.Context, method, path string, query url.Values, body string) (string, http.Header, error) {
	u := strings.TrimSuffix(m.Base, "/") + "/" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(body))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Metadata-Flavor", "Google")
	c := m.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", nil, fmt.Errorf("agent: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", nil, fmt.Errorf("agent: %s %s: %w", method, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return "", resp.Header, errNotFound
	case resp.StatusCode/100 != 2:
		return "", resp.Header, fmt.Errorf("agent: %s %s: %s", method, path, resp.Status)
	}
	return string(b), resp.Header, nil
}

// Attr returns an instance attribute, "" when it is not set.
func (m *Metadata) Attr(ctx context.Context, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, _, err := m.do(ctx, http.MethodGet, "instance/attributes/"+key, nil, "")
	if err == errNotFound {
		return "", nil
	}
	return v, err
}

// Watch returns the attribute key and its ETag. With etag "" it answers at
// once; otherwise it waits, as the metadata server does, until the value's
// ETag is no longer etag or timeout passes, and then returns the value as
// it stands (the same ETag after a timeout). An attribute that is not set
// is an error: the agent waits and asks again.
func (m *Metadata) Watch(ctx context.Context, key, etag string, timeout time.Duration) (value, newETag string, err error) {
	q := url.Values{}
	if etag != "" {
		q.Set("wait_for_change", "true")
		q.Set("last_etag", etag)
		q.Set("timeout_sec", strconv.Itoa(int(timeout.Seconds())))
	}
	// The server holds the request up to timeout_sec: the client waits a
	// little longer.
	ctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	defer cancel()
	v, h, err := m.do(ctx, http.MethodGet, "instance/attributes/"+key, q, "")
	if err != nil {
		return "", "", err
	}
	return v, h.Get("ETag"), nil
}

// PutGuest writes the guest attribute egress/KEY.
func (m *Metadata) PutGuest(ctx context.Context, key, value string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, _, err := m.do(ctx, http.MethodPut, "instance/guest-attributes/"+vmconfig.GuestNamespace+"/"+key, nil, value)
	return err
}

// DeleteGuest removes the guest attribute egress/KEY.
func (m *Metadata) DeleteGuest(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, _, err := m.do(ctx, http.MethodDelete, "instance/guest-attributes/"+vmconfig.GuestNamespace+"/"+key, nil, "")
	if err == errNotFound {
		return nil
	}
	return err
}

// Identity returns the VM's identity token for audience, in the full
// format whose claims name the instance: what its call-home carries, so
// the control plane knows which VM sent it (Google signs it; the VM cannot
// make one for another).
func (m *Metadata) Identity(ctx context.Context, audience string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, _, err := m.do(ctx, http.MethodGet, "instance/service-accounts/default/identity", url.Values{"audience": {audience}, "format": {"full"}}, "")
	if err != nil {
		return "", err
	}
	if v = strings.TrimSpace(v); strings.Count(v, ".") != 2 {
		return "", fmt.Errorf("agent: the metadata server's identity answer is not a JWT")
	}
	return v, nil
}

// Token returns an access token of the VM's own service account.
func (m *Metadata) Token(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, _, err := m.do(ctx, http.MethodGet, "instance/service-accounts/default/token", nil, "")
	if err != nil {
		return "", err
	}
	var t struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(v), &t); err != nil || t.AccessToken == "" {
		return "", fmt.Errorf("agent: the metadata server's token answer holds no access_token")
	}
	return t.AccessToken, nil
}
