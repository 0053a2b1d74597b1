# The aws provider's part on Google's side, used only when
# providers_enabled names aws: what the two functions that call EC2 read
# (the role they assume, the audience of the ID tokens they exchange for
# its credentials, the regions and zones they may use), and what the AWS
# side (the aws/ module, its own root module, applied with AWS
# credentials) needs from here: the audience and the unique ids of the
# functions' accounts, the only identities the role trusts. No AWS key
# is made, stored or read: the functions' own Google identities are the
# proof (docs/operations/aws.md).
locals {
  aws_enabled = contains(var.providers_enabled, "aws")
  # The audience of the functions' ID tokens for AWS: this project's and
  # deployment's, so no other deployment's token is one the role trusts.
  aws_audience = "https://egress-proxies.${var.project_id}.${var.deployment}/aws"
  # The role the aws/ module makes, by its predictable ARN: the AWS side
  # is applied after this module, from its outputs.
  aws_role_arn = var.aws_account_id == "" ? "" : "arn:aws:iam::${var.aws_account_id}:role/egress-proxy-${var.deployment}"
  # What the aws provider reads, in the functions that call it; the
  # instance types are the collector's daily price refresh's too (the
  # placements it prices).
  aws_env = {
    AWS_ALLOWED_REGIONS        = join(",", var.aws_allowed_regions)
    AWS_ALLOWED_ZONES          = join(",", var.aws_allowed_zones)
    AWS_ALLOWED_INSTANCE_TYPES = join(",", var.aws_allowed_instance_types)
    AWS_ROLE_ARN               = local.aws_role_arn
    AWS_AUDIENCE               = local.aws_audience
  }
  # The aws provider's policy, which the ProxyAPI holds a placement on
  # aws to (read only when it is enabled).
  aws_api_env = {
    AWS_ALLOWED_REGIONS        = join(",", var.aws_allowed_regions)
    AWS_ALLOWED_ZONES          = join(",", var.aws_allowed_zones)
    AWS_ALLOWED_INSTANCE_TYPES = join(",", var.aws_allowed_instance_types)
    AWS_ALLOWED_IMAGES         = join(",", var.aws_allowed_images)
  }
  # The dashboard's tile of EC2's refusals (monitoring.tf), on the
  # metrics below.
  aws_dashboard_tile = {
    # EC2's refusals: a zone without room or without the type (the
    # next zone of the region is tried), the request rate past the
    # SDK's retries (the call waits), and the account's limits (a
    # proxy waits, its status says which; only AWS raises them).
    xPos = 6, yPos = 16, width = 6, height = 4
    widget = {
      title = "AWS: zones out of capacity, rate limits and quotas (per 5 minutes)"
      xyChart = {
        dataSets = [
          {
            plotType           = "STACKED_BAR"
            legendTemplate     = "no room in $${metric.labels.zone}"
            minAlignmentPeriod = "300s"
            timeSeriesQuery = {
              timeSeriesFilter = {
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.aws_capacity.name}\" AND ${local.on_cloud_run}"
                aggregation = {
                  alignmentPeriod    = "300s"
                  perSeriesAligner   = "ALIGN_SUM"
                  crossSeriesReducer = "REDUCE_SUM"
                  groupByFields      = ["metric.label.zone"]
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
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.aws_rate_limited.name}\" AND ${local.on_cloud_run}"
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
            legendTemplate     = "quota: $${metric.labels.code}"
            minAlignmentPeriod = "300s"
            timeSeriesQuery = {
              timeSeriesFilter = {
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.aws_quota.name}\" AND ${local.on_cloud_run}"
                aggregation = {
                  alignmentPeriod    = "300s"
                  perSeriesAligner   = "ALIGN_SUM"
                  crossSeriesReducer = "REDUCE_SUM"
                  groupByFields      = ["metric.label.code"]
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

output "aws_audience" {
  description = "The audience of the functions' Google ID tokens for AWS (AWS_AUDIENCE): the aws/ module's variable audience."
  value       = local.aws_audience
}

output "aws_function_account_ids" {
  description = "The unique ids of the service accounts of Reconcile and CollectGarbage, the functions that call EC2: the aws/ module's variable function_account_ids, the only subjects its role trusts."
  value       = [google_service_account.reconcile.unique_id, google_service_account.gc.unique_id]
}

# What EC2 refuses, for the dashboard: launches a zone had no room for or
# does not offer the type for (the provider moves the proxy to another
# zone of the region), by zone; calls RequestLimitExceeded refused past
# the SDK's retries, by operation; and the account's limits reached
# (InstanceLimitExceeded, VcpuLimitExceeded, AddressLimitExceeded), by
# code, which only AWS raises (Service Quotas). Zero while no proxy runs
# on AWS.
resource "google_logging_metric" "aws_capacity" {
  name        = "egress/aws_capacity"
  description = "EC2 launches refused for capacity (InsufficientInstanceCapacity, Unsupported), by availability zone (the aws provider's zone out of capacity line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"aws zone out of capacity\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "zone"
      value_type = "STRING"
    }
  }
  label_extractors = { zone = "EXTRACT(jsonPayload.zone)" }
  depends_on       = [google_project_service.apis]
}

resource "google_logging_metric" "aws_rate_limited" {
  name        = "egress/aws_rate_limited"
  description = "EC2 calls refused for the request rate (RequestLimitExceeded) after the SDK's retries, by operation (the aws provider's request limit line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"aws request limit reached; the call waits\""
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

resource "google_logging_metric" "aws_quota" {
  name        = "egress/aws_quota"
  description = "EC2 launches and allocations refused for the account's limits (InstanceLimitExceeded, VcpuLimitExceeded, AddressLimitExceeded), by code (the aws provider's quota line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"aws quota reached\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "code"
      value_type = "STRING"
    }
  }
  label_extractors = { code = "EXTRACT(jsonPayload.code)" }
  depends_on       = [google_project_service.apis]
}

# The aws provider's settings.
variable "aws_account_id" {
  description = "The AWS account the aws provider's role is in (its 12 digits), when providers_enabled names aws: AWS_ROLE_ARN is arn:aws:iam::ACCOUNT:role/egress-proxy-DEPLOYMENT, which the aws/ module makes."
  type        = string
  default     = ""
  validation {
    condition     = var.aws_account_id == "" || can(regex("^[0-9]{12}$", var.aws_account_id))
    error_message = "aws_account_id must be an AWS account id: 12 digits."
  }
}

variable "aws_allowed_regions" {
  description = "AWS regions a proxy's placement may name (AWS_ALLOWED_REGIONS), such as [\"us-east-1\", \"eu-central-1\"]; required when providers_enabled names aws: the collector lists each, and the aws/ module makes the security group in each."
  type        = list(string)
  default     = []
}

variable "aws_allowed_zones" {
  description = "Availability zones a proxy's placement may name or be given (AWS_ALLOWED_ZONES), each of an allowed region; empty allows every zone of the allowed regions."
  type        = list(string)
  default     = []
}

variable "aws_allowed_instance_types" {
  description = "EC2 instance types a proxy's placement may name (AWS_ALLOWED_INSTANCE_TYPES); must hold t3.micro, the type of a placement that names none."
  type        = list(string)
  default     = ["t3.micro", "t3.small", "t3a.micro", "t3a.small"]
}

variable "aws_allowed_images" {
  description = "Images a proxy's placement may name (AWS_ALLOWED_IMAGES): Debian releases (debian-13, debian-12), resolved per region to Debian's newest official AMI, or AMI ids; must hold debian-13."
  type        = list(string)
  default     = ["debian-13", "debian-12"]
}
