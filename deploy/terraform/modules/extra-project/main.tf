# An extra Google Cloud project the deployment makes proxy VMs in: one
# accounts document (docs/operations/accounts.md) sets its GCP_PROJECT.
# Apply this module once per extra project, with credentials that may
# change that project's IAM. It grants the functions' service accounts of
# the deployment's own project what their Compute Engine calls need in
# this one, and nothing else: the same custom roles as the deployment's
# (deploy/terraform/iam.tf), without the Firestore and logging
# permissions, which are the deployment's project's. A deploy test
# (deploy/extraproject_test.go) holds each role here to the compute part
# of its namesake there, which another holds to the code's calls.
#
# The VMs run as the deployment's proxy-vm account, from the deployment's
# project: its call-home publishes to that project's topic, and the
# call-home handler takes that account's tokens alone. Attaching a service
# account of another project needs the organization policy
# iam.disableCrossProjectServiceAccountUsage not enforced on this project,
# and this project's Compute Engine service agent allowed to make tokens
# for the account (below).

terraform {
  required_providers {
    google = {
      source = "hashicorp/google"
    }
  }
}

variable "project_id" {
  description = "The extra project, as the account document's GCP_PROJECT names it."
  type        = string
}

variable "reconcile_member" {
  description = "The Reconcile function's service account, serviceAccount:proxy-reconcile@MAIN.iam.gserviceaccount.com (the deployment's output)."
  type        = string
}

variable "gc_member" {
  description = "The CollectGarbage function's service account, serviceAccount:proxy-gc@MAIN.iam.gserviceaccount.com."
  type        = string
}

variable "proxy_vm_account" {
  description = "The proxy VMs' service account's name, projects/MAIN/serviceAccounts/proxy-vm@MAIN.iam.gserviceaccount.com: this project's Compute Engine service agent may make its tokens."
  type        = string
}

variable "network" {
  description = "The VPC network of this project the VMs join (GCP_NETWORK, the same in every account)."
  type        = string
  default     = "default"
}

variable "proxy_network_tag" {
  description = "The tag the proxy VMs carry (GCP_NETWORK_TAG)."
  type        = string
  default     = "egress-proxy"
}

variable "proxy_ports" {
  description = "The ports the proxies listen on (PROXY_PORTS)."
  type        = list(string)
  default     = ["3128"]
}

variable "allowed_source_ranges" {
  description = "Who may reach the proxy ports (FIREWALL_SOURCE_RANGES)."
  type        = list(string)
}

data "google_project" "this" {
  project_id = var.project_id
}

resource "google_project_service" "compute" {
  project            = var.project_id
  service            = "compute.googleapis.com"
  disable_on_destroy = false
}

# The compute part of the deployment's roles (deploy/terraform/iam.tf).
resource "google_project_iam_custom_role" "reconcile" {
  project     = var.project_id
  role_id     = "egress_proxy_reconcile"
  title       = "egress Reconcile"
  description = "What Reconcile calls in an extra project on no VM or address of its own: regions, zone operations, and the network and images a VM uses."
  permissions = [
    "compute.images.useReadOnly",
    "compute.regions.get",
    "compute.subnetworks.use",
    "compute.subnetworks.useExternalIp",
    "compute.zoneOperations.list",
  ]
}

resource "google_project_iam_custom_role" "reconcile_fleet" {
  project     = var.project_id
  role_id     = "egress_proxy_reconcile_fleet"
  title       = "egress Reconcile: the fleet"
  description = "What Reconcile calls on the proxies' VMs, boot disks and static addresses of an extra project, granted on their names only."
  permissions = [
    "compute.addresses.create",
    "compute.addresses.delete",
    "compute.addresses.get",
    "compute.addresses.use",
    "compute.disks.create",
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.getGuestAttributes",
    "compute.instances.getSerialPortOutput",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setServiceAccount",
    "compute.instances.setTags",
  ]
}

resource "google_project_iam_custom_role" "gc" {
  project     = var.project_id
  role_id     = "egress_proxy_gc"
  title       = "egress CollectGarbage"
  description = "What CollectGarbage lists in an extra project: its VMs and addresses."
  permissions = [
    "compute.addresses.list",
    "compute.instances.list",
  ]
}

resource "google_project_iam_custom_role" "gc_fleet" {
  project     = var.project_id
  role_id     = "egress_proxy_gc_fleet"
  title       = "egress CollectGarbage: the fleet"
  description = "What CollectGarbage calls on the proxies' VMs and static addresses of an extra project, granted on their names only."
  permissions = [
    "compute.addresses.delete",
    "compute.addresses.get",
    "compute.instances.delete",
    "compute.instances.get",
  ]
}

locals {
  project_roles = {
    reconcile = { member = var.reconcile_member, role = google_project_iam_custom_role.reconcile.id }
    gc        = { member = var.gc_member, role = google_project_iam_custom_role.gc.id }
  }
  # provider.NamePrefixes, as the deployment's iam.tf has them.
  fleet_name_prefixes = ["proxy-", "proxyh-"]
  fleet_condition = join(" || ", flatten([
    for kind in ["instances", "disks", "addresses"] : [
      for prefix in local.fleet_name_prefixes : "resource.name.extract(\"/${kind}/{name}\").startsWith(\"${prefix}\")"
    ]
  ]))
  fleet_roles = {
    reconcile = { member = var.reconcile_member, role = google_project_iam_custom_role.reconcile_fleet.id }
    gc        = { member = var.gc_member, role = google_project_iam_custom_role.gc_fleet.id }
  }
}

resource "google_project_iam_member" "roles" {
  for_each = local.project_roles
  project  = var.project_id
  role     = each.value.role
  member   = each.value.member
}

resource "google_project_iam_member" "fleet_roles" {
  for_each = local.fleet_roles
  project  = var.project_id
  role     = each.value.role
  member   = each.value.member
  condition {
    title       = "egress-fleet-names"
    description = "Only the VMs, boot disks and static addresses named by the product (proxy-*, proxyh-*)."
    expression  = local.fleet_condition
  }
}

# A VM of this project that runs as the deployment's proxy-vm account:
# this project's Compute Engine service agent makes that account's tokens.
resource "google_service_account_iam_member" "compute_agent_tokens" {
  service_account_id = var.proxy_vm_account
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = "serviceAccount:service-${data.google_project.this.number}@compute-system.iam.gserviceaccount.com"
}

# The proxy ports, open to the allowed ranges on the tagged VMs of this
# project's network, as the deployment's firewall opens them in its own.
resource "google_compute_firewall" "proxy" {
  project       = var.project_id
  name          = "egress-proxy-allow"
  network       = var.network
  direction     = "INGRESS"
  source_ranges = var.allowed_source_ranges
  target_tags   = [var.proxy_network_tag]
  allow {
    protocol = "tcp"
    ports    = var.proxy_ports
  }
  depends_on = [google_project_service.compute]
}

output "project_id" {
  description = "The project, for the account document's GCP_PROJECT."
  value       = var.project_id
}
