package azure

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Plugin is Azure as the house takes it (listed in internal/clouds):
// its variables, its constructor and its rules. Its VMs
// boot by cloud-init (Debian's image, its Azure datasource) from the
// customData the provider sends, are read through the proxy port (the
// status door), and take a live change in place: the provider rewrites
// the VM's userData, which the VM's agent watches through IMDS
// (Boot.WatchUserData), so warm pools are served.
//
// No IPv6Prefix: what Azure's Network API (2025-01-01, armnetwork/v7)
// gives a NIC is one public IPv6 address per IP configuration (a Standard
// public IP of version IPv6, on a dual-stack subnet), not a public prefix
// routed to the VM. Its one prefix on a NIC, an IP configuration's
// privateIPAddressPrefixLength, is a block of the subnet's private
// addresses, which reach the Internet through the public IP's address
// translation, so its sources are not distinct public addresses; and a
// public IP prefix (publicIPPrefixes) is a reservation that public IPs
// are made from one by one, not a block routed to a VM. As read from the
// SDK's models and Azure's docs, not tried on Azure itself. So the
// rotating IPv6 egress modes are refused on azure.
var Plugin = plugin.Plugin{
	Type:      Type,
	Name:      "Azure Virtual Machines",
	Vars:      vars,
	New:       newFromEnv,
	Validator: validatorOf,
	Boot: plugin.Boot{Kind: plugin.BootCloudInit, MetadataURL: vmconfig.AzureMetadataURL,
		WatchUserData: vmconfig.AzureUserDataURL},
	Readiness: plugin.StatusDoor,
	InPlace:   true,
	// Resource Manager throttles a subscription by token buckets: reads
	// 250 with 25 a second back, writes and deletes 200 with 10. One
	// budget over all of them at the writes' refill: 200 in 20 s, a full
	// bucket's worth that is back by the next window.
	Rate: pacing.Rate{Calls: 200, Window: 20 * time.Second, Source: "https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/request-limits-and-throttling"},
	// As the Azure fake counted them for a warm process's VM
	// (azuresim's TestCallsAsCounted), the polls of the long-running
	// operations included.
	Calls:        pacing.Calls{Create: 9, Get: 2, Delete: 2, ListByTag: 3, Reconfigure: 2},
	FakeEndpoint: "AZURE_ENDPOINT",
	// Azure's Retail Prices API, which asks no credential.
	Prices:           pricesFromEnv,
	PricedPlacements: pricedPlacements,
	Placement: plugin.Placement{
		Region:             "an Azure location (westeurope, eastus, …) among those the platform allows (AZURE_LOCATIONS)",
		Zone:               "one of its availability zones, LOCATION-1 to LOCATION-3 (westeurope-2), where it has them",
		MachineType:        "a VM size (x86) among AZURE_VM_SIZES",
		DefaultMachineType: DefaultSize,
		Image:              "a Marketplace image URN PUBLISHER:OFFER:SKU:VERSION among AZURE_IMAGES (" + DefaultImage + ")",
		Regions: []string{
			"westeurope          Netherlands      westeurope-1 … westeurope-3",
			"northeurope         Ireland          northeurope-1 … northeurope-3",
			"germanywestcentral  Frankfurt        germanywestcentral-1 … germanywestcentral-3",
			"eastus              Virginia         eastus-1 … eastus-3",
			"westus2             Washington       westus2-1 … westus2-3",
			"southeastasia       Singapore        southeastasia-1 … southeastasia-3",
		},
		Example: "--provider azure --region westeurope --allowed-source-range 203.0.113.0/24 --ip-policy Static",
	},
	Images: plugin.Images{Default: DefaultImage, Allowed: DefaultAllowedImages, Var: "AZURE_IMAGES"},
	APIs: []plugin.API{
		{Name: "Azure Resource Manager, Microsoft.Compute 2026-04-01", Module: "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"},
		{Name: "Azure Resource Manager, Microsoft.Network 2025-01-01", Module: "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"},
		{Name: "Microsoft Entra ID workload identity federation", Module: "github.com/Azure/azure-sdk-for-go/sdk/azidentity"},
	},
	Words: []string{"azurerm", "armcompute", "armnetwork", "azidentity"},
	// The simulated cloud and the benchmark's phase, over the fake.
	Dev: "github.com/egress-proxies/egress/internal/provider/azure/azuresim",
	Terraform: plugin.Terraform{
		Module: "deploy/terraform/azure",
		// The custom role of exactly the actions this package's calls
		// need, scoped to the resource group.
		Policy: "deploy/terraform/azure/role.tf",
	},
}

var (
	uuidRE  = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	groupRE = regexp.MustCompile(`^[-\w._()]{1,90}$`)
)

// requiredUUID refuses an empty value or one that is not a GUID.
func requiredUUID(example string) func(string, plugin.Settings) error {
	return func(v string, _ plugin.Settings) error {
		switch {
		case v == "":
			return fmt.Errorf("is required with azure in PROVIDERS: a GUID such as %s", example)
		case !uuidRE.MatchString(v):
			return fmt.Errorf("is not a GUID such as %s", example)
		}
		return nil
	}
}

// vars are Azure's variables: what the operator allows of a placement,
// the endpoints of a fake, then where the VMs go and the identity the
// functions federate into. No Azure secret: the functions present their
// Google ID token.
var vars = []plugin.Var{
	{Name: "AZURE_LOCATIONS", Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the Azure locations a placement may name, comma-separated (westeurope, eastus, …): required with azure in PROVIDERS; each needs a subnet in AZURE_SUBNET_IDS (Terraform's azure module makes one per location)",
		Check: func(v string, _ plugin.Settings) error {
			return Policy{Locations: plugin.SplitList(v), Sizes: DefaultAllowedSizes, Images: DefaultAllowedImages}.Check()
		}},
	{Name: "AZURE_VM_SIZES", Default: strings.Join(DefaultAllowedSizes, ","), Readers: plugin.ReadByAPI,
		Meaning: "the VM sizes a placement may name, comma-separated; it must hold " + DefaultSize + ", the size of a placement that names none (x86: the proxy engine is built for linux/amd64)"},
	{Name: "AZURE_IMAGES", Default: strings.Join(DefaultAllowedImages, ","), Readers: plugin.ReadByAPI,
		Meaning: "the Marketplace images a placement may name, by URN PUBLISHER:OFFER:SKU:VERSION, comma-separated; it must hold " + DefaultImage + " (Debian 13, Generation 2), the image of a placement that names none"},

	{Name: "AZURE_ENDPOINT", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "an Azure Resource Manager to use instead of Azure's: tests against a fake only; without AZURE_AUTHORITY_HOST the provider sends it the token `" + LocalToken + "`, which no account has",
		Check:   loopback("https://127.0.0.1:PORT")},
	{Name: "AZURE_PRICES_ENDPOINT", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "an Azure Retail Prices API to use instead of Azure's (" + RetailPricesEndpoint + ", which asks no credential) for the daily price refresh: tests against a fake only",
		Check:   loopback("http://127.0.0.1:PORT")},
	{Name: "AZURE_AUTHORITY_HOST", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "a Microsoft Entra ID authority host to use instead of Azure's for the exchange of the ID token (a fake's token endpoint): tests against a fake only",
		Check:   loopback("https://127.0.0.1:PORT/")},
	{Name: "AZURE_SUBSCRIPTION_ID", Readers: plugin.ReadByCallers,
		Meaning: "the Azure subscription the VMs are made in",
		Check:   requiredUUID("00000000-0000-0000-0000-000000000000")},
	{Name: "AZURE_RESOURCE_GROUP", Readers: plugin.ReadByCallers,
		Meaning: "the resource group every VM, NIC and public IP is made in and listed from (Terraform's azure module makes it, and scopes the functions' role to it)",
		Check: func(v string, _ plugin.Settings) error {
			if !groupRE.MatchString(v) || strings.HasSuffix(v, ".") {
				return fmt.Errorf("is not a resource group name (1 to 90 letters, digits, '-', '_', '.', '(' and ')', not ending in '.'), such as egress-proxies")
			}
			return nil
		}},
	{Name: "AZURE_SUBNET_IDS", Readers: plugin.ReadByCallers,
		Meaning: "the subnet of each allowed location, `location=/subscriptions/…/virtualNetworks/V/subnets/NAME` pairs, comma-separated: a VM's NIC joins its location's, whose network security group opens the proxy ports (Terraform's azure module makes them and writes this)",
		Check: func(v string, s plugin.Settings) error {
			subnets, err := ParseSubnets(plugin.SplitList(v))
			if err != nil {
				return err
			}
			for _, loc := range s.List("AZURE_LOCATIONS") {
				if subnets[loc] == "" {
					return fmt.Errorf("names no subnet for %s, one of AZURE_LOCATIONS", loc)
				}
			}
			return nil
		}},
	{Name: "AZURE_TENANT_ID", Readers: plugin.ReadByCallers,
		Meaning: "the Microsoft Entra tenant of the identity the functions federate into",
		Check:   federated("00000000-0000-0000-0000-000000000000")},
	{Name: "AZURE_CLIENT_ID", Readers: plugin.ReadByCallers,
		Meaning: "the client id of the identity (a user-assigned managed identity or an Entra application) the functions federate into: each presents its Google ID token for " + Audience + " as the client assertion, which the identity's federated credential trusts (issuer https://accounts.google.com, the function's service account as subject); no Azure secret or key is in any variable, secret, log line or document",
		Check:   federated("00000000-0000-0000-0000-000000000000")},
}

// federated checks a GUID of the federation: required unless the provider
// talks to a fake with LocalToken (AZURE_ENDPOINT without
// AZURE_AUTHORITY_HOST).
func federated(example string) func(string, plugin.Settings) error {
	return func(v string, s plugin.Settings) error {
		if v == "" && s.Get("AZURE_ENDPOINT") != "" && s.Get("AZURE_AUTHORITY_HOST") == "" {
			return nil
		}
		return requiredUUID(example)(v, s)
	}
}

// loopback refuses an endpoint that is not of this machine. Unlike
// plugin.LoopbackURL it takes https too: azidentity asks an authority
// over TLS only, and a fake of ARM may serve either.
func loopback(example string) func(string, plugin.Settings) error {
	return func(v string, _ plugin.Settings) error {
		for _, prefix := range []string{"http://127.0.0.1:", "http://localhost:", "https://127.0.0.1:", "https://localhost:"} {
			if v == "" || strings.HasPrefix(v, prefix) {
				return nil
			}
		}
		return fmt.Errorf("is not a loopback URL such as %s: it is for a fake on this machine", example)
	}
}

// newFromEnv makes the provider when it is first used, with a credential
// by federation: the function's Google ID token for Audience is the
// client assertion of AZURE_CLIENT_ID in AZURE_TENANT_ID. Against
// AZURE_ENDPOINT (a fake) without AZURE_AUTHORITY_HOST it sends
// LocalToken, and asks no token of anyone.
func newFromEnv(env plugin.Env) provider.Constructor {
	s := env.Settings
	endpoint, authority := s.Get("AZURE_ENDPOINT"), s.Get("AZURE_AUTHORITY_HOST")
	subnets, subnetErr := ParseSubnets(s.List("AZURE_SUBNET_IDS"))
	cfg := Config{SubscriptionID: s.Get("AZURE_SUBSCRIPTION_ID"), ResourceGroup: s.Get("AZURE_RESOURCE_GROUP"),
		Deployment: env.Deployment, Subnets: subnets,
		Renderer: env.VM.Renderer, Prober: env.VM.Prober, Log: env.Log.With(slog.String("provider", Type))}
	return func(ctx context.Context) (provider.Provider, error) {
		if subnetErr != nil {
			return nil, fmt.Errorf("azure: AZURE_SUBNET_IDS %w", subnetErr)
		}
		var cred azcore.TokenCredential = localCredential{}
		if endpoint == "" || authority != "" {
			tokens, err := env.IDTokens(context.WithoutCancel(ctx), Audience)
			if err != nil {
				return nil, fmt.Errorf("azure: a source of Google ID tokens for %s: %w", Audience, err)
			}
			if cred, err = Credential(Federation{TenantID: s.Get("AZURE_TENANT_ID"), ClientID: s.Get("AZURE_CLIENT_ID"),
				Tokens: tokens, AuthorityHost: authority}); err != nil {
				return nil, err
			}
		}
		c, err := NewClients(cfg.SubscriptionID, cred, endpoint, nil)
		if err != nil {
			return nil, err
		}
		return New(c, cfg)
	}
}

// PolicyOf is the operator's policy from the settings.
func PolicyOf(s plugin.Settings) Policy {
	return Policy{Locations: s.List("AZURE_LOCATIONS"), Sizes: s.List("AZURE_VM_SIZES"), Images: s.List("AZURE_IMAGES")}
}

func validatorOf(s plugin.Settings) (provider.Validator, error) {
	pol := PolicyOf(s)
	if err := pol.Check(); err != nil {
		return Validator(pol), fmt.Errorf("AZURE_LOCATIONS, AZURE_VM_SIZES and AZURE_IMAGES: the policy %w", err)
	}
	return Validator(pol), nil
}
