package azure

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/provider/vmside/vmsidetest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

func TestPluginDeclaresWhatTheHouseNeeds(t *testing.T) {
	if err := Plugin.Check(); err != nil {
		t.Fatal(err)
	}
	if !Plugin.InPlace || Plugin.Boot.WatchUserData != vmconfig.AzureUserDataURL || Plugin.Readiness != plugin.StatusDoor || Plugin.IPv6Prefix != 0 {
		t.Errorf("Plugin's shape = InPlace %v, WatchUserData %q, Readiness %v, IPv6Prefix %d; want in place, Azure's IMDS userData, the status door, no prefix",
			Plugin.InPlace, Plugin.Boot.WatchUserData, Plugin.Readiness, Plugin.IPv6Prefix)
	}
}

// TestVarChecks: each variable's check, given the ones read before it.
func TestVarChecks(t *testing.T) {
	byName := map[string]plugin.Var{}
	for _, v := range vars {
		byName[v.Name] = v
	}
	const sub = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/we"
	for _, tc := range []struct {
		name, value string
		read        plugin.Settings
		want        string // a part of the error; "" for none
	}{
		{"AZURE_LOCATIONS", "westeurope,eastus", nil, ""},
		{"AZURE_LOCATIONS", "", nil, "allows no location"},
		{"AZURE_SUBSCRIPTION_ID", "", nil, "is required"},
		{"AZURE_SUBSCRIPTION_ID", "my-subscription", nil, "not a GUID"},
		{"AZURE_SUBSCRIPTION_ID", testSubscription, nil, ""},
		{"AZURE_RESOURCE_GROUP", "egress-proxies", nil, ""},
		{"AZURE_RESOURCE_GROUP", "", nil, "not a resource group name"},
		{"AZURE_SUBNET_IDS", "westeurope=" + sub, plugin.Settings{"AZURE_LOCATIONS": "westeurope"}, ""},
		{"AZURE_SUBNET_IDS", "westeurope=" + sub, plugin.Settings{"AZURE_LOCATIONS": "westeurope,eastus"}, "no subnet for eastus"},
		{"AZURE_TENANT_ID", "", nil, "is required"},
		{"AZURE_TENANT_ID", "", plugin.Settings{"AZURE_ENDPOINT": "http://127.0.0.1:8443"}, ""},
		{"AZURE_TENANT_ID", "", plugin.Settings{"AZURE_ENDPOINT": "https://127.0.0.1:8443", "AZURE_AUTHORITY_HOST": "https://127.0.0.1:8444/"}, "is required"},
		{"AZURE_CLIENT_ID", testSubscription, nil, ""},
		{"AZURE_ENDPOINT", "https://127.0.0.1:8443", nil, ""},
		{"AZURE_ENDPOINT", "https://management.azure.com", nil, "not a loopback URL"},
		{"AZURE_AUTHORITY_HOST", "https://login.microsoftonline.com/", nil, "not a loopback URL"},
	} {
		v, ok := byName[tc.name]
		if !ok {
			t.Fatalf("no variable %s", tc.name)
		}
		var err error
		if v.Check != nil {
			err = v.Check(tc.value, tc.read)
		}
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s=%q with %v: %v, want an error holding %q", tc.name, tc.value, tc.read, err, tc.want)
		}
	}
}

// TestFederationAsksForTheExchangeAudience: with an identity to federate
// into, the constructor asks the house for Google ID tokens of
// api://AzureADTokenExchange, the audience Entra takes; against a fake
// without an authority it asks for none (LocalToken).
func TestFederationAsksForTheExchangeAudience(t *testing.T) {
	const sub = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/we"
	for _, tc := range []struct {
		name     string
		settings plugin.Settings
		want     []string
	}{
		{"federated", plugin.Settings{"AZURE_TENANT_ID": testSubscription, "AZURE_CLIENT_ID": testSubscription}, []string{Audience}},
		{"a fake with its token endpoint", plugin.Settings{"AZURE_TENANT_ID": testSubscription, "AZURE_CLIENT_ID": testSubscription,
			"AZURE_ENDPOINT": "https://127.0.0.1:1", "AZURE_AUTHORITY_HOST": "https://127.0.0.1:2/"}, []string{Audience}},
		{"a fake with LocalToken", plugin.Settings{"AZURE_ENDPOINT": "http://127.0.0.1:1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := plugin.Settings{"AZURE_SUBSCRIPTION_ID": testSubscription, "AZURE_RESOURCE_GROUP": testGroup,
				"AZURE_LOCATIONS": "westeurope", "AZURE_SUBNET_IDS": "westeurope=" + sub}
			for k, v := range tc.settings {
				s[k] = v
			}
			var asked []string
			env := plugin.Env{Settings: s, Deployment: "egress", Log: slog.New(slog.DiscardHandler),
				VM: plugin.VMSide{Renderer: vmsidetest.Renderer, Prober: vmsidetest.NewStatuses()},
				IDTokens: func(_ context.Context, audience string) (oauth2.TokenSource, error) {
					asked = append(asked, audience)
					return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "a-google-id-token"}), nil
				}}
			if _, err := Plugin.New(env)(context.Background()); err != nil {
				t.Fatal(err)
			}
			if strings.Join(asked, ",") != strings.Join(tc.want, ",") {
				t.Errorf("audiences asked = %q, want %q", asked, tc.want)
			}
		})
	}
}
