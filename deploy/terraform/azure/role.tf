# The functions' rights in Azure: a custom role of exactly the Resource
# Manager actions the azure provider calls (internal/provider/azure), on
# this deployment's resource group alone, and one of the two reads of the
# subscription's quotas, at the subscription (below), both assigned to the
# identity they federate into. A deploy test holds the lists to the
# provider's calls (deploy/azure_test.go); an action the code does not
# call, or a call the roles do not grant, fails there.
locals {
  role_actions = [
    # A VM: PUT (created once, If-None-Match: *), PATCH of its userData (a
    # live change), GET, the list of the resource group, DELETE.
    "Microsoft.Compute/virtualMachines/read",
    "Microsoft.Compute/virtualMachines/write",
    "Microsoft.Compute/virtualMachines/delete",
    # Its NIC (NAME-nic), joined by the VM.
    "Microsoft.Network/networkInterfaces/read",
    "Microsoft.Network/networkInterfaces/write",
    "Microsoft.Network/networkInterfaces/delete",
    "Microsoft.Network/networkInterfaces/join/action",
    # Its public IP (NAME-ip), joined by the NIC.
    "Microsoft.Network/publicIPAddresses/read",
    "Microsoft.Network/publicIPAddresses/write",
    "Microsoft.Network/publicIPAddresses/delete",
    "Microsoft.Network/publicIPAddresses/join/action",
    # The location's subnet and its network security group, which the
    # NIC joins; network.tf makes both.
    "Microsoft.Network/virtualNetworks/subnets/read",
    "Microsoft.Network/virtualNetworks/subnets/join/action",
    "Microsoft.Network/networkSecurityGroups/join/action",
    # An OS disk a crash left behind (a VM's own goes with it).
    "Microsoft.Compute/disks/read",
    "Microsoft.Compute/disks/delete",
  ]
}

resource "azurerm_role_definition" "functions" {
  # Custom roles' names are the tenant's: the resource group's name and
  # the subscription keep two deployments' apart. Letters, digits, '-' and
  # spaces only.
  name              = "egress-proxy functions ${local.resource_group} ${var.subscription_id}"
  scope             = azurerm_resource_group.proxies.id
  description       = "What the egress proxies' functions (deployment ${var.deployment}) call in their resource group, and nothing else."
  assignable_scopes = [azurerm_resource_group.proxies.id]
  permissions {
    actions = local.role_actions
  }
}

resource "azurerm_role_assignment" "functions" {
  scope              = azurerm_resource_group.proxies.id
  role_definition_id = azurerm_role_definition.functions.role_definition_resource_id
  principal_id       = azurerm_user_assigned_identity.functions.principal_id
  # A managed identity is a service principal; saying so spares the
  # assignment Entra's replication lag for one just made.
  principal_type = "ServicePrincipal"
  description    = "The egress proxies' functions (deployment ${var.deployment}), by federation of their Google identities."
}

# The subscription's quotas in a location (the usages of Microsoft.Compute
# and Microsoft.Network), which the provider's Quotas reads for placement:
# they are the subscription's, not the resource group's, so the role above
# cannot reach them. This role grants those two reads and nothing else, at
# the subscription.
locals {
  quota_actions = [
    "Microsoft.Compute/locations/usages/read",
    "Microsoft.Network/locations/usages/read",
  ]
}

resource "azurerm_role_definition" "quotas" {
  name              = "egress-proxy quotas ${local.resource_group} ${var.subscription_id}"
  scope             = "/subscriptions/${var.subscription_id}"
  description       = "The quotas of the subscription's locations that the egress proxies' functions (deployment ${var.deployment}) read to place proxies, and nothing else."
  assignable_scopes = ["/subscriptions/${var.subscription_id}"]
  permissions {
    actions = local.quota_actions
  }
}

resource "azurerm_role_assignment" "quotas" {
  scope              = "/subscriptions/${var.subscription_id}"
  role_definition_id = azurerm_role_definition.quotas.role_definition_resource_id
  principal_id       = azurerm_user_assigned_identity.functions.principal_id
  principal_type     = "ServicePrincipal"
  description        = "The egress proxies' functions (deployment ${var.deployment}) read the subscription's quotas."
}
