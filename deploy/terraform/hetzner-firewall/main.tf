# The deployment's firewall on Hetzner Cloud: one firewall, applied by
# label selector to every server of the deployment (the labels the hetzner
# provider gives each in its create call), so a server is behind it from
# its first boot. It opens the proxy ports to the sources the ProxyAPI
# holds every spec to, from the same variables the main module gives the
# GCE rule and the functions (proxy_ports, allowed_source_ranges): run it
# with the main module's variables file (docs/operations/hetzner.md), and
# the two clouds open the same. Each server narrows that further on the
# host (allowedSourceRanges). Its own root module: a Google-only
# deployment never needs the hcloud provider or a Hetzner token. The
# provider reads the token from HCLOUD_TOKEN.
terraform {
  required_version = ">= 1.6"
  required_providers {
    hcloud = {
      source  = "hetznercloud/hcloud"
      version = ">= 1.45, < 2.0"
    }
  }
}

provider "hcloud" {}

variable "deployment" {
  description = "The deployment's name (DEPLOYMENT), as in the main module: the servers the firewall applies to carry it as the label egress-deployment."
  type        = string
  default     = "egress"
}

variable "proxy_ports" {
  description = "TCP ports (or ranges such as \"3128-3130\") to open, as in the main module (PROXY_PORTS)."
  type        = list(string)
  default     = ["3128"]
}

variable "allowed_source_ranges" {
  description = "CIDRs that may reach them, as in the main module (FIREWALL_SOURCE_RANGES)."
  type        = list(string)
  validation {
    condition     = length(var.allowed_source_ranges) > 0 && alltrue([for r in var.allowed_source_ranges : can(cidrhost(r, 0))])
    error_message = "allowed_source_ranges must hold at least one valid CIDR."
  }
}

variable "status_source_ranges" {
  description = "The control plane's egress addresses (the main module's output status_source_ranges): opened to the proxy ports too, where each server answers them its status and nothing else."
  type        = list(string)
  validation {
    condition     = length(var.status_source_ranges) > 0 && alltrue([for r in var.status_source_ranges : can(cidrhost(r, 0))])
    error_message = "status_source_ranges must hold at least one valid CIDR: the main module's output status_source_ranges."
  }
}

resource "hcloud_firewall" "proxy" {
  name   = "egress-proxy-allow-${var.deployment}"
  labels = { "egress-deployment" = var.deployment }
  dynamic "rule" {
    for_each = var.proxy_ports
    content {
      direction  = "in"
      protocol   = "tcp"
      port       = rule.value
      source_ips = var.allowed_source_ranges
    }
  }
  # SOCKS5's UDP relay listens on its proxy port's number (spec.socks5UDP);
  # where no proxy turned it on, the VM's own filter drops the datagrams.
  dynamic "rule" {
    for_each = var.proxy_ports
    content {
      direction  = "in"
      protocol   = "udp"
      port       = rule.value
      source_ips = var.allowed_source_ranges
    }
  }
  # The control plane's status request: the server's engine answers these
  # addresses the status alone (vmconfig.StatusAccess).
  dynamic "rule" {
    for_each = var.proxy_ports
    content {
      direction  = "in"
      protocol   = "tcp"
      port       = rule.value
      source_ips = var.status_source_ranges
    }
  }
  apply_to {
    label_selector = "proxy-operator-managed=true,egress-deployment=${var.deployment}"
  }
}
