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
  # What the aws provider reads, in the functions that call it.
  aws_env = {
    AWS_ALLOWED_REGIONS = join(",", var.aws_allowed_regions)
    AWS_ALLOWED_ZONES   = join(",", var.aws_allowed_zones)
    AWS_ROLE_ARN        = local.aws_role_arn
    AWS_AUDIENCE        = local.aws_audience
  }
  # The aws provider's policy, which the ProxyAPI holds a placement on
  # aws to (read only when it is enabled).
  aws_api_env = {
    AWS_ALLOWED_REGIONS        = join(",", var.aws_allowed_regions)
    AWS_ALLOWED_ZONES          = join(",", var.aws_allowed_zones)
    AWS_ALLOWED_INSTANCE_TYPES = join(",", var.aws_allowed_instance_types)
    AWS_ALLOWED_IMAGES         = join(",", var.aws_allowed_images)
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
