# The APIs the system uses. disable_on_destroy is off: turning an API off
# would break anything else in the project that uses it.
locals {
  services = [
    "artifactregistry.googleapis.com",
    "cloudbilling.googleapis.com",
    "cloudbuild.googleapis.com",
    "cloudfunctions.googleapis.com",
    "cloudkms.googleapis.com",
    "cloudscheduler.googleapis.com",
    "compute.googleapis.com",
    "eventarc.googleapis.com",
    "firestore.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
    "vpcaccess.googleapis.com",
  ]

  # What every function reads (internal/app's table of variables; the
  # deploy tests hold each function's environment to it).
  common_env = {
    GOOGLE_CLOUD_PROJECT = var.project_id
    PROVIDERS            = join(",", var.providers_enabled)
    DEFAULT_PROVIDER     = var.providers_enabled[0]
    LOG_LEVEL            = var.log_level
    LOG_FORMAT           = "json"
  }
  # The key of the proxies' credentials (kms.tf), for the two functions
  # that read and write them.
  credentials_env = {
    CREDENTIALS_KEY = google_kms_crypto_key.credentials.id
  }
  # The secrets a spec's cloudInitSecret may name: the API refuses others,
  # the reconciler reads no other, and its IAM binding (iam.tf) is
  # conditioned on the same variable. Empty: none.
  cloud_init_secret_prefix = var.cloud_init_secret_prefix == "" ? "" : "projects/${var.project_id}/secrets/${var.cloud_init_secret_prefix}"
  # What the ProxyAPI reads: who the admins are, and what the operator
  # allows of every spec (each cloud's placements: clouds_api_env,
  # functions.tf). The ports and sources are what the firewall rule below
  # opens, from the same variables: the API refuses a spec no client
  # could reach.
  api_env = {
    NAMESPACE_QUOTA            = tostring(var.namespace_quota)
    NAMESPACE_CREATES_PER_HOUR = tostring(var.namespace_creates_per_hour)
    ROTATE_MIN_INTERVAL        = var.rotate_min_interval
    API_ADMINS                 = join(",", var.api_admins)
    ALLOW_CUSTOM_CLOUD_INIT    = tostring(var.allow_custom_cloud_init)
    CLOUD_INIT_SECRET_PREFIX   = local.cloud_init_secret_prefix
    MIN_SOURCE_PREFIX_IPV4     = tostring(var.min_source_prefix_ipv4)
    MIN_SOURCE_PREFIX_IPV6     = tostring(var.min_source_prefix_ipv6)
    ALLOW_ANY_SOURCE           = tostring(var.allow_any_source)
    PROXY_PORTS                = join(",", var.proxy_ports)
    FIREWALL_SOURCE_RANGES     = join(",", var.allowed_source_ranges)
    IAP_AUDIENCE               = local.iap_audience
  }
  # What costs are shown and budgets held in, and the deployment's dated
  # conversion rates: the ProxyAPI (budgets) and Reconcile (status.cost)
  # read them alike.
  cost_env = {
    COST_CURRENCY = var.cost_currency
    COST_RATES    = join(",", var.cost_rates)
  }
  # The audience IAP signs its header with for the API's Cloud Run service
  # (IAP for Cloud Run: /projects/NUMBER/locations/REGION/services/NAME);
  # empty, the console is off and the API takes no IAP assertion.
  iap_audience = var.console_enabled ? "/projects/${data.google_project.this.number}/locations/${var.region}/services/proxy-api" : ""
  # What the functions that call providers read, whichever provider: the
  # deployment whose resources are theirs.
  provider_env = {
    DEPLOYMENT   = var.deployment
    PACING_SCALE = tostring(var.pacing_scale)
  }
  # The gcp provider's policy, which the ProxyAPI holds a placement on
  # gcp to.
  gcp_api_env = {
    GCP_ALLOWED_REGIONS       = join(",", var.gcp_allowed_regions)
    GCP_ALLOWED_MACHINE_TYPES = join(",", var.gcp_allowed_machine_types)
    GCP_ALLOWED_IMAGES        = join(",", var.gcp_allowed_images)
    # Whether VMs get an IPv6 prefix, for spec.ipv6Egress.
    GCP_SUBNETWORK = var.subnetwork
    GCP_STACK_TYPE = var.proxy_stack_type
  }
  # What the gcp provider reads, in the functions that call it; the
  # regions and machine types are the collector's daily price refresh's
  # too (the placements it prices).
  gcp_env = {
    GCP_ALLOWED_REGIONS       = join(",", var.gcp_allowed_regions)
    GCP_ALLOWED_MACHINE_TYPES = join(",", var.gcp_allowed_machine_types)
    GCP_PROJECT               = var.project_id
    GCP_NETWORK               = local.proxy_network
    GCP_SUBNETWORK            = var.subnetwork
    GCP_STACK_TYPE            = var.proxy_stack_type
    GCP_NETWORK_TAG           = var.proxy_network_tag
    GCP_SERVICE_ACCOUNT       = google_service_account.proxy_vm.email
    GCP_SCOPES                = join(",", var.proxy_vm_scopes)
    GCP_PROBE_TARGET          = var.probe_target
    PROXY_ENGINE_URL          = "https://storage.googleapis.com/${google_storage_bucket.source.name}/${google_storage_bucket_object.proxy_engine.name}"
    PROXY_ENGINE_SHA256       = filesha256(var.proxy_engine_binary)
  }
}

resource "google_project_service" "apis" {
  for_each           = toset(local.services)
  service            = each.value
  disable_on_destroy = false
}

data "google_project" "this" {}

# Firestore in Native mode holds namespaces/{namespace}/proxies/{proxy}.
resource "google_firestore_database" "default" {
  name        = "(default)"
  location_id = var.firestore_location
  type        = "FIRESTORE_NATIVE"
  depends_on  = [google_project_service.apis]
}

# The sweep's collection-group query on the reconciler's progress time
# (internal/store.Stalled).
resource "google_firestore_field" "progress_time" {
  database   = google_firestore_database.default.name
  collection = "proxies"
  field      = "reconciler.progressTime"
  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
  }
}

# The call-home token buckets expire a day after their last take
# (internal/store.CallHomeBucketTTL): a bucket that old is full, as a new
# one is, and without the policy the bucket of every VM ever made would
# stay. Not indexed: no query reads the field, and an index of
# timestamps that all move forward is a write hot spot.
resource "google_firestore_field" "callhome_expiry" {
  database   = google_firestore_database.default.name
  collection = "callhomes"
  field      = "expireAt"
  ttl_config {}
  index_config {}
}

# The access pull's collection-group query on the uid, which finds the
# proxy of a VM read by pull once, when it is first seen
# (internal/store.ProxyOfUID). Naming the field's indexes replaces the
# automatic ones, so the collection's own ascending index is kept beside.
resource "google_firestore_field" "proxy_uid" {
  database   = google_firestore_database.default.name
  collection = "proxies"
  field      = "uid"
  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION"
    }
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
  }
}

# The proxies' network. By default the deployment's own, made here: an
# auto-mode network (a subnet in every region, a route to the internet)
# with no firewall rule but the ones below. A project's default network
# carries default-allow-ssh, -rdp and -icmp from anywhere and
# default-allow-internal from its other VMs; a proxy is a host on the
# internet that other tenants' traffic passes through, and it should
# share neither those rules nor a private network with the project's
# other machines. An operator who names a network (a custom-mode one, for
# IPv6) keeps that choice, and the deny rules below hold the proxies there
# too.
locals {
  proxy_network = var.network != "" ? var.network : "egress-proxies-${var.deployment}"
}

resource "google_compute_network" "proxies" {
  count                   = var.network == "" ? 1 : 0
  name                    = local.proxy_network
  description             = "The egress proxies' VMs of deployment ${var.deployment}: no rule but the deployment's (egress-proxy-allow*, egress-proxy-deny*)."
  auto_create_subnetworks = true
  depends_on              = [google_project_service.apis]
}

# The firewall rules that open the proxy ports of proxy VMs, by tag: one
# per address family per deployment, to which the API holds every spec, so
# the functions need no right over firewalls. Two, since a VPC firewall
# rule holds IPv4 or IPv6 source ranges, never both
# (https://cloud.google.com/firewall/docs/using-firewalls); a family with
# no range gets no rule, and the deny rules below keep it out. The IPv6
# rule matters only to VMs with an IPv6 address (proxy_stack_type
# IPV4_IPV6).
locals {
  proxy_source_ranges = {
    ipv4 = [for r in var.allowed_source_ranges : r if !can(regex(":", r))]
    ipv6 = [for r in var.allowed_source_ranges : r if can(regex(":", r))]
  }
  # Lower numbers win. The proxy ports' rules win over the deny rules, and
  # the deny rules over every rule a network is made with (Google's
  # default-allow-* rules are at 65534) and over the implied allow of
  # nothing: whatever else the network holds at a lower precedence, a proxy
  # takes the proxy ports and nothing else.
  proxy_allow_priority = 1000
  proxy_deny_priority  = 65000
}

resource "google_compute_firewall" "proxy" {
  for_each      = { for family, ranges in local.proxy_source_ranges : family => ranges if length(ranges) > 0 }
  name          = each.key == "ipv4" ? "egress-proxy-allow" : "egress-proxy-allow-${each.key}"
  network       = local.proxy_network
  direction     = "INGRESS"
  priority      = local.proxy_allow_priority
  source_ranges = each.value
  target_tags   = [var.proxy_network_tag]
  allow {
    protocol = "tcp"
    ports    = var.proxy_ports
  }
  # SOCKS5's UDP relay listens on its proxy port's number (spec.socks5UDP);
  # where no proxy turned it on, the VM's own filter drops the datagrams.
  allow {
    protocol = "udp"
    ports    = var.proxy_ports
  }
  depends_on = [google_project_service.apis, google_compute_network.proxies]
}

# Every other inbound packet to a proxy, of either family, is denied at the
# network's edge, so the proxies rely on no rule of the network's (SSH,
# RDP, ICMP, the network's internal ranges) and on nothing but their own
# filter (internal/vm/agent) behind it. Answers to the VMs' own
# connections pass, since VPC firewall rules are stateful, and so does the
# metadata server (DHCP, DNS, the metadata itself), which no rule governs.
resource "google_compute_firewall" "proxy_deny" {
  for_each      = { ipv4 = "0.0.0.0/0", ipv6 = "::/0" }
  name          = each.key == "ipv4" ? "egress-proxy-deny" : "egress-proxy-deny-${each.key}"
  network       = local.proxy_network
  direction     = "INGRESS"
  priority      = local.proxy_deny_priority
  source_ranges = [each.value]
  target_tags   = [var.proxy_network_tag]
  deny {
    protocol = "all"
  }
  depends_on = [google_project_service.apis, google_compute_network.proxies]
}
