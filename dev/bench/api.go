package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/proxy"
)

// api is the benchmark's caller of the stack: the API's own client, and
// the local stack's view of the mock's VMs.
type api struct {
	*client.Client
	base string
	http *http.Client
}

func newAPI(base string, concurrency int) (*api, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = concurrency
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	c, err := client.New(base, hc)
	if err != nil {
		return nil, err
	}
	return &api{Client: c, base: base, http: hc}, nil
}

// spec is every benchmark proxy's.
var spec = proxy.Spec{
	Placement:           proxy.Placement{Region: "us-central1", Zone: "us-central1-a"},
	AllowedSourceRanges: []string{"203.0.113.0/24"},
}

// create asks for a new proxy and returns its uid.
func (a *api) create(ctx context.Context, k proxy.Key) (string, error) {
	p, created, err := a.CreateProxy(ctx, k.Namespace, k.Name, spec)
	if err != nil {
		return "", err
	}
	if !created {
		return "", fmt.Errorf("create %s: it existed already", k)
	}
	return p.UID, nil
}

func (a *api) get(ctx context.Context, k proxy.Key) error {
	_, err := a.GetProxy(ctx, k.Namespace, k.Name)
	return err
}

func (a *api) delete(ctx context.Context, k proxy.Key) error {
	_, err := a.DeleteProxy(ctx, k.Namespace, k.Name)
	return err
}

// freeMemory asks the local stack to collect its garbage and return its
// free memory to the system (POST /debug/memory).
func (a *api) freeMemory(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/debug/memory", nil)
	if err != nil {
		return err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /debug/memory: %s", resp.Status)
	}
	return nil
}

// instances returns the creation time of each of the mock provider's
// instances, by uid, from the local stack's /debug/instances.
func (a *api) instances(ctx context.Context) (map[string]time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/debug/instances", nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /debug/instances: %s", resp.Status)
	}
	var res struct {
		Instances []struct {
			UID       string
			CreatedAt time.Time
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return nil, fmt.Errorf("GET /debug/instances: %w", err)
	}
	out := make(map[string]time.Time, len(res.Instances))
	for _, in := range res.Instances {
		out[in.UID] = in.CreatedAt
	}
	return out, nil
}
