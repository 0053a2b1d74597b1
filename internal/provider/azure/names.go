package azure

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"

	"github.com/egress-proxies/egress/internal/provider"
)

// A VM's resources are named from the VM's name (provider.NameFromUID,
// the same for every VM of a proxy): so a create, after a crash, finds
// what it made by name, a Delete finds what a deleteOption left, and a
// Static proxy's next VM finds its address.
func ipName(vm string) string   { return vm + "-ip" }
func nicName(vm string) string  { return vm + "-nic" }
func diskName(vm string) string { return vm + "-osdisk" }

// vmOf is the VM name a resource's name is derived from, reporting false
// for a name none of ours has.
func vmOf(name string) (string, bool) {
	for _, suffix := range []string{"-ip", "-nic", "-osdisk"} {
		if vm, ok := strings.CutSuffix(name, suffix); ok && vm != "" {
			return vm, true
		}
	}
	return "", false
}

// The ARM resource types of a providerID.
const (
	typeVM = "Microsoft.Compute/virtualMachines"
	typeIP = "Microsoft.Network/publicIPAddresses"
)

// idPrefix begins every providerID, before the ARM resource id.
const idPrefix = "azure://"

func (p *Provider) armID(resourceType, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s", p.cfg.SubscriptionID, p.cfg.ResourceGroup, resourceType, name)
}

func (p *Provider) vmID(name string) string { return idPrefix + p.armID(typeVM, name) }
func (p *Provider) ipID(name string) string { return idPrefix + p.armID(typeIP, name) }

// parsed is a providerID: the resource group and name of a VM or of a
// public IP.
type parsed struct {
	group, name string
	address     bool
}

// parseID reads a providerID of this subscription's.
func (p *Provider) parseID(providerID string) (parsed, error) {
	bad := func(why string) error {
		return provider.NewError(provider.KindPermanent, "parse providerID", providerID,
			fmt.Errorf("not of the form azure:///subscriptions/S/resourceGroups/G/providers/%s/NAME or …/%s/NAME: %s", typeVM, typeIP, why))
	}
	rest, ok := strings.CutPrefix(providerID, idPrefix)
	if !ok {
		return parsed{}, bad("no azure:// prefix")
	}
	id, err := arm.ParseResourceID(rest)
	if err != nil {
		return parsed{}, bad(err.Error())
	}
	if !strings.EqualFold(id.SubscriptionID, p.cfg.SubscriptionID) {
		return parsed{}, provider.NewError(provider.KindPermanent, "parse providerID", providerID,
			fmt.Errorf("subscription %s is not AZURE_SUBSCRIPTION_ID %s: the provider acts in one subscription", id.SubscriptionID, p.cfg.SubscriptionID))
	}
	if id.ResourceGroupName == "" {
		return parsed{}, bad("no resource group")
	}
	switch t := id.ResourceType.String(); {
	case strings.EqualFold(t, typeVM):
		return parsed{group: id.ResourceGroupName, name: id.Name}, nil
	case strings.EqualFold(t, typeIP):
		return parsed{group: id.ResourceGroupName, name: id.Name, address: true}, nil
	default:
		return parsed{}, bad("resource type " + t)
	}
}

// subnetPattern is a subnet's ARM id.
var subnetPattern = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/virtualNetworks/[^/]+/subnets/[^/]+$`)

// checkSubnet refuses a subnet id that is not one.
func checkSubnet(location, id string) error {
	if !subnetPattern.MatchString(id) {
		return fmt.Errorf("the subnet of %s, %q, is not a subnet's id /subscriptions/S/resourceGroups/G/providers/Microsoft.Network/virtualNetworks/V/subnets/NAME", location, id)
	}
	return nil
}

// ParseSubnets reads AZURE_SUBNET_IDS: location=SUBNET_ID pairs, comma
// separated, one per location.
func ParseSubnets(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range pairs {
		loc, id, ok := strings.Cut(pair, "=")
		loc, id = strings.TrimSpace(loc), strings.TrimSpace(id)
		switch {
		case !ok || loc == "":
			return nil, fmt.Errorf("%q is not location=SUBNET_ID", pair)
		case out[loc] != "":
			return nil, fmt.Errorf("location %s has two subnets: one per location", loc)
		}
		if err := checkSubnet(loc, id); err != nil {
			return nil, err
		}
		out[loc] = id
	}
	if len(out) == 0 {
		return nil, errors.New("names no subnet")
	}
	return out, nil
}

// Lists makes the provider a provider.Scoped: ListByTag lists
// AZURE_RESOURCE_GROUP, while a providerID names its own resource group,
// so a VM made before the variable changed is served, replaced and
// deleted through its providerID, never listed.
func (p *Provider) Lists(providerID string) bool {
	id, err := p.parseID(providerID)
	return err == nil && strings.EqualFold(id.group, p.cfg.ResourceGroup)
}
