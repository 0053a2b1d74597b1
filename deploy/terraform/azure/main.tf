# The azure provider's side in Azure: the resource group the proxies' VMs,
# NICs, disks and public IPs live in, the network they join (a virtual
# network and a subnet in each allowed location, behind a network security
# group), and the identity the two functions that call Azure (Reconcile,
# CollectGarbage) federate into: a user-assigned managed identity whose
# federated credentials trust their Google ID tokens, with a custom role of
# exactly the actions the provider calls, on this resource group only
# (role.tf). There is no Azure secret anywhere: each function sends its
# Google-signed ID token for the audience api://AzureADTokenExchange as the
# client assertion, and Entra ID answers with an access token for the
# identity, which lasts about an hour. Its own root module: a deployment
# without Azure never needs the azurerm provider or an Azure account.
#
# Apply it with your own `az login` credentials (Owner, or Contributor and
# User Access Administrator, on the subscription), in three steps
# (docs/operations/azure.md): this module alone, which makes the identity
# and the network; the main module with this module's output
# main_module_tfvars; this module again with the main module's outputs
# azure_function_account_ids and status_source_ranges:
#
#   terraform -chdir=deploy/terraform/azure apply \
#     -var subscription_id=00000000-0000-0000-0000-000000000000 \
#     -var deployment=egress -var 'locations=["westeurope","eastus"]' \
#     -var 'allowed_source_ranges=["203.0.113.0/24"]' \
#     -var "function_account_ids=$(terraform -chdir=deploy/terraform output -json azure_function_account_ids)" \
#     -var "status_source_ranges=$(terraform -chdir=deploy/terraform output -json status_source_ranges)"

variable "subscription_id" {
  description = "The Azure subscription the proxies run in (AZURE_SUBSCRIPTION_ID)."
  type        = string
  validation {
    condition     = can(regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", var.subscription_id))
    error_message = "subscription_id must be a subscription's id, a GUID such as 00000000-0000-0000-0000-000000000000 (az account show --query id)."
  }
}

variable "deployment" {
  description = "The deployment's name (DEPLOYMENT), as in the main module: it names the resource group, the identity and the role, so deployments sharing a subscription do not share them."
  type        = string
  default     = "egress"
  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.deployment))
    error_message = "deployment must be an RFC 1035 label, as in the main module."
  }
}

variable "resource_group" {
  description = "The name of the resource group this module makes, where every VM, NIC, disk and public IP of the deployment lives (AZURE_RESOURCE_GROUP); empty is egress-proxies-DEPLOYMENT. The role is granted on it alone."
  type        = string
  default     = ""
  validation {
    condition     = var.resource_group == "" || can(regex("^[-\\w.()]{0,89}[-\\w()]$", var.resource_group))
    error_message = "resource_group must be a resource group name: up to 90 letters, digits, '-', '_', '.', '(' and ')', not ending with '.'."
  }
}

variable "locations" {
  description = "The Azure locations the provider may place VMs in (AZURE_LOCATIONS), such as [\"westeurope\", \"eastus\"]: each gets a virtual network, its subnet and its network security group."
  type        = list(string)
  validation {
    condition     = length(var.locations) > 0 && alltrue([for l in var.locations : can(regex("^[a-z][a-z0-9]{1,39}$", l))])
    error_message = "locations must hold at least one Azure location by its name, such as westeurope or eastus2 (az account list-locations --query '[].name')."
  }
}

variable "location" {
  description = "The location of the resource group and the identity, which hold only metadata; empty is the first of locations. Changing it replaces both: set it if the first location may change."
  type        = string
  default     = ""
}

variable "address_space" {
  description = "The private IPv4 range of each location's virtual network and its one subnet. The networks are never peered, so every location uses the same; each VM is reached, and leaves, through its own public IP."
  type        = string
  default     = "10.64.0.0/16"
  validation {
    condition     = can(cidrhost(var.address_space, 0)) && !strcontains(var.address_space, ":")
    error_message = "address_space must be an IPv4 CIDR such as 10.64.0.0/16."
  }
}

variable "function_account_ids" {
  description = "The unique ids (numeric) of the Google service accounts of Reconcile and CollectGarbage (the main module's output azure_function_account_ids): the subjects of the identity's two federated credentials, the only tokens it takes. Null on the first apply, before the main module knows this module's outputs: the identity then takes no token."
  type = object({
    reconcile       = string
    collect_garbage = string
  })
  default = null
  validation {
    # A conditional, not ||: not every Terraform this module takes (1.6
    # and up) stops at a true left side of ||, and values(null) is an
    # error.
    condition     = var.function_account_ids == null ? true : alltrue([for id in values(var.function_account_ids) : can(regex("^[0-9]{10,30}$", id))])
    error_message = "function_account_ids must hold the numeric unique ids of the functions' service accounts: the main module's output azure_function_account_ids."
  }
}

variable "proxy_ports" {
  description = "TCP ports (or ranges such as \"3128-3130\") to open, as in the main module (PROXY_PORTS)."
  type        = list(string)
  default     = ["3128"]
  validation {
    condition     = length(var.proxy_ports) > 0 && alltrue([for p in var.proxy_ports : can(regex("^[0-9]{1,5}(-[0-9]{1,5})?$", p))])
    error_message = "proxy_ports must hold ports or ranges such as 3128 or 3128-3130."
  }
}

variable "allowed_source_ranges" {
  description = "CIDRs that may reach them, as in the main module (FIREWALL_SOURCE_RANGES). The VMs have IPv4 addresses only, so the IPv6 ranges are left out here."
  type        = list(string)
  validation {
    condition     = alltrue([for r in var.allowed_source_ranges : can(cidrhost(r, 0))]) && length([for r in var.allowed_source_ranges : r if !strcontains(r, ":")]) > 0
    error_message = "allowed_source_ranges must hold valid CIDRs, at least one of them IPv4."
  }
}

variable "status_source_ranges" {
  description = "The control plane's egress addresses (the main module's output status_source_ranges): opened to the proxy ports, over TCP, where each VM answers them its status and nothing else. Empty on the first apply, before the main module makes them: no VM is seen serving until they are set."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for r in var.status_source_ranges : can(cidrhost(r, 0)) && !strcontains(r, ":")])
    error_message = "status_source_ranges must hold IPv4 CIDRs: the main module's output status_source_ranges."
  }
}

locals {
  resource_group = var.resource_group != "" ? var.resource_group : "egress-proxies-${var.deployment}"
  home           = var.location != "" ? var.location : var.locations[0]
  tags           = { "egress-deployment" = var.deployment }
  # What Entra ID checks of a Google ID token it takes as a client
  # assertion: Google's issuer, the audience every federated credential
  # of Entra names by default (the functions ask the metadata server for
  # a token of this audience), and the subject, a service account's
  # unique id.
  google_issuer           = "https://accounts.google.com"
  token_exchange_audience = "api://AzureADTokenExchange"
}

resource "azurerm_resource_group" "proxies" {
  name     = local.resource_group
  location = local.home
  tags     = local.tags
}

# The identity the functions federate into (AZURE_CLIENT_ID). A managed
# identity rather than an Entra application: it has no secret or
# certificate that anyone could add to it, it lives and dies with the
# resource group, and making it takes no Entra directory role.
resource "azurerm_user_assigned_identity" "functions" {
  name                = "egress-proxy-${var.deployment}-functions"
  resource_group_name = azurerm_resource_group.proxies.name
  location            = local.home
  tags                = local.tags
}

# Its federated credentials: one per function, since a credential names one
# subject. Entra refuses concurrent writes of credentials under one
# identity (409, ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity):
# azurerm has written them one at a time since 3.40, and the second's
# depends_on says so here too, whatever the provider does.
resource "azurerm_federated_identity_credential" "reconcile" {
  count                     = var.function_account_ids == null ? 0 : 1
  name                      = "google-reconcile"
  user_assigned_identity_id = azurerm_user_assigned_identity.functions.id
  issuer                    = local.google_issuer
  subject                   = var.function_account_ids.reconcile
  audience                  = [local.token_exchange_audience]
}

resource "azurerm_federated_identity_credential" "collect_garbage" {
  count                     = var.function_account_ids == null ? 0 : 1
  name                      = "google-collect-garbage"
  user_assigned_identity_id = azurerm_user_assigned_identity.functions.id
  issuer                    = local.google_issuer
  subject                   = var.function_account_ids.collect_garbage
  audience                  = [local.token_exchange_audience]
  depends_on                = [azurerm_federated_identity_credential.reconcile]
}

# What the functions read, by the main module's variables: each output is
# the value of the main module's variable azure_NAME.
output "subscription_id" {
  description = "AZURE_SUBSCRIPTION_ID: the main module's azure_subscription_id."
  value       = var.subscription_id
}

output "tenant_id" {
  description = "AZURE_TENANT_ID, the identity's Entra tenant: the main module's azure_tenant_id."
  value       = azurerm_user_assigned_identity.functions.tenant_id
}

output "client_id" {
  description = "AZURE_CLIENT_ID, the identity the functions federate into: the main module's azure_client_id."
  value       = azurerm_user_assigned_identity.functions.client_id
}

output "resource_group" {
  description = "AZURE_RESOURCE_GROUP: the main module's azure_resource_group."
  value       = azurerm_resource_group.proxies.name
}

output "locations" {
  description = "AZURE_LOCATIONS: the main module's azure_locations."
  value       = var.locations
}

output "subnet_ids" {
  description = "AZURE_SUBNET_IDS, the subnet of each location: the main module's azure_subnet_ids."
  value       = { for l, s in azurerm_subnet.proxies : l => s.id }
}

output "main_module_tfvars" {
  description = "The six lines to put in the main module's terraform.tfvars (none is a secret)."
  value       = <<-EOT
    azure_subscription_id = ${jsonencode(var.subscription_id)}
    azure_tenant_id       = ${jsonencode(azurerm_user_assigned_identity.functions.tenant_id)}
    azure_client_id       = ${jsonencode(azurerm_user_assigned_identity.functions.client_id)}
    azure_resource_group  = ${jsonencode(azurerm_resource_group.proxies.name)}
    azure_locations       = ${jsonencode(var.locations)}
    azure_subnet_ids      = ${jsonencode({ for l, s in azurerm_subnet.proxies : l => s.id })}
  EOT
}
