package digitalocean

import (
	"bytes"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/provider/providertest"
	"github.com/egress-proxies/egress/internal/provider/vmside/vmsidetest"
)

// testToken is the fake's token: one no real account has (DigitalOcean's
// begin dop_v1_ and hold 64 hex digits).
const testToken = "test-token-0123456789abcdef"

// testFirewall is the firewall of every test's provider.
var testFirewall = Firewall{ProxyPorts: []string{"3128"}, SourceRanges: []string{"203.0.113.0/24"}, StatusSourceRanges: []string{"198.51.100.7/32"}}

type env struct {
	p     *Provider
	fake  *dofake.Server
	st    *vmsidetest.Statuses
	logs  *syncBuffer
	check *openapiCheck
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newEnv points godo at a fresh fake, every exchange held to DigitalOcean's
// API description (openapi_test.go), with cfg's settings.
func newEnv(t *testing.T, change ...func(*Config)) *env {
	t.Helper()
	fake := dofake.New(testToken)
	t.Cleanup(fake.Close)
	e := &env{fake: fake, st: vmsidetest.NewStatuses(), logs: &syncBuffer{}, check: newOpenAPICheck(t)}
	cfg := Config{Firewall: testFirewall, Renderer: vmsidetest.Renderer, Prober: e.st,
		Log: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, c := range change {
		c(&cfg)
	}
	c, err := NewClient(testToken, fake.Endpoint(), &http.Client{Transport: e.check.transport(nil)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	return e
}

// droplet is the fake's Droplet a providerID names.
func (e *env) droplet(t *testing.T, providerID string) int {
	t.Helper()
	id, err := parseID(providerID)
	if err != nil || id.droplet == 0 {
		t.Fatalf("%q names no Droplet: %v", providerID, err)
	}
	return id.droplet
}

// uidOf is the uid tag of the Droplet a providerID names.
func (e *env) uidOf(t *testing.T, providerID string) string {
	t.Helper()
	n := e.droplet(t, providerID)
	for _, d := range e.fake.Droplets() {
		if d.ID == n {
			return Labels(d.Tags)[provider.LabelUID]
		}
	}
	t.Fatalf("no Droplet %s", providerID)
	return ""
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Target {
		e := newEnv(t)
		return providertest.Target{
			Provider: e.p,
			Settle:   e.fake.Settle,
			AddUnmanaged: func(name, uid string) {
				e.fake.Put(name, "nyc1", []string{Tag(provider.LabelManaged, "false"), Tag(provider.LabelUID, uid)})
			},
			Deployment: provider.DefaultDeployment,
			AddManaged: func(name, uid, deployment string) {
				tags := []string{ManagedTag, Tag(provider.LabelUID, uid)}
				if deployment != "" {
					tags = append(tags, DeploymentTag(deployment))
				}
				e.fake.Put(name, "ams3", tags)
			},
			UnknownID:   dropletID(999999),
			ReportReady: func(id string) { e.st.Set(e.uidOf(t, id), Status{Generation: 1, Ready: true}) },
			ReportBootError: func(id, reason string) {
				e.st.Set(e.uidOf(t, id), Status{Error: reason})
			},
			Placement: provider.Placement{Region: "nyc", Zone: "nyc3", MachineType: "s-1vcpu-2gb", Image: "debian-12-x64"},
		}
	})
}

func request() provider.CreateRequest {
	uid := "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"
	return provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "team-a", ProxyName: "egress-1",
		Placement:     provider.Placement{Region: "nyc", MachineType: "s-1vcpu-2gb", Image: "debian-12-x64"},
		StartupScript: "#!/bin/bash\necho the proxy's bootstrap\n",
		Port:          3128,
	}
}

// another is request() for another proxy, of the uid's first eight
// characters.
func another(prefix string) provider.CreateRequest {
	req := request()
	req.UID = prefix + req.UID[len(prefix):]
	req.Name = provider.NameFromUID(req.UID)
	return req
}
