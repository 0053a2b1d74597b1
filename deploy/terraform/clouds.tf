# The clouds this module deploys proxies to: the one place that names
# them all, as the code's list of clouds does. Everything else a cloud
# needs on Google's side is in its own file (gcp's in main.tf,
# hetzner.tf, aws.tf, digitalocean.tf, azure.tf), as locals this file lists: a new
# cloud is its file and one entry in each list below.
variable "providers_enabled" {
  description = "Provider types the functions may use (PROVIDERS); the first is the default for specs that name none. The mock provider is not deployable: its VMs live in the memory of one function instance, which the others never see."
  type        = list(string)
  default     = ["gcp"]
  validation {
    condition     = length(var.providers_enabled) > 0 && alltrue([for p in var.providers_enabled : contains(["gcp", "hetzner", "aws", "digitalocean", "azure"], p)])
    error_message = "providers_enabled must list one or more of: gcp, hetzner, aws, digitalocean, azure."
  }
}

locals {
  # The clouds whose VMs boot with cloud-init and are asked for their
  # status through the proxy port, when enabled: the public engine
  # binary, the status key and the functions' fixed egress (hetzner.tf)
  # serve them all.
  cloud_init_enabled = local.hetzner_enabled || local.aws_enabled || local.digitalocean_enabled || local.azure_enabled

  # What Reconcile and CollectGarbage read to call the clouds
  # (cloud_init_env: what every cloud-init cloud needs of the control
  # plane), and the policies the ProxyAPI holds each cloud's placements
  # to. A cloud's variables are set whether or not providers_enabled
  # names it; the functions read them only when it does.
  clouds_env     = merge(local.gcp_env, local.cloud_init_env, local.hetzner_env, local.aws_env, local.digitalocean_env, local.azure_env)
  clouds_api_env = merge(local.gcp_api_env, local.hetzner_api_env, local.aws_api_env, local.digitalocean_api_env, local.azure_api_env)

  # Each cloud's refusals on the dashboard (monitoring.tf), one tile per
  # cloud that has any, each placed on the dashboard's grid by its file.
  clouds_dashboard_tiles = [local.hetzner_dashboard_tile, local.aws_dashboard_tile, local.digitalocean_dashboard_tile, local.azure_dashboard_tile]
}
