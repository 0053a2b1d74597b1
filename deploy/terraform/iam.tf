# One service account per function, each with only what it does, one for the
# triggers that invoke the event functions, and one for the proxy VMs.

resource "google_service_account" "api" {
  account_id   = "proxy-api"
  display_name = "ProxyAPI: reads and writes proxy documents"
}

resource "google_service_account" "reconcile" {
  account_id   = "proxy-reconcile"
  display_name = "Reconcile: drives proxy documents to their VMs"
}

resource "google_service_account" "gc" {
  account_id   = "proxy-gc"
  display_name = "CollectGarbage: deletes unclaimed proxy VMs"
}

resource "google_service_account" "trigger" {
  account_id   = "proxy-triggers"
  display_name = "Eventarc and Pub/Sub push identity that invokes Reconcile and CollectGarbage"
}

resource "google_service_account" "proxy_vm" {
  account_id   = "proxy-vm"
  display_name = "The proxy VMs themselves: their call-home on proxy-callhome and the engine binary, nothing else"
}

# Each function's account holds one custom role with exactly the
# permissions its calls need, and nothing else on the project. The calls
# and what each needs are deploy/iam.go's table, from Google's
# documentation of each method; a deploy test finds every call in the
# code, by function, and holds these lists equal to what they need. So a
# new call without its permission fails that test, and so does a
# permission no call needs. What a call needs on one resource only
# (publishing on proxy-reconcile, acting as proxy-vm, reading the
# operator's secrets) is granted there, below, not here.
resource "google_project_iam_custom_role" "api" {
  role_id     = "egress_proxy_api"
  title       = "egress ProxyAPI"
  description = "What ProxyAPI calls: Firestore's proxy and namespace documents (deploy/iam.go)."
  permissions = [
    "datastore.databases.get",
    "datastore.entities.create",
    "datastore.entities.delete",
    "datastore.entities.get",
    "datastore.entities.list",
    "datastore.entities.update",
  ]
}

resource "google_project_iam_custom_role" "reconcile" {
  role_id     = "egress_proxy_reconcile"
  title       = "egress Reconcile"
  description = "What Reconcile calls on no VM or address of its own: proxy documents, regions, zone operations, and the network and images a VM uses (deploy/iam.go)."
  permissions = [
    "compute.images.useReadOnly",
    "compute.regions.get",
    "compute.subnetworks.use",
    "compute.subnetworks.useExternalIp",
    "compute.zoneOperations.list",
    "datastore.databases.get",
    "datastore.entities.create",
    "datastore.entities.delete",
    "datastore.entities.get",
    "datastore.entities.list",
    "datastore.entities.update",
    "logging.logEntries.create",
  ]
}

# What Reconcile may do to a VM, its boot disk and its static address:
# bound with local.fleet_condition, so only on the fleet's names.
resource "google_project_iam_custom_role" "reconcile_fleet" {
  role_id     = "egress_proxy_reconcile_fleet"
  title       = "egress Reconcile: the fleet"
  description = "What Reconcile calls on the proxies' VMs, boot disks and static addresses, granted on their names only (deploy/iam.go)."
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
  role_id     = "egress_proxy_gc"
  title       = "egress CollectGarbage"
  description = "What CollectGarbage calls on no VM or address of its own: the lists of proxy documents, VMs and addresses, the daily price refresh's writes of the prices collection, and the budget alerts' record on a namespace, written in a transaction (deploy/iam.go)."
  permissions = [
    "compute.addresses.list",
    "compute.instances.list",
    "datastore.databases.get",
    "datastore.entities.create",
    "datastore.entities.get",
    "datastore.entities.list",
    "datastore.entities.update",
  ]
}

resource "google_project_iam_custom_role" "gc_fleet" {
  role_id     = "egress_proxy_gc_fleet"
  title       = "egress CollectGarbage: the fleet"
  description = "What CollectGarbage calls on the proxies' VMs and static addresses, the deletion of unclaimed ones, granted on their names only (deploy/iam.go)."
  permissions = [
    "compute.addresses.delete",
    "compute.addresses.get",
    "compute.instances.delete",
    "compute.instances.get",
  ]
}

locals {
  project_roles = {
    api       = { member = google_service_account.api.member, role = google_project_iam_custom_role.api.id }
    reconcile = { member = google_service_account.reconcile.member, role = google_project_iam_custom_role.reconcile.id }
    gc        = { member = google_service_account.gc.member, role = google_project_iam_custom_role.gc.id }
  }
}

resource "google_project_iam_member" "roles" {
  for_each = local.project_roles
  project  = var.project_id
  role     = each.value.role
  member   = each.value.member
}

# The functions' rights over VMs, disks and addresses hold only on the
# names the product gives them (provider.NameFromUID: proxy-UUID, or
# proxyh- and a hash), so neither function can touch another VM of the
# project: not read its metadata, not set a startup script on it, not
# delete it. Compute's IAM checks an instance's, disk's or address's own
# permissions on that resource, named
# projects/P/zones/Z/instances/NAME (disks likewise, addresses
# projects/P/regions/R/addresses/NAME), creates included
# (https://cloud.google.com/iam/docs/conditions-resource-attributes). What
# is checked on the project instead (aggregatedList, zone operations) or
# on another resource (the subnetwork, an image) stays in the unconditioned
# roles above: a condition on the name would refuse it outright.
locals {
  # provider.NamePrefixes (a deploy test holds the two equal).
  fleet_name_prefixes = ["proxy-", "proxyh-"]
  fleet_condition = join(" || ", flatten([
    for kind in ["instances", "disks", "addresses"] : [
      for prefix in local.fleet_name_prefixes : "resource.name.extract(\"/${kind}/{name}\").startsWith(\"${prefix}\")"
    ]
  ]))
  fleet_roles = {
    reconcile = { member = google_service_account.reconcile.member, role = google_project_iam_custom_role.reconcile_fleet.id }
    gc        = { member = google_service_account.gc.member, role = google_project_iam_custom_role.gc_fleet.id }
  }
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

# The reconciler reads a spec's cloudInitSecret, and only the secrets under
# the operator's prefix: no project-wide secret access, so no document can
# have another secret of the project written into a VM's metadata. IAM
# names secrets by project number in resource.name; the prefix covers the
# secret and its versions. With no prefix there is no binding at all.
resource "google_project_iam_member" "reconcile_secrets" {
  count   = var.cloud_init_secret_prefix == "" ? 0 : 1
  project = var.project_id
  role    = "roles/secretmanager.secretAccessor"
  member  = google_service_account.reconcile.member
  condition {
    title       = "egress-cloud-init-secrets"
    description = "Only the secrets a proxy's cloudInitSecret may name (CLOUD_INIT_SECRET_PREFIX)."
    expression  = "resource.name.startsWith(\"projects/${data.google_project.this.number}/secrets/${var.cloud_init_secret_prefix}\") && resource.name.extract(\"projects/${data.google_project.this.number}/secrets/${var.cloud_init_secret_prefix}{namespace}_\") != \"\""
  }
}

# Eventarc delivers through the trigger account.
resource "google_project_iam_member" "trigger_receiver" {
  project = var.project_id
  role    = "roles/eventarc.eventReceiver"
  member  = google_service_account.trigger.member
}

# Reconcile and CollectGarbage publish reconcile requests; nothing else
# may. The proxy VMs call home on a topic of their own when their
# self-test ends, and may publish there and nowhere else; Reconcile takes
# from it only what names a proxy's uid. Only VMs that run the default
# bootstrap hold this account: one that runs a spec's own cloud-init has
# none (docs/concepts/vm.md, "Custom cloud-init").
resource "google_pubsub_topic_iam_member" "reconcile_publishers" {
  for_each = {
    reconcile = google_service_account.reconcile.member
    gc        = google_service_account.gc.member
  }
  topic  = google_pubsub_topic.reconcile.id
  role   = "roles/pubsub.publisher"
  member = each.value
}

resource "google_pubsub_topic_iam_member" "callhome_publisher" {
  topic  = google_pubsub_topic.callhome.id
  role   = "roles/pubsub.publisher"
  member = google_service_account.proxy_vm.member
}

# Creating a VM that runs as proxy-vm needs actAs on that account only.
# Deleting one needs no actAs (instances.delete needs
# compute.instances.delete alone), so the collector has none.
resource "google_service_account_iam_member" "reconcile_acts_as_vm" {
  service_account_id = google_service_account.proxy_vm.name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.reconcile.member
}

# The triggers may invoke the event functions; nobody else may.
resource "google_cloud_run_service_iam_member" "trigger_invokes" {
  for_each = {
    reconcile = google_cloudfunctions2_function.reconcile.name
    gc        = google_cloudfunctions2_function.gc.name
  }
  location = var.region
  service  = each.value
  role     = "roles/run.invoker"
  member   = google_service_account.trigger.member
}

# The ProxyAPI is invoked only by the members the platform team names.
resource "google_cloud_run_service_iam_member" "api_invokers" {
  for_each = toset(var.api_invokers)
  location = var.region
  service  = google_cloudfunctions2_function.api.name
  role     = "roles/run.invoker"
  member   = each.value
}

# The proxy VMs read the engine binary, and no other object of the source
# bucket (the functions' archive stays theirs alone).
resource "google_storage_bucket_iam_member" "proxy_vm_engine" {
  bucket = google_storage_bucket.source.name
  role   = "roles/storage.objectViewer"
  member = google_service_account.proxy_vm.member
  condition {
    title      = "proxy-engine-only"
    expression = "resource.name.startsWith(\"projects/_/buckets/${google_storage_bucket.source.name}/objects/egress-proxy-\")"
  }
}
