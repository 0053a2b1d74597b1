package gcp_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// TestConfigOfTheSettings: the GCP_ settings, as the house reads them
// (each with its default), make the provider's configuration: the
// project falls back to the functions', the deployment, the call-home
// topic and the engine are the house's.
func TestConfigOfTheSettings(t *testing.T) {
	defaults := plugin.Settings{}
	for _, v := range gcp.Plugin.Vars {
		defaults[v.Name] = v.Default
	}
	env := plugin.Env{Settings: defaults, Project: "demo-x", Deployment: "staging",
		CallHomeTopic: "projects/demo-x/topics/proxy-callhome", Engine: plugin.Engine{URL: "https://storage.googleapis.com/b/egress-proxy", SHA256: "ab"}}
	want := gcp.Config{Project: "demo-x", Deployment: "staging", Network: "default", StackType: gcp.StackIPv4, NetworkTag: "egress-proxy",
		Scopes: gcp.DefaultScopes, ProbeTarget: "www.google.com:443", CallHomeTopic: "projects/demo-x/topics/proxy-callhome",
		EngineURL: "https://storage.googleapis.com/b/egress-proxy", EngineSHA256: "ab"}
	if diff := cmp.Diff(want, gcp.ConfigOf(env)); diff != "" {
		t.Errorf("the defaults' configuration (-want +got):\n%s", diff)
	}
	env.Settings = plugin.Settings{"GCP_PROJECT": "vms", "GCP_SUBNETWORK": "proxies", "GCP_STACK_TYPE": gcp.StackDual, "GCP_SCOPES": " a, b "}
	got := gcp.ConfigOf(env)
	if got.Project != "vms" || got.Subnetwork != "proxies" || got.StackType != gcp.StackDual || !cmp.Equal(got.Scopes, []string{"a", "b"}) {
		t.Errorf("set settings: %+v", got)
	}
	pol := gcp.PolicyOf(plugin.Settings{"GCP_ALLOWED_REGIONS": "europe-west4, europe-west1", "GCP_ALLOWED_MACHINE_TYPES": "e2-micro"})
	if diff := cmp.Diff(gcp.Policy{Regions: []string{"europe-west4", "europe-west1"}, MachineTypes: []string{"e2-micro"}}, pol); diff != "" {
		t.Errorf("the policy (-want +got):\n%s", diff)
	}
}
