package azure

import (
	"maps"
	"slices"
)

// Calls are the ARM actions each client call of this package needs (the
// calls are Clients' methods, by field and method), for the custom role
// of deploy/terraform/azure (Plugin.Terraform.Policy), which grants
// exactly Actions on the resource group. A NIC's PUT joins the subnet, the
// subnet's network security group and the public IP it names; a VM's PUT
// joins its NIC. TestEveryCallHasItsActions holds the package's calls to
// this table.
var Calls = map[string][]string{
	"VMs.Get":                 {"Microsoft.Compute/virtualMachines/read"},
	"VMs.NewListPager":        {"Microsoft.Compute/virtualMachines/read"},
	"VMs.BeginCreateOrUpdate": {"Microsoft.Compute/virtualMachines/write", "Microsoft.Network/networkInterfaces/join/action"},
	"VMs.BeginUpdate":         {"Microsoft.Compute/virtualMachines/write"},
	"VMs.BeginDelete":         {"Microsoft.Compute/virtualMachines/delete"},
	"Disks.Get":               {"Microsoft.Compute/disks/read"},
	"Disks.BeginDelete":       {"Microsoft.Compute/disks/delete"},
	"NICs.Get":                {"Microsoft.Network/networkInterfaces/read"},
	"NICs.NewListPager":       {"Microsoft.Network/networkInterfaces/read"},
	"NICs.BeginCreateOrUpdate": {"Microsoft.Network/networkInterfaces/write", "Microsoft.Network/virtualNetworks/subnets/read",
		"Microsoft.Network/virtualNetworks/subnets/join/action", "Microsoft.Network/networkSecurityGroups/join/action",
		"Microsoft.Network/publicIPAddresses/join/action"},
	"NICs.UpdateTags":         {"Microsoft.Network/networkInterfaces/write"},
	"NICs.BeginDelete":        {"Microsoft.Network/networkInterfaces/delete"},
	"IPs.Get":                 {"Microsoft.Network/publicIPAddresses/read"},
	"IPs.NewListPager":        {"Microsoft.Network/publicIPAddresses/read"},
	"IPs.BeginCreateOrUpdate": {"Microsoft.Network/publicIPAddresses/write"},
	"IPs.UpdateTags":          {"Microsoft.Network/publicIPAddresses/write"},
	"IPs.BeginDelete":         {"Microsoft.Network/publicIPAddresses/delete"},
	// The usages of a location (Quotas): the subscription's, not the
	// resource group's (SubscriptionActions).
	"ComputeUsage.NewListPager": {"Microsoft.Compute/locations/usages/read"},
	"NetworkUsage.NewListPager": {"Microsoft.Network/locations/usages/read"},
}

// subscriptionActions are the actions of Calls on the subscription
// itself rather than on resources of the resource group: a role at the
// resource group does not reach them, so deploy/terraform/azure grants
// them by a role of their own at the subscription, which grants nothing
// else.
var subscriptionActions = map[string]bool{
	"Microsoft.Compute/locations/usages/read": true,
	"Microsoft.Network/locations/usages/read": true,
}

// Actions are the actions of Calls on the resource group, sorted: the
// custom role's actions.
func Actions() []string { return actions(false) }

// SubscriptionActions are the actions of Calls on the subscription,
// sorted: the quotas role's actions.
func SubscriptionActions() []string { return actions(true) }

func actions(subscription bool) []string {
	set := map[string]bool{}
	for _, as := range Calls {
		for _, a := range as {
			if subscriptionActions[a] == subscription {
				set[a] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}
