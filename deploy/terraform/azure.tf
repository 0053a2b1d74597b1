# The azure provider's part on Google's side, used only when
# providers_enabled names azure: what the two functions that call Azure
# read (the subscription, the identity they federate into, the resource
# group, the locations and their subnets, all made by the azure/ module,
# its own root module, applied with your `az login` credentials), the
# ProxyAPI's policy, and what the azure/ module needs from here: the unique
# ids of the functions' accounts, the subjects of its federated
# credentials. No Azure secret is made, stored or read: each function's
# own Google ID token is the client assertion for the identity
# (docs/operations/azure.md). Nothing here is a secret either: the ids
# name things, and grant nothing without a Google token of the functions.
locals {
  azure_enabled = contains(var.providers_enabled, "azure")
  # What the azure provider reads, in the functions that call it: each is
  # the azure/ module's output of the same name, through its variable.
  azure_env = {
    AZURE_SUBSCRIPTION_ID = var.azure_subscription_id
    AZURE_TENANT_ID       = var.azure_tenant_id
    AZURE_CLIENT_ID       = var.azure_client_id
    AZURE_RESOURCE_GROUP  = var.azure_resource_group
    AZURE_LOCATIONS       = join(",", var.azure_locations)
    AZURE_SUBNET_IDS      = join(",", [for l, id in var.azure_subnet_ids : "${l}=${id}"])
  }
  # The azure provider's policy, which the ProxyAPI holds a placement on
  # azure to (read only when it is enabled).
  azure_api_env = {
    AZURE_LOCATIONS = join(",", var.azure_locations)
    AZURE_VM_SIZES  = join(",", var.azure_vm_sizes)
    AZURE_IMAGES    = join(",", var.azure_images)
  }
  # The dashboard's tile of Azure's refusals (monitoring.tf), on the
  # metrics below.
  azure_dashboard_tile = {
    # Azure's refusals: a zone without room or without the size (the
    # next allowed zone or location is tried), ARM's throttling past
    # the SDK's retries (the call waits as long as Retry-After says),
    # and the subscription's quotas (a proxy waits, its status says
    # which; a quota request raises them).
    xPos = 6, yPos = 20, width = 6, height = 4
    widget = {
      title = "Azure: zones out of capacity, throttling and quotas (per 5 minutes)"
      xyChart = {
        dataSets = [
          {
            plotType           = "STACKED_BAR"
            legendTemplate     = "no room in $${metric.labels.zone}"
            minAlignmentPeriod = "300s"
            timeSeriesQuery = {
              timeSeriesFilter = {
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.azure_capacity.name}\" AND ${local.on_cloud_run}"
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
            legendTemplate     = "throttled: $${metric.labels.op}"
            minAlignmentPeriod = "300s"
            timeSeriesQuery = {
              timeSeriesFilter = {
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.azure_throttled.name}\" AND ${local.on_cloud_run}"
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
                filter = "metric.type=\"${local.user_metric}/${google_logging_metric.azure_quota.name}\" AND ${local.on_cloud_run}"
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

# What Azure refuses, for the dashboard: creates a zone had no room for or
# does not offer the size in (SkuNotAvailable, AllocationFailed,
# ZonalAllocationFailed: the provider moves the proxy to the next allowed
# zone or location), by zone; calls ARM throttled (429) past the SDK's
# retries, by operation; and the subscription's quotas reached, by code,
# which only a quota request raises. Zero while no proxy runs on Azure.
resource "google_logging_metric" "azure_capacity" {
  name        = "egress/azure_capacity"
  description = "Azure VM creates refused for capacity (SkuNotAvailable, AllocationFailed, ZonalAllocationFailed), by zone (the azure provider's zone out of capacity line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"azure zone out of capacity\""
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

resource "google_logging_metric" "azure_throttled" {
  name        = "egress/azure_throttled"
  description = "Azure Resource Manager calls throttled (429 with Retry-After) past the SDK's retries, by operation (the azure provider's throttled line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"azure throttled past the retry policy's wait; the call waits\""
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

resource "google_logging_metric" "azure_quota" {
  name        = "egress/azure_quota"
  description = "Azure creates refused for the subscription's quotas (QuotaExceeded, OperationNotAllowed for cores or public IPs), by code (the azure provider's quota line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"azure quota reached\""
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

output "azure_function_account_ids" {
  description = "The unique ids of the service accounts of Reconcile and CollectGarbage, the functions that call Azure: the azure/ module's variable function_account_ids, the subjects of its identity's federated credentials."
  value = {
    reconcile       = google_service_account.reconcile.unique_id
    collect_garbage = google_service_account.gc.unique_id
  }
}

# The azure provider's settings: the first six are the azure/ module's
# outputs (its output main_module_tfvars writes them out).
variable "azure_subscription_id" {
  description = "The Azure subscription the proxies run in (AZURE_SUBSCRIPTION_ID): the azure/ module's output subscription_id. Required when providers_enabled names azure."
  type        = string
  default     = ""
  validation {
    condition     = var.azure_subscription_id == "" || can(regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", var.azure_subscription_id))
    error_message = "azure_subscription_id must be a GUID: the azure/ module's output subscription_id."
  }
}

variable "azure_tenant_id" {
  description = "The Entra tenant of the identity (AZURE_TENANT_ID): the azure/ module's output tenant_id."
  type        = string
  default     = ""
  validation {
    condition     = var.azure_tenant_id == "" || can(regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", var.azure_tenant_id))
    error_message = "azure_tenant_id must be a GUID: the azure/ module's output tenant_id."
  }
}

variable "azure_client_id" {
  description = "The client id of the managed identity the functions federate into (AZURE_CLIENT_ID): the azure/ module's output client_id. An id, not a credential: only the functions' Google ID tokens are taken for it."
  type        = string
  default     = ""
  validation {
    condition     = var.azure_client_id == "" || can(regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", var.azure_client_id))
    error_message = "azure_client_id must be a GUID: the azure/ module's output client_id."
  }
}

variable "azure_resource_group" {
  description = "The resource group of every VM, NIC, disk and public IP (AZURE_RESOURCE_GROUP): the azure/ module's output resource_group, the only scope the functions' role has."
  type        = string
  default     = ""
}

variable "azure_locations" {
  description = "The Azure locations a proxy's placement may name (AZURE_LOCATIONS), such as [\"westeurope\", \"eastus\"]: the azure/ module's output locations, each with its subnet. The collector lists each."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for l in var.azure_locations : can(regex("^[a-z][a-z0-9]{1,39}$", l))])
    error_message = "azure_locations must hold Azure location names such as westeurope or eastus2."
  }
}

variable "azure_subnet_ids" {
  description = "The subnet a VM of each location joins, by location (AZURE_SUBNET_IDS, written location=ID): the azure/ module's output subnet_ids."
  type        = map(string)
  default     = {}
  validation {
    condition     = alltrue([for id in values(var.azure_subnet_ids) : can(regex("^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft.Network/virtualNetworks/[^/]+/subnets/[^/]+$", id))])
    error_message = "azure_subnet_ids must map each location to a subnet's resource id, /subscriptions/S/resourceGroups/G/providers/Microsoft.Network/virtualNetworks/V/subnets/N."
  }
}

variable "azure_vm_sizes" {
  description = "VM sizes a proxy's placement may name (AZURE_VM_SIZES); must hold Standard_B1s, the size of a placement that names none."
  type        = list(string)
  default     = ["Standard_B1s"]
  validation {
    condition     = contains(var.azure_vm_sizes, "Standard_B1s") && alltrue([for s in var.azure_vm_sizes : can(regex("^Standard_[A-Za-z0-9_]+$", s))])
    error_message = "azure_vm_sizes must hold Standard_B1s, and only size names such as Standard_B2s."
  }
}

variable "azure_images" {
  description = "Images a proxy's placement may name, as URNs publisher:offer:sku:version (AZURE_IMAGES); must hold Debian 13's Debian:debian-13:13-gen2:latest, the image of a placement that names none."
  type        = list(string)
  default     = ["Debian:debian-13:13-gen2:latest"]
  validation {
    condition     = contains(var.azure_images, "Debian:debian-13:13-gen2:latest") && alltrue([for i in var.azure_images : can(regex("^[^:]+:[^:]+:[^:]+:[^:]+$", i))])
    error_message = "azure_images must hold Debian:debian-13:13-gen2:latest, and only image URNs publisher:offer:sku:version."
  }
}
