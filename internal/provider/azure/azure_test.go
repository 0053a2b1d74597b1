package azure

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	computefake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8/fake"
	networkfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7/fake"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/providertest"
	"github.com/egress-proxies/egress/internal/provider/vmside/vmsidetest"
)

const (
	testSubscription = "11111111-2222-4333-8444-555555555555"
	testGroup        = "egress-test"
	testSubnet       = "/subscriptions/" + testSubscription + "/resourceGroups/" + testGroup + "/providers/Microsoft.Network/virtualNetworks/egress/subnets/westeurope"
)

type env struct {
	p     *Provider
	cloud *cloud
	tr    *transport
	st    *vmsidetest.Statuses
	logs  *syncBuffer
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

// newEnv makes a provider whose clients' transport is the SDK's official
// fake servers over a fresh cloud.
func newEnv(t *testing.T, change ...func(*Config)) *env {
	t.Helper()
	c := newCloud()
	tr := &transport{
		compute: computefake.NewServerFactoryTransport(c.computeServers()),
		network: networkfake.NewServerFactoryTransport(c.networkServers()),
	}
	c.ending = func(o op) { end(tr.compute, o) }
	e := &env{cloud: c, tr: tr, st: vmsidetest.NewStatuses(), logs: &syncBuffer{}}
	e.p = e.provider(t, change...)
	return e
}

// provider makes another provider over the same cloud and transport: a
// new process, with none of the first one's memory.
func (e *env) provider(t *testing.T, change ...func(*Config)) *Provider {
	t.Helper()
	clients, err := NewClients(testSubscription, &azfake.TokenCredential{}, "", e.tr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{SubscriptionID: testSubscription, ResourceGroup: testGroup,
		Subnets:  map[string]string{"westeurope": testSubnet, "northcentralus": testSubnet},
		Renderer: vmsidetest.Renderer, Prober: e.st, PollEvery: time.Millisecond,
		Now: func() time.Time { return e.cloud.now },
		Log: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, c := range change {
		c(&cfg)
	}
	p, err := New(clients, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// uidOf is the uid tag of the VM a providerID names.
func (e *env) uidOf(t *testing.T, providerID string) string {
	t.Helper()
	id, err := e.p.parseID(providerID)
	if err != nil {
		t.Fatal(err)
	}
	vm := e.cloud.vm(id.name)
	if vm == nil {
		t.Fatalf("no VM %s", providerID)
	}
	return tag(vm.Tags, provider.LabelUID)
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Target {
		e := newEnv(t)
		return providertest.Target{
			Provider: e.p,
			Settle:   e.cloud.Settle,
			AddUnmanaged: func(name, uid string) {
				e.cloud.put(name, map[string]string{provider.LabelManaged: "false", provider.LabelUID: uid})
			},
			Deployment: provider.DefaultDeployment,
			AddManaged: func(name, uid, deployment string) {
				tags := map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid}
				if deployment != "" {
					tags[provider.LabelDeployment] = deployment
				}
				e.cloud.put(name, tags)
			},
			UnknownID:   e.p.vmID("proxy-00000000-0000-4000-8000-999999999999"),
			ReportReady: func(id string) { e.st.Set(e.uidOf(t, id), Status{Generation: 1, Ready: true}) },
			ReportBootError: func(id, reason string) {
				e.st.Set(e.uidOf(t, id), Status{Error: reason})
			},
			ReportGeneration: func(id string, generation int64) {
				e.st.Set(e.uidOf(t, id), Status{Generation: generation, Ready: true})
			},
			Placement: provider.Placement{Region: "westeurope", Zone: "westeurope-2", MachineType: DefaultSize, Image: DefaultImage},
		}
	})
}

func request() provider.CreateRequest {
	uid := "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"
	return provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "team-a", ProxyName: "egress-1",
		Placement:     provider.Placement{Region: "westeurope"},
		StartupScript: "#!/bin/bash\necho the proxy's bootstrap\n",
		Port:          3128, RequestID: "7d1f0a4e-2c1b-4f5e-9a8d-0b1c2d3e4f50",
	}
}
