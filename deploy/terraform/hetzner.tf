# The hetzner provider's part, made only when providers_enabled names it:
# the secret that holds the Hetzner Cloud API token, and who may read it.
# Terraform makes the secret and never its value: add the token as a
# version yourself (docs/operations/hetzner.md), so it is in no variable,
# state or plan. Reconcile and CollectGarbage read it, on that one secret
# only; no other account may. The deployment's firewall on Hetzner is a
# module of its own (hetzner-firewall/), which only a Hetzner deployment
# applies: a Google-only one never needs the hcloud provider or a token.
locals {
  hetzner_enabled = contains(var.providers_enabled, "hetzner")
  # What the hetzner provider reads, in the functions that call it; the
  # server types are the collector's daily price refresh's too (the
  # placements it prices).
  hetzner_env = {
    HETZNER_TOKEN_SECRET         = join("", [for s in google_secret_manager_secret.hetzner_token : "${s.id}/versions/latest"])
    HETZNER_ALLOWED_LOCATIONS    = join(",", var.hetzner_allowed_locations)
    HETZNER_ALLOWED_SERVER_TYPES = join(",", var.hetzner_allowed_server_types)
  }
  # The hetzner provider's policy, which the ProxyAPI holds a placement
  # on hetzner to (read only when it is enabled).
  hetzner_api_env = {
    HETZNER_ALLOWED_LOCATIONS    = join(",", var.hetzner_allowed_locations)
    HETZNER_ALLOWED_SERVER_TYPES = join(",", var.hetzner_allowed_server_types)
    HETZNER_ALLOWED_IMAGES       = join(",", var.hetzner_allowed_images)
  }
  # What the VMs of every cloud-init cloud need of the control plane, in
  # the functions that call those clouds (cloud-init's user-data and the
  # status through the proxy port; package vmstatus): the resources
  # below, which cloud_init_enabled makes.
  cloud_init_env = {
    PROXY_ENGINE_PUBLIC_URL = join("", [for o in google_storage_bucket_object.proxy_engine_public : "https://storage.googleapis.com/${o.bucket}/${o.name}"])
    VM_STATUS_KEY_SECRET    = join("", [for s in google_secret_manager_secret.vm_status_key : "${s.id}/versions/latest"])
    VM_STATUS_SOURCE_RANGES = join(",", [for a in google_compute_address.control_egress : "${a.address}/32"])
  }
  # The dashboard's tile of Hetzner's refusals (monitoring.tf), on the
  # metrics below.
  hetzner_dashboard_tile = {
    # Hetzner's refusals, which the provider works around by
    # itself: a location without room (the next location of the
    # network zone is tried) and the rate limit (the call waits).
    # Steady bars mean a location is short of the server type, or
    # the project's 3600 requests an hour are too few for the fleet.
    xPos = 0, yPos = 16, width = 6, height = 4
    widget = {
      title = "Hetzner: locations out of capacity and rate limits (per 5 minutes)"
      xyChart = {
        dataSets = [
          {
            plotType           = "STACKED_BAR"
            legendTemplate     = "no room in $${metric.labels.location}"
            minAlignmentPeriod = "300s"
            timeSeriesQuery = {
              timeSeriesFilter = {
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.hetzner_capacity.name}\" AND ${local.on_cloud_run}"
                aggregation = {
                  alignmentPeriod    = "300s"
                  perSeriesAligner   = "ALIGN_SUM"
                  crossSeriesReducer = "REDUCE_SUM"
                  groupByFields      = ["metric.label.location"]
                }
              }
            }
          },
          {
            plotType           = "STACKED_BAR"
            legendTemplate     = "rate limited: $${metric.labels.op}"
            minAlignmentPeriod = "300s"
            timeSeriesQuery = {
              timeSeriesFilter = {
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.hetzner_rate_limited.name}\" AND ${local.on_cloud_run}"
                aggregation = {
                  alignmentPeriod    = "300s"
                  perSeriesAligner   = "ALIGN_SUM"
                  crossSeriesReducer = "REDUCE_SUM"
                  groupByFields      = ["metric.label.op"]
                }
              }
            }
          },
        ]
        yAxis = { label = "lines", scale = "LINEAR" }
      }
    }
  }
}

resource "google_secret_manager_secret" "hetzner_token" {
  count     = local.hetzner_enabled ? 1 : 0
  secret_id = var.hetzner_token_secret
  labels    = { "egress-deployment" = var.deployment }
  replication {
    auto {}
  }
  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret_iam_member" "hetzner_token_reconcile" {
  count     = local.hetzner_enabled ? 1 : 0
  secret_id = google_secret_manager_secret.hetzner_token[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.reconcile.member
}

resource "google_secret_manager_secret_iam_member" "hetzner_token_gc" {
  count     = local.hetzner_enabled ? 1 : 0
  secret_id = google_secret_manager_secret.hetzner_token[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.gc.member
}

# What Hetzner refuses, for the dashboard: creates a location had no room
# for (the provider moves the proxy to another location of the network
# zone), by location, and calls the rate limit refused (the reconciler
# waits as long as the API said), by operation. Zero while no proxy runs
# on Hetzner.
resource "google_logging_metric" "hetzner_capacity" {
  name        = "egress/hetzner_capacity"
  description = "Hetzner server creates refused for capacity (resource_unavailable, placement_error), by location (the hetzner provider's location out of capacity line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"hetzner location out of capacity\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "location"
      value_type = "STRING"
    }
  }
  label_extractors = { location = "EXTRACT(jsonPayload.location)" }
  depends_on       = [google_project_service.apis]
}

resource "google_logging_metric" "hetzner_rate_limited" {
  name        = "egress/hetzner_rate_limited"
  description = "Hetzner API calls refused for the rate limit (429 rate_limit_exceeded), by operation (the hetzner provider's rate limit line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"hetzner rate limit reached; the call waits\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "op"
      value_type = "STRING"
    }
  }
  label_extractors = { op = "EXTRACT(jsonPayload.op)" }
  depends_on       = [google_project_service.apis]
}

# The key the control plane derives each server's status credential from
# (VM_STATUS_KEY_SECRET; package vmstatus): a server's user-data holds a
# salted hash of its credential, and the functions that read a server's
# status, Reconcile and CollectGarbage, derive the password again from
# this key and the proxy's uid. As with the token, Terraform makes the
# secret and never its value: add 32 random bytes, base64, as a version
# (docs/operations/hetzner.md).
resource "google_secret_manager_secret" "vm_status_key" {
  count     = local.cloud_init_enabled ? 1 : 0
  secret_id = var.vm_status_key_secret
  labels    = { "egress-deployment" = var.deployment }
  replication {
    auto {}
  }
  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret_iam_member" "vm_status_key_reconcile" {
  count     = local.cloud_init_enabled ? 1 : 0
  secret_id = google_secret_manager_secret.vm_status_key[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.reconcile.member
}

resource "google_secret_manager_secret_iam_member" "vm_status_key_gc" {
  count     = local.cloud_init_enabled ? 1 : 0
  secret_id = google_secret_manager_secret.vm_status_key[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.gc.member
}

# The engine binary as a Hetzner server downloads it, with no Google
# credential: a bucket of its own whose objects anyone may read, holding
# the same binary the GCE VMs read from the source bucket
# (PROXY_ENGINE_PUBLIC_URL). It holds nothing secret, and a server checks
# what it downloads against PROXY_ENGINE_SHA256. An organisation policy
# that enforces public access prevention refuses this bucket: put the
# binary where your servers can read it and set the variable yourself.
resource "google_storage_bucket" "engine_public" {
  count                       = local.cloud_init_enabled ? 1 : 0
  name                        = "${var.project_id}-egress-engine-public"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "inherited"
}

resource "google_storage_bucket_iam_member" "engine_public_read" {
  count  = local.cloud_init_enabled ? 1 : 0
  bucket = google_storage_bucket.engine_public[0].name
  role   = "roles/storage.objectViewer"
  member = "allUsers"
}

resource "google_storage_bucket_object" "proxy_engine_public" {
  count  = local.cloud_init_enabled ? 1 : 0
  name   = "egress-proxy-${filesha256(var.proxy_engine_binary)}"
  bucket = google_storage_bucket.engine_public[0].name
  source = var.proxy_engine_binary
}

# The functions' fixed egress address. The control plane reads a VM's
# status through its proxy port, and Hetzner's firewall (the
# hetzner-firewall module), the EC2 instances' security group (the aws/
# module), both from the output status_source_ranges, and the VM itself
# admit only known addresses there; Cloud Run functions
# have none of their own. So Reconcile and CollectGarbage send all their
# egress through a Serverless VPC Access connector into a network of the
# deployment's, and out through a Cloud NAT with one reserved address
# (VM_STATUS_SOURCE_RANGES): their calls to Google's APIs, Hetzner's and
# AWS's go that way too. The ProxyAPI calls no server and keeps its default
# egress.
resource "google_compute_network" "control_egress" {
  count                   = local.cloud_init_enabled ? 1 : 0
  name                    = "egress-control-${var.deployment}"
  auto_create_subnetworks = false
  depends_on              = [google_project_service.apis]
}

resource "google_vpc_access_connector" "control_egress" {
  count         = local.cloud_init_enabled ? 1 : 0
  name          = "egress-ctl-${var.deployment}"
  region        = var.region
  network       = google_compute_network.control_egress[0].name
  ip_cidr_range = var.control_egress_connector_range
  min_instances = 2
  max_instances = 3
  depends_on    = [google_project_service.apis]
}

resource "google_compute_address" "control_egress" {
  count        = local.cloud_init_enabled ? 1 : 0
  name         = "egress-control-${var.deployment}"
  region       = var.region
  address_type = "EXTERNAL"
  depends_on   = [google_project_service.apis]
}

resource "google_compute_router" "control_egress" {
  count   = local.cloud_init_enabled ? 1 : 0
  name    = "egress-control-${var.deployment}"
  region  = var.region
  network = google_compute_network.control_egress[0].id
}

resource "google_compute_router_nat" "control_egress" {
  count                              = local.cloud_init_enabled ? 1 : 0
  name                               = "egress-control-${var.deployment}"
  router                             = google_compute_router.control_egress[0].name
  region                             = var.region
  nat_ip_allocate_option             = "MANUAL_ONLY"
  nat_ips                            = [google_compute_address.control_egress[0].self_link]
  source_subnetwork_ip_ranges_to_nat = "ALL_SUBNETWORKS_ALL_IP_RANGES"
}

# The hetzner provider's settings.
variable "hetzner_token_secret" {
  description = "The id of the Secret Manager secret Terraform makes for the Hetzner Cloud API token (a read & write token of the Hetzner project), when providers_enabled names hetzner; you add its value as a version (HETZNER_TOKEN_SECRET names its latest)."
  type        = string
  default     = "egress-hetzner-token"
  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,255}$", var.hetzner_token_secret))
    error_message = "hetzner_token_secret must be a secret id: letters, digits, '-' and '_'."
  }
}

variable "hetzner_allowed_locations" {
  description = "Hetzner locations a proxy's placement may name or be given (HETZNER_ALLOWED_LOCATIONS): fsn1, nbg1, hel1, ash, hil, sin; empty allows every location."
  type        = list(string)
  default     = []
}

variable "hetzner_allowed_server_types" {
  description = "Hetzner server types a proxy's placement may name (HETZNER_ALLOWED_SERVER_TYPES); must hold cx23, the type of a placement that names none."
  type        = list(string)
  default     = ["cx23", "cx33", "cpx22"]
}

variable "hetzner_allowed_images" {
  description = "Hetzner images a proxy's placement may name (HETZNER_ALLOWED_IMAGES); must hold debian-13, the image of a placement that names none."
  type        = list(string)
  default     = ["debian-13", "debian-12"]
}
