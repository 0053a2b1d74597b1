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
}

// Actions are every action of Calls, sorted: the custom role's actions.
func Actions() []string {
	set := map[string]bool{}
	for _, as := range Calls {
		for _, a := range as {
			set[a] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
