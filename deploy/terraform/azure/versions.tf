terraform {
  required_version = ">= 1.6"
  required_providers {
    azurerm = {
      source = "hashicorp/azurerm"
      # 5.0 took out federated_identity_credential's parent_id for
      # user_assigned_identity_id, and registers no resource provider by
      # itself (resource_providers_to_register, below).
      version = ">= 5.0, < 6.0"
    }
  }
}

# The subscription is named, never taken from whatever `az account show`
# says: an apply on the wrong subscription would make a second, unused
# identity. The credentials are yours, from `az login`, for this apply
# only.
provider "azurerm" {
  subscription_id = var.subscription_id
  # What this module and the provider's calls use; the subscription may
  # not have them registered yet.
  resource_providers_to_register = ["Microsoft.Compute", "Microsoft.Network", "Microsoft.ManagedIdentity"]
  features {}
}
