// Package azureimds is the proxy VM's client of Azure's instance metadata
// service (IMDS), at http://169.254.169.254/metadata on every Azure VM,
// as Microsoft documents it: each request a GET with the header
// "Metadata: true" (IMDS answers 400 without it) and an api-version
// query parameter, never through a proxy (IMDS refuses a request that
// carries X-Forwarded-For) and never with a token: the service answers
// any process of the VM, and only the VM.
//
// What the agent reads: which VM it is (Identity, from
// /metadata/instance: compute.vmId, name, location and zone), which it
// writes beside its readiness, as it does on EC2 (package imds); and the
// VM's userData (UserData, /metadata/instance/compute/userData), which
// the Azure provider changes without a reboot, and which the agent
// follows for a new configuration (agent.UserDataWatch).
package azureimds

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultBase is the service's root on every Azure VM.
const DefaultBase = "http://169.254.169.254/metadata"

// The api-versions this client asks: the instance document's (2021-02-01
// has every field Identity reads), and userData's, which needs
// 2021-01-01 or later (vmconfig.AzureUserDataURL names the same).
const (
	InstanceAPIVersion = "2021-02-01"
	UserDataAPIVersion = "2021-01-01"
)

// Header is the header every request carries, MetadataTrue its value.
const (
	Header       = "Metadata"
	MetadataTrue = "true"
)

// maxAnswer bounds an answer read: Azure takes up to 64 KiB of userData,
// which IMDS serves as base64 (about 87 KiB), and the instance document
// is a few KiB.
const maxAnswer = 256 << 10

// Client reads the VM's metadata.
type Client struct {
	// Base is the service's root; empty is DefaultBase.
	Base string
	// HTTP sends the requests; nil is a client with a 5-second timeout
	// and no proxy (the service is never reached through one).
	HTTP *http.Client
}

// Error is an answer of the service that is not 200.
type Error struct {
	Path   string
	Status int
	// Message is the service's own reason ({"error": "..."}), if any.
	Message string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("azureimds: GET %s answered %d %s", e.Path, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Identity is which VM this is, as the service says.
type Identity struct {
	// VMID is compute.vmId, the VM's unique id (a GUID), which Azure
	// Resource Manager returns as the VM's properties.vmId: the instance
	// id the status names.
	VMID string
	// Name is compute.name, the VM's name in its resource group.
	Name string
	// Location is compute.location (westeurope), Zone compute.zone ("1",
	// "2", "3", or "" for a VM in no availability zone).
	Location, Zone string
}

// PlacementZone is where the VM runs, as the status says it: the
// location, with the availability zone after a dash when it has one
// (westeurope-2).
func (id Identity) PlacementZone() string {
	if id.Zone == "" {
		return id.Location
	}
	return id.Location + "-" + id.Zone
}

// Identity reads /metadata/instance/compute.
func (c *Client) Identity(ctx context.Context) (Identity, error) {
	body, err := c.get(ctx, "/instance/compute?api-version="+InstanceAPIVersion)
	if err != nil {
		return Identity{}, err
	}
	var compute struct {
		VMID     string `json:"vmId"`
		Name     string `json:"name"`
		Location string `json:"location"`
		Zone     string `json:"zone"`
	}
	if err := json.Unmarshal(body, &compute); err != nil {
		return Identity{}, fmt.Errorf("azureimds: the instance's compute document: %w", err)
	}
	if compute.VMID == "" {
		return Identity{}, errors.New("azureimds: the instance's compute.vmId is empty")
	}
	return Identity{VMID: compute.VMID, Name: compute.Name, Location: compute.Location, Zone: compute.Zone}, nil
}

// UserData reads the VM's userData, as set on the VM, decoded from the
// base64 IMDS serves it in: "" when the VM has none.
func (c *Client) UserData(ctx context.Context) (string, error) {
	body, err := c.get(ctx, "/instance/compute/userData?api-version="+UserDataAPIVersion+"&format=text")
	if err != nil {
		return "", err
	}
	return DecodeUserData(body)
}

// DecodeUserData decodes an answer of compute/userData: base64 (standard
// alphabet, padded, white space ignored, as Azure's own consumers read
// it).
func DecodeUserData(answer []byte) (string, error) {
	text := strings.Join(strings.Fields(string(answer)), "")
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return "", fmt.Errorf("azureimds: the userData is not base64: %w", err)
	}
	return string(b), nil
}

// GetURL GETs url, a URL of the service (the setting egress-watch-userdata
// names one: vmconfig.AzureUserDataURL), as the service wants it asked,
// and returns its body.
func (c *Client) GetURL(ctx context.Context, url string) ([]byte, error) {
	return c.do(ctx, url, url)
}

func (c *Client) get(ctx context.Context, path string) ([]byte, error) {
	base := strings.TrimSuffix(c.Base, "/")
	if base == "" {
		base = DefaultBase
	}
	return c.do(ctx, base+path, path)
}

func (c *Client) do(ctx context.Context, url, what string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("azureimds: %w", err)
	}
	req.Header.Set(Header, MetadataTrue)
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("azureimds: GET %s: %w", what, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("azureimds: GET %s: %w", what, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return nil, &Error{Path: what, Status: resp.StatusCode, Message: e.Error}
	}
	return body, nil
}
