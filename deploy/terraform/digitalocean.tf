# The digitalocean provider's part on Google's side, made only when
# providers_enabled names digitalocean: the secret that holds the
# DigitalOcean API token and who may read it, what the functions read,
# the provider's refusals for the dashboard, and its settings. Terraform
# makes the secret and never its value: add the token as a version
# yourself (docs/operations/digitalocean.md), so it is in no variable,
# state or plan. Reconcile and CollectGarbage read it, on that one secret
# only; no other account may.
#
# No module of DigitalOcean's own, applied with its credentials: the
# provider makes the deployment's cloud firewall itself, through
# the API with the same token, before its first Droplet, and puts its
# rules back when they differ (internal/provider/digitalocean, firewall.go),
# from the settings the GCE rule and the API have (proxy_ports,
# allowed_source_ranges) and the functions' fixed egress. A Google-only
# deployment never needs a DigitalOcean token.
locals {
  digitalocean_enabled = contains(var.providers_enabled, "digitalocean")
  # What the digitalocean provider reads, in the functions that call it;
  # the sizes are the collector's daily price refresh's too (the
  # placements it prices).
  digitalocean_env = {
    DIGITALOCEAN_TOKEN_SECRET    = join("", [for s in google_secret_manager_secret.digitalocean_token : "${s.id}/versions/latest"])
    DIGITALOCEAN_ALLOWED_REGIONS = join(",", var.digitalocean_allowed_regions)
    DIGITALOCEAN_ALLOWED_SIZES   = join(",", var.digitalocean_allowed_sizes)
    DIGITALOCEAN_SSH_KEYS        = join(",", var.digitalocean_ssh_keys)
    # What the deployment's cloud firewall opens, which the provider
    # makes: the proxy ports from the allowed ranges, the ProxyAPI's
    # PROXY_PORTS and FIREWALL_SOURCE_RANGES from the same variables (and
    # from VM_STATUS_SOURCE_RANGES, cloud_init_env, for the status
    # request).
    PROXY_PORTS            = join(",", var.proxy_ports)
    FIREWALL_SOURCE_RANGES = join(",", var.allowed_source_ranges)
  }
  # The digitalocean provider's policy, which the ProxyAPI holds a
  # placement on digitalocean to (read only when it is enabled).
  digitalocean_api_env = {
    DIGITALOCEAN_ALLOWED_REGIONS = join(",", var.digitalocean_allowed_regions)
    DIGITALOCEAN_ALLOWED_SIZES   = join(",", var.digitalocean_allowed_sizes)
    DIGITALOCEAN_ALLOWED_IMAGES  = join(",", var.digitalocean_allowed_images)
  }
  # The dashboard's tile of DigitalOcean's refusals (monitoring.tf), on
  # the metrics below: a region without room for the size (the next
  # region of the metro is tried), the rate limit (the call waits as long
  # as ratelimit-reset says), and the account's Droplet or reserved IP
  # limit (a proxy waits, its status names the limit). Steady bars mean a
  # region is short of the size, the account's 5,000 requests an hour
  # are too few for the fleet, or the account needs a higher limit.
  digitalocean_dashboard_tile = {
    xPos = 0, yPos = 20, width = 6, height = 4
    widget = {
      title = "DigitalOcean: regions out of capacity, rate limits and account limits (per 5 minutes)"
      xyChart = {
        dataSets = [
          {
            plotType           = "STACKED_BAR"
            legendTemplate     = "no room in $${metric.labels.region}"
            minAlignmentPeriod = "300s"
            timeSeriesQuery = {
              timeSeriesFilter = {
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.digitalocean_capacity.name}\" AND ${local.on_cloud_run}"
                aggregation = {
                  alignmentPeriod    = "300s"
                  perSeriesAligner   = "ALIGN_SUM"
                  crossSeriesReducer = "REDUCE_SUM"
                  groupByFields      = ["metric.label.region"]
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
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.digitalocean_rate_limited.name}\" AND ${local.on_cloud_run}"
                aggregation = {
                  alignmentPeriod    = "300s"
                  perSeriesAligner   = "ALIGN_SUM"
                  crossSeriesReducer = "REDUCE_SUM"
                  groupByFields      = ["metric.label.op"]
                }
              }
            }
          },
          {
            plotType           = "STACKED_BAR"
            legendTemplate     = "account limit"
            minAlignmentPeriod = "300s"
            timeSeriesQuery = {
              timeSeriesFilter = {
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.digitalocean_quota.name}\" AND ${local.on_cloud_run}"
                aggregation = {
                  alignmentPeriod    = "300s"
                  perSeriesAligner   = "ALIGN_SUM"
                  crossSeriesReducer = "REDUCE_SUM"
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

resource "google_secret_manager_secret" "digitalocean_token" {
  count     = local.digitalocean_enabled ? 1 : 0
  secret_id = var.digitalocean_token_secret
  labels    = { "egress-deployment" = var.deployment }
  replication {
    auto {}
  }
  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret_iam_member" "digitalocean_token_reconcile" {
  count     = local.digitalocean_enabled ? 1 : 0
  secret_id = google_secret_manager_secret.digitalocean_token[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.reconcile.member
}

resource "google_secret_manager_secret_iam_member" "digitalocean_token_gc" {
  count     = local.digitalocean_enabled ? 1 : 0
  secret_id = google_secret_manager_secret.digitalocean_token[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.gc.member
}

# What DigitalOcean refuses, for the dashboard: creates a region had no
# room for (the provider moves the proxy to another region of the metro),
# by region; calls the rate limit refused (429: the reconciler waits as
# long as ratelimit-reset says), by operation; and creates past the
# account's Droplet or reserved IP limit, which the reconciler's quota
# line (and its alert) counts too, without naming the cloud. Zero while
# no proxy runs on DigitalOcean.
resource "google_logging_metric" "digitalocean_capacity" {
  name        = "egress/digitalocean_capacity"
  description = "DigitalOcean Droplet creates refused for capacity (the size or the region not available), by region (the digitalocean provider's region out of capacity line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"digitalocean region out of capacity\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "region"
      value_type = "STRING"
    }
  }
  label_extractors = { region = "EXTRACT(jsonPayload.region)" }
  depends_on       = [google_project_service.apis]
}

resource "google_logging_metric" "digitalocean_rate_limited" {
  name        = "egress/digitalocean_rate_limited"
  description = "DigitalOcean API calls refused for the rate limit (429), by operation (the digitalocean provider's rate limit line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"digitalocean rate limit reached; the call waits\""
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

# No label: the line names the Droplet (a label per proxy would be a
# series per proxy) and the limit is in its error, which the Logs
# Explorer shows.
resource "google_logging_metric" "digitalocean_quota" {
  name        = "egress/digitalocean_quota"
  description = "DigitalOcean creates refused for the account's Droplet or reserved IP limit (the digitalocean provider's account limit line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"digitalocean account limit reached\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
  }
  depends_on = [google_project_service.apis]
}

# The digitalocean provider's settings.
variable "digitalocean_token_secret" {
  description = "The id of the Secret Manager secret Terraform makes for the DigitalOcean API token (a custom-scoped token: docs/operations/digitalocean.md), when providers_enabled names digitalocean; you add its value as a version (DIGITALOCEAN_TOKEN_SECRET names its latest)."
  type        = string
  default     = "egress-digitalocean-token"
  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,255}$", var.digitalocean_token_secret))
    error_message = "digitalocean_token_secret must be a secret id: letters, digits, '-' and '_'."
  }
}

variable "digitalocean_allowed_regions" {
  description = "DigitalOcean regions (slugs such as nyc3, ams3, fra1) a proxy's placement may name as its zone or be given within its metro (DIGITALOCEAN_ALLOWED_REGIONS); empty allows every region that takes new Droplets. The provider refuses at start-up a slug it does not know."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for r in var.digitalocean_allowed_regions : can(regex("^[a-z]{3}[0-9]$", r))])
    error_message = "digitalocean_allowed_regions must hold region slugs such as nyc3 or ams3 (a metro such as nyc is a placement's region, not an entry here)."
  }
}

variable "digitalocean_allowed_sizes" {
  description = "Droplet sizes a proxy's placement may name (DIGITALOCEAN_ALLOWED_SIZES); must hold s-1vcpu-1gb, the size of a placement that names none."
  type        = list(string)
  default     = ["s-1vcpu-1gb", "s-1vcpu-2gb", "s-2vcpu-2gb"]
  validation {
    condition     = contains(var.digitalocean_allowed_sizes, "s-1vcpu-1gb") && alltrue([for s in var.digitalocean_allowed_sizes : can(regex("^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$", s))])
    error_message = "digitalocean_allowed_sizes must hold s-1vcpu-1gb, and only size slugs such as s-2vcpu-2gb."
  }
}

variable "digitalocean_allowed_images" {
  description = "Droplet images a proxy's placement may name, by DigitalOcean's slugs (DIGITALOCEAN_ALLOWED_IMAGES); must hold debian-13-x64, the image of a placement that names none."
  type        = list(string)
  default     = ["debian-13-x64", "debian-12-x64"]
  validation {
    condition     = contains(var.digitalocean_allowed_images, "debian-13-x64") && alltrue([for i in var.digitalocean_allowed_images : can(regex("^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$", i))])
    error_message = "digitalocean_allowed_images must hold debian-13-x64, and only image slugs such as debian-12-x64."
  }
}

variable "digitalocean_ssh_keys" {
  description = "Ids or fingerprints of SSH keys of the DigitalOcean account to put on every Droplet (DIGITALOCEAN_SSH_KEYS); optional. Without one, DigitalOcean mails a root password for each Droplet made; with or without, the Droplet's own filter admits no SSH."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for k in var.digitalocean_ssh_keys : can(regex("^([0-9]+|[0-9a-f]{2}(:[0-9a-f]{2}){15})$", k))])
    error_message = "digitalocean_ssh_keys must hold SSH key ids (digits) or MD5 fingerprints such as 3b:16:bf:e4:8b:00:8b:b8:59:8c:a9:d3:f0:19:45:fa."
  }
}
