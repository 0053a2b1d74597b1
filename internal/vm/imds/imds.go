// Package imds is the proxy VM's client of EC2's instance metadata
// service, in its version 2 only (IMDSv2): a session token first, by
// PUT /latest/api/token with the token's lifetime in
// X-aws-ec2-metadata-token-ttl-seconds, then each path by GET with the
// token in X-aws-ec2-metadata-token. The aws provider launches every
// instance with HttpTokens=required and a hop limit of 1, so a GET
// without a token is refused (401) and no container or forwarded hop
// on the VM reaches the service; this client never tries one.
//
// What the agent reads (Identity): the instance's id, its availability
// zone and its region, which it writes beside its readiness, so that the
// status the control plane reads through the proxy port names the
// instance that answers; and, where the configuration draws IPv6
// sources from a prefix it does not name (IPv6Prefix), the prefix EC2
// delegated to the primary interface, which is not around any address
// the VM has. It reads nothing else: the configuration comes from the
// user-data, which cloud-init has read already, and the VM holds no role
// (no instance profile), so there are no credentials to read.
package imds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// DefaultBase is the service's address on every EC2 instance.
const DefaultBase = vmconfig.EC2MetadataURL

// The headers of IMDSv2's session.
const (
	TTLHeader   = "X-aws-ec2-metadata-token-ttl-seconds"
	TokenHeader = "X-aws-ec2-metadata-token"
)

// DefaultTTL is the lifetime the client asks for its token: the agent
// reads a few paths at boot, then needs none.
const DefaultTTL = 5 * time.Minute

// maxAnswer bounds an answer read: the paths read are short values.
const maxAnswer = 64 << 10

// Client reads the instance's metadata.
type Client struct {
	// Base is the service's root URL; empty is DefaultBase.
	Base string
	// HTTP sends the requests; nil is a client with a 5-second timeout
	// and no proxy (the service is never reached through one).
	HTTP *http.Client
	// TTL is the token's lifetime; zero is DefaultTTL. IMDS takes 1 s to
	// 6 h.
	TTL time.Duration
}

// Error is an answer of the service that is not 200.
type Error struct {
	Method, Path string
	Status       int
}

func (e *Error) Error() string {
	return fmt.Sprintf("imds: %s %s answered %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
}

// Identity is which instance the VM is, as the service says.
type Identity struct {
	// InstanceID is the instance's id (i-0123456789abcdef0).
	InstanceID string
	// Zone is its availability zone (eu-west-1b), Region its region.
	Zone, Region string
}

// The paths Identity reads, under /latest/meta-data/.
const (
	PathInstanceID = "instance-id"
	PathZone       = "placement/availability-zone"
	PathRegion     = "placement/region"
)

// Identity gets a token and reads the instance's id, zone and region
// with it.
func (c *Client) Identity(ctx context.Context) (Identity, error) {
	token, err := c.Token(ctx)
	if err != nil {
		return Identity{}, err
	}
	var id Identity
	for path, into := range map[string]*string{PathInstanceID: &id.InstanceID, PathZone: &id.Zone, PathRegion: &id.Region} {
		v, err := c.MetaData(ctx, token, path)
		if err != nil {
			return Identity{}, err
		}
		*into = strings.TrimSpace(v)
	}
	if id.InstanceID == "" {
		return Identity{}, errors.New("imds: the instance id is empty")
	}
	return id, nil
}

// Token asks for a session token of the client's TTL.
func (c *Client) Token(ctx context.Context) (string, error) {
	ttl := c.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	token, err := c.do(ctx, http.MethodPut, "/latest/api/token", map[string]string{TTLHeader: strconv.Itoa(int(ttl / time.Second))})
	if err != nil {
		return "", err
	}
	if token = strings.TrimSpace(token); token == "" {
		return "", errors.New("imds: the service answered an empty token")
	}
	return token, nil
}

// MetaData reads /latest/meta-data/PATH with token.
func (c *Client) MetaData(ctx context.Context, token, path string) (string, error) {
	return c.do(ctx, http.MethodGet, "/latest/meta-data/"+strings.TrimPrefix(path, "/"), map[string]string{TokenHeader: token})
}

func (c *Client) do(ctx context.Context, method, path string, header map[string]string) (string, error) {
	base := strings.TrimSuffix(c.Base, "/")
	if base == "" {
		base = DefaultBase
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		return "", fmt.Errorf("imds: %w", err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("imds: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return "", fmt.Errorf("imds: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", &Error{Method: method, Path: path, Status: resp.StatusCode}
	}
	return string(body), nil
}
