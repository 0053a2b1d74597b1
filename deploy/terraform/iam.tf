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
  display_name = "The proxy VMs themselves: logs, metrics, and their call-home on proxy-callhome"
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
  description = "What Reconcile calls: proxy documents, and the VMs and static addresses of proxies (deploy/iam.go)."
  permissions = [
    "compute.addresses.create",
    "compute.addresses.delete",
    "compute.addresses.get",
    "compute.addresses.use",
    "compute.disks.create",
    "compute.images.useReadOnly",
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.getGuestAttributes",
    "compute.instances.getSerialPortOutput",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setServiceAccount",
    "compute.instances.setTags",
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
  ]
}

resource "google_project_iam_custom_role" "gc" {
  role_id     = "egress_proxy_gc"
  title       = "egress CollectGarbage"
  description = "What CollectGarbage calls: lists of proxy documents, VMs and addresses, and the deletion of unclaimed ones (deploy/iam.go)."
  permissions = [
    "compute.addresses.delete",
    "compute.addresses.get",
    "compute.addresses.list",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.list",
    "datastore.entities.get",
    "datastore.entities.list",
  ]
}

locals {
  project_roles = {
    api        = { member = google_service_account.api.member, role = google_project_iam_custom_role.api.id }
    reconcile  = { member = google_service_account.reconcile.member, role = google_project_iam_custom_role.reconcile.id }
    gc         = { member = google_service_account.gc.member, role = google_project_iam_custom_role.gc.id }
    vm_logs    = { member = google_service_account.proxy_vm.member, role = "roles/logging.logWriter" }
    vm_metrics = { member = google_service_account.proxy_vm.member, role = "roles/monitoring.metricWriter" }
  }
}

resource "google_project_iam_member" "roles" {
  for_each = local.project_roles
  project  = var.project_id
  role     = each.value.role
  member   = each.value.member
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
