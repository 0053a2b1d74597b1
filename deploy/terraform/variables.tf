variable "project_id" {
  description = "The Google Cloud project to deploy into. Firestore's (default) database must not exist yet, or must be in Native mode."
  type        = string
}

variable "region" {
  description = "Region of the functions, the Scheduler job and the source bucket."
  type        = string
  default     = "us-central1"
}

variable "firestore_location" {
  description = "Location of the Firestore database (a region such as us-central1, or nam5). The Firestore trigger runs there."
  type        = string
  default     = "us-central1"
}

variable "allowed_source_ranges" {
  description = "CIDRs the firewall lets reach proxy ports (FIREWALL_SOURCE_RANGES). Each proxy narrows this further with its own allowedSourceRanges, which the API holds within these."
  type        = list(string)
  validation {
    condition     = length(var.allowed_source_ranges) > 0 && alltrue([for r in var.allowed_source_ranges : can(cidrhost(r, 0))])
    error_message = "allowed_source_ranges must hold at least one valid CIDR."
  }
}

variable "proxy_ports" {
  description = "TCP ports (or ranges such as \"3128-3130\") the firewall opens on proxy VMs (PROXY_PORTS): a proxy's spec.port must be one of them."
  type        = list(string)
  default     = ["3128"]
  validation {
    condition     = length(var.proxy_ports) > 0 && alltrue([for p in var.proxy_ports : can(regex("^[0-9]+(-[0-9]+)?$", p))])
    error_message = "proxy_ports must hold at least one port or range such as 3128-3130."
  }
}

variable "network" {
  description = "VPC network the proxy VMs join (GCP_NETWORK). Empty: the deployment's own, egress-proxies-DEPLOYMENT, made by this module with no firewall rule but the proxies' (terraform.tfvars.example sets it, so a new deployment starts there). The default stays the project's default network, where a deployment's running VMs were before, so an apply never moves their rules away from them; this module's deny rules hold the proxies to the proxy ports on whichever network. Name an existing network (a custom-mode one for IPV4_IPV6) to use it instead."
  type        = string
  default     = "default"
}

variable "subnetwork" {
  description = "Subnetwork, in each region, the proxy VMs join, for a custom-mode network named in network (GCP_SUBNETWORK); empty for an auto-mode network, the deployment's own included."
  type        = string
  default     = ""
}

variable "proxy_stack_type" {
  description = "The proxy VMs' network stack (GCP_STACK_TYPE): IPV4_ONLY, or IPV4_IPV6 for an external IPv6 address on each VM, which they reach IPv6 destinations from. IPV4_IPV6 needs subnetwork to be, in every region proxies run in, a dual-stack subnet with external IPv6 (stack_type = \"IPV4_IPV6\", ipv6_access_type = \"EXTERNAL\"), which only a custom-mode network has; clients reach a proxy over IPv6 only from allowed_source_ranges' IPv6 ranges."
  type        = string
  default     = "IPV4_ONLY"
  validation {
    condition     = contains(["IPV4_ONLY", "IPV4_IPV6"], var.proxy_stack_type)
    error_message = "proxy_stack_type must be IPV4_ONLY or IPV4_IPV6."
  }
}

variable "proxy_vm_scopes" {
  description = "OAuth scopes of the proxy VMs' service account (GCP_SCOPES): what its token may be used for at all, on top of its roles. pubsub is for the call-home (the account's only Pub/Sub role is publisher on proxy-callhome), devstorage.read_only for the engine binary; no logging or monitoring: the VMs write no log entry or metric of the project."
  type        = list(string)
  default = [
    "https://www.googleapis.com/auth/pubsub",
    "https://www.googleapis.com/auth/devstorage.read_only",
  ]
}

variable "probe_target" {
  description = "host:port a proxy VM's self-test reaches through its proxy before it says it serves (GCP_PROBE_TARGET)."
  type        = string
  default     = "www.google.com:443"
}

variable "proxy_network_tag" {
  description = "Network tag on every proxy VM, which the firewall rule targets (GCP_NETWORK_TAG)."
  type        = string
  default     = "egress-proxy"
}

variable "api_invokers" {
  description = "IAM members allowed to call the ProxyAPI, such as group:platform@example.com. Never allUsers: the API is not public."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for m in var.api_invokers : !contains(["allUsers", "allAuthenticatedUsers"], m)])
    error_message = "api_invokers must not make the ProxyAPI public."
  }
}

variable "proxy_engine_binary" {
  description = "Path of the proxy engine binary (linux/amd64, static) that `make package` builds; uploaded to the source bucket, where the proxy VMs download it (PROXY_ENGINE_URL, PROXY_ENGINE_SHA256)."
  type        = string
  default     = "../../dist/egress-proxy"
}

variable "egress_deny_ranges" {
  description = "CIDRs no proxy may reach beyond the built-in private, link-local, documentation and special ranges (EGRESS_DENY_RANGES): the VPC's own ranges, peered networks."
  type        = list(string)
  default     = []
}

variable "source_archive" {
  description = "Path of the functions' source archive that `make package` writes (deploy/package-functions)."
  type        = string
  default     = "../../dist/functions-source.zip"
}

variable "go_runtime" {
  description = "Cloud Run functions Go runtime; the module's go.mod needs Go 1.26."
  type        = string
  default     = "go126"
}

variable "namespace_quota" {
  description = "Proxies one namespace may hold (NAMESPACE_QUOTA)."
  type        = number
  default     = 20
}

variable "cost_currency" {
  description = "The currency (ISO 4217) costs are shown in and namespaces' budgets held in (COST_CURRENCY)."
  type        = string
  default     = "USD"
}

variable "cost_rates" {
  description = "The deployment's dated conversion rates into cost_currency (COST_RATES), each CURRENCY=AMOUNT@DATE such as USD=0.92@2026-12-01; a price in a currency without a rate is costed \"unknown\", never at a guessed rate."
  type        = list(string)
  default     = []
}

variable "namespace_creates_per_hour" {
  description = "VMs one namespace may cause in any hour (NAMESPACE_CREATES_PER_HOUR): creates, rotations, live changes that need a new VM, rotations by maxAge; they cost money and spend the Compute quotas every namespace shares. Replacements of lost VMs are not counted."
  type        = number
  default     = 60
}

variable "rotate_min_interval" {
  description = "The least time between two VMs a user asks for one proxy, rotations and live changes that need a new VM, and the shortest maxAge (ROTATE_MIN_INTERVAL), in Go's duration syntax."
  type        = string
  default     = "10m"
}

variable "boot_timeout" {
  description = "How long a proxy VM may take from its creation to serving before it is replaced (BOOT_TIMEOUT), in Go's duration syntax."
  type        = string
  default     = "10m"
}

variable "reconfigure_timeout" {
  description = "How long a proxy VM handed a new configuration (a PATCH, new credentials) may take to serve it before it is replaced by a new VM with it (RECONFIGURE_TIMEOUT), in Go's duration syntax."
  type        = string
  default     = "2m"
}

variable "max_boot_failures" {
  description = "VMs in a row that may fail to become ready before a proxy is Failed (MAX_BOOT_FAILURES)."
  type        = number
  default     = 3
}

variable "gc_schedule" {
  description = "Cloud Scheduler cron of the garbage-collection tick on proxy-gc: every N minutes, \"*/N * * * *\" with N from 1 to 59. The alert policies derive their windows from N (monitoring.tf), which is why no other form is taken."
  type        = string
  default     = "*/5 * * * *"
  validation {
    condition     = can(regex("^\\*/([1-9]|[1-5][0-9]) \\* \\* \\* \\*$", var.gc_schedule))
    error_message = "gc_schedule must be \"*/N * * * *\" with N from 1 to 59: the GC alerts wait a number of ticks, so they need the interval."
  }
}

variable "gc_grace_period" {
  description = "Age under which an unclaimed VM is kept (GC_GRACE_PERIOD), in Go's duration syntax."
  type        = string
  default     = "10m"
}

variable "gc_dry_run" {
  description = "Report orphaned VMs without deleting them (GC_DRY_RUN)."
  type        = bool
  default     = false
}

variable "deployment" {
  description = "This deployment's name (DEPLOYMENT): every VM and address carries it as the label egress-deployment, and the collector deletes only its own deployment's. Give each deployment sharing a project its own."
  type        = string
  default     = "egress"
  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.deployment))
    error_message = "deployment must be an RFC 1035 label: 1 to 63 lowercase letters, digits and '-', starting with a letter and ending with a letter or digit."
  }
}

variable "gc_max_deletes" {
  description = "The most VMs and addresses one garbage-collection run may delete (GC_MAX_DELETES); a run that would delete more deletes none and logs gc refused. Raise it for one run to let a refused run through."
  type        = number
  default     = 50
  validation {
    condition     = var.gc_max_deletes >= 1 && floor(var.gc_max_deletes) == var.gc_max_deletes
    error_message = "gc_max_deletes must be a whole number of at least 1."
  }
}

variable "gc_allow_empty_database" {
  description = "Let a garbage-collection run delete while no proxy document exists at all (GC_ALLOW_EMPTY_DATABASE). Set it for one run, when the last proxies were deleted on purpose and their VMs were left; then set it back."
  type        = bool
  default     = false
}

variable "pacing_scale" {
  description = "The share of each cloud account's documented rate limit that the functions' calls to it are paced to, across all their instances (PACING_SCALE): 1 is the cloud's default, 0.5 leaves half to the account's other callers, 0 turns the pacing off."
  type        = number
  default     = 1
  validation {
    condition     = var.pacing_scale >= 0
    error_message = "pacing_scale must be at least 0."
  }
}

variable "log_level" {
  description = "Functions' log level (LOG_LEVEL): debug, info, warn or error. Above info the invocation lines, which the log-based metrics read, are not logged."
  type        = string
  default     = "info"
  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level must be debug, info, warn or error."
  }
}

variable "notification_channels" {
  description = "Notification channels (projects/P/notificationChannels/ID) every alert policy notifies. Empty, the incidents open in the Console and notify nobody."
  type        = list(string)
  default     = []
}

variable "api_admins" {
  description = "Platform admins of the ProxyAPI (API_ADMINS): emails and domain:example.com entries. They act in every namespace and alone create and delete namespaces and change quotas; with none, no namespace can be made."
  type        = list(string)
  default     = []
}

variable "allow_custom_cloud_init" {
  description = "Whether a proxy's spec may bring its own cloudInit, user-data its VM runs as root (ALLOW_CUSTOM_CLOUD_INIT)."
  type        = bool
  default     = false
}

variable "cloud_init_secret_prefix" {
  description = "Start of the names of the secrets a spec's cloudInitSecret may name, within the project, such as egress- (each namespace then names only egress-NAMESPACE_…: '_' is in no namespace name, so no namespace names another's). It is the functions' CLOUD_INIT_SECRET_PREFIX (projects/PROJECT/secrets/ before it) and the IAM condition on the reconciler's secret access; empty refuses cloudInitSecret and grants no secret access at all."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^[A-Za-z0-9_-]*$", var.cloud_init_secret_prefix))
    error_message = "cloud_init_secret_prefix must be the start of a secret id: letters, digits, '-' and '_'."
  }
}

variable "min_source_prefix_ipv4" {
  description = "The widest IPv4 range a proxy's allowedSourceRanges may hold, as a prefix length (MIN_SOURCE_PREFIX_IPV4)."
  type        = number
  default     = 8
}

variable "min_source_prefix_ipv6" {
  description = "The widest IPv6 range a proxy's allowedSourceRanges may hold, as a prefix length (MIN_SOURCE_PREFIX_IPV6)."
  type        = number
  default     = 32
}

variable "allow_any_source" {
  description = "Whether a proxy may be open to the whole internet, 0.0.0.0/0 or ::/0 (ALLOW_ANY_SOURCE)."
  type        = bool
  default     = false
}

variable "gcp_allowed_regions" {
  description = "Regions a proxy's placement may name (GCP_ALLOWED_REGIONS); empty allows every region."
  type        = list(string)
  default     = []
}

variable "gcp_allowed_machine_types" {
  description = "Machine types a proxy's placement may name (GCP_ALLOWED_MACHINE_TYPES); must hold e2-micro, the type of a placement that names none."
  type        = list(string)
  default     = ["e2-micro", "e2-small", "e2-medium"]
}

variable "gcp_allowed_images" {
  description = "Images a proxy's placement may name (GCP_ALLOWED_IMAGES): projects/P/global/images/NAME, .../images/family/F or .../images/*; must allow the Debian 13 family, the image of a placement that names none."
  type        = list(string)
  default     = ["projects/debian-cloud/global/images/family/debian-13", "projects/debian-cloud/global/images/family/debian-12"]
}

variable "credentials_key_rotation_period" {
  description = "How often Cloud KMS makes a new primary version of the key that wraps the proxies' credentials' keyset (kms.tf), in seconds with an s: 7776000s is 90 days."
  type        = string
  default     = "7776000s"
  validation {
    condition     = can(regex("^[0-9]+s$", var.credentials_key_rotation_period)) && try(tonumber(trimsuffix(var.credentials_key_rotation_period, "s")) >= 86400, false)
    error_message = "credentials_key_rotation_period must be seconds with an s, of at least a day (86400s), as Cloud KMS requires."
  }
}

variable "console_enabled" {
  description = "Serve the web console to people through Identity-Aware Proxy for Cloud Run: IAP on the API's service, and the API verifying IAP's signed header (IAP_AUDIENCE). Needs the project in an organization, and gcloud where Terraform runs."
  type        = bool
  default     = false
}

variable "console_users" {
  description = "IAM members who may pass IAP to the console, such as group:data-team@example.com. What each sees and does is still their role in each namespace."
  type        = list(string)
  default     = []
}

variable "vm_status_key_secret" {
  description = "The id of the Secret Manager secret Terraform makes for the key the control plane derives each VM's status credential from (32 random bytes, base64), when providers_enabled names a cloud whose VMs boot with cloud-init (cloud_init_enabled, clouds.tf); you add its value as a version (VM_STATUS_KEY_SECRET names its latest)."
  type        = string
  default     = "egress-vm-status-key"
  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,255}$", var.vm_status_key_secret))
    error_message = "vm_status_key_secret must be a secret id: letters, digits, '-' and '_'."
  }
}

variable "control_egress_connector_range" {
  description = "The unused /28 of the Serverless VPC Access connector through which Reconcile and CollectGarbage leave by a fixed address (VM_STATUS_SOURCE_RANGES) when providers_enabled names a cloud whose VMs boot with cloud-init (cloud_init_enabled, clouds.tf)."
  type        = string
  default     = "10.8.0.0/28"
  validation {
    condition     = can(cidrhost(var.control_egress_connector_range, 0)) && endswith(var.control_egress_connector_range, "/28")
    error_message = "control_egress_connector_range must be a /28 CIDR."
  }
}
