# The source archive `make package` builds (deploy/package-functions): the functions
# package at its root, as the Go buildpack requires.
resource "google_storage_bucket" "source" {
  name                        = "${var.project_id}-egress-functions-source"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
}

resource "google_storage_bucket_object" "source" {
  # The content hash in the name makes a new archive redeploy the functions.
  name   = "functions-source-${filemd5(var.source_archive)}.zip"
  bucket = google_storage_bucket.source.name
  source = var.source_archive
}

# The proxy engine the VMs install at boot, named by its content so that a
# new binary is a new object; the startup script checks it against
# PROXY_ENGINE_SHA256 before it runs it.
resource "google_storage_bucket_object" "proxy_engine" {
  name   = "egress-proxy-${filesha256(var.proxy_engine_binary)}"
  bucket = google_storage_bucket.source.name
  source = var.proxy_engine_binary
}

# ProxyAPI: the HTTP API. Not public: only var.api_invokers may call it.
resource "google_cloudfunctions2_function" "api" {
  name     = "proxy-api"
  location = var.region
  build_config {
    runtime     = var.go_runtime
    entry_point = "ProxyAPI"
    source {
      storage_source {
        bucket = google_storage_bucket.source.name
        object = google_storage_bucket_object.source.name
      }
    }
  }
  # Scale: internal/app.Deployed (a deploy test holds the two equal). A
  # request waits on Firestore, not on the CPU, so one vCPU serves many.
  service_config {
    service_account_email            = google_service_account.api.email
    available_memory                 = "512M"
    available_cpu                    = "1"
    timeout_seconds                  = 60
    max_instance_count               = 10
    max_instance_request_concurrency = 40
    ingress_settings                 = "ALLOW_ALL"
    environment_variables            = merge(local.common_env, local.credentials_env, local.api_env, local.cost_env, local.clouds_api_env)
  }
  depends_on = [google_project_service.apis]
}

# Reconcile: every write of a proxy document (Eventarc's Firestore trigger),
# every request on proxy-reconcile and every VM's call-home on
# proxy-callhome (pubsub.tf). No run waits for a boot; a run may wait for a VM on its way
# out (RECONCILE_WAIT_BUDGET), so the timeout leaves room for that and its
# lease. Scale: internal/app.Deployed.
resource "google_cloudfunctions2_function" "reconcile" {
  name     = "proxy-reconcile"
  location = var.region
  build_config {
    runtime     = var.go_runtime
    entry_point = "Reconcile"
    source {
      storage_source {
        bucket = google_storage_bucket.source.name
        object = google_storage_bucket_object.source.name
      }
    }
  }
  service_config {
    service_account_email = google_service_account.reconcile.email
    # With a cloud-init cloud, a fixed egress address (cloud_init_enabled,
    # clouds.tf): its VMs admit it for their status.
    vpc_connector                    = local.cloud_init_enabled ? google_vpc_access_connector.control_egress[0].id : null
    vpc_connector_egress_settings    = local.cloud_init_enabled ? "ALL_TRAFFIC" : null
    available_memory                 = "512M"
    available_cpu                    = "1"
    timeout_seconds                  = 300
    max_instance_count               = 20
    max_instance_request_concurrency = 20
    ingress_settings                 = "ALLOW_INTERNAL_ONLY"
    environment_variables = merge(local.common_env, local.credentials_env, local.provider_env, local.clouds_env, local.cost_env, {
      RECONCILE_WAIT_BUDGET      = "60s"
      RECONCILE_INITIAL_BACKOFF  = "2s"
      RECONCILE_MAX_BACKOFF      = "10s"
      BOOT_TIMEOUT               = var.boot_timeout
      RECONFIGURE_TIMEOUT        = var.reconfigure_timeout
      MAX_BOOT_FAILURES          = tostring(var.max_boot_failures)
      NAMESPACE_CREATES_PER_HOUR = tostring(var.namespace_creates_per_hour)
      CLOUD_INIT_SECRET_PREFIX   = local.cloud_init_secret_prefix
      EGRESS_DENY_RANGES         = join(",", var.egress_deny_ranges)
    })
  }
  event_trigger {
    trigger_region        = var.firestore_location
    event_type            = "google.cloud.firestore.document.v1.written"
    retry_policy          = "RETRY_POLICY_RETRY"
    service_account_email = google_service_account.trigger.email
    event_filters {
      attribute = "database"
      value     = google_firestore_database.default.name
    }
    event_filters {
      attribute = "document"
      value     = "namespaces/{namespace}/proxies/{proxy}"
      operator  = "match-path-pattern"
    }
  }
  depends_on = [google_project_service.apis, google_project_iam_member.trigger_receiver]
}

# CollectGarbage: each tick on proxy-gc. It fails (and the tick is retried)
# only when it could not see everything; the next tick comes anyway.
resource "google_cloudfunctions2_function" "gc" {
  name     = "proxy-collect-garbage"
  location = var.region
  build_config {
    runtime     = var.go_runtime
    entry_point = "CollectGarbage"
    source {
      storage_source {
        bucket = google_storage_bucket.source.name
        object = google_storage_bucket_object.source.name
      }
    }
  }
  service_config {
    service_account_email = google_service_account.gc.email
    # With a cloud-init cloud, a fixed egress address (cloud_init_enabled,
    # clouds.tf): its VMs admit it for their status.
    vpc_connector                    = local.cloud_init_enabled ? google_vpc_access_connector.control_egress[0].id : null
    vpc_connector_egress_settings    = local.cloud_init_enabled ? "ALL_TRAFFIC" : null
    available_memory                 = "512M"
    timeout_seconds                  = 540
    max_instance_count               = 1
    max_instance_request_concurrency = 1
    ingress_settings                 = "ALLOW_INTERNAL_ONLY"
    environment_variables = merge(local.common_env, local.provider_env, local.clouds_env, {
      GC_GRACE_PERIOD         = var.gc_grace_period
      GC_DRY_RUN              = tostring(var.gc_dry_run)
      GC_PARALLELISM          = "16"
      GC_SWEEP_THRESHOLD      = "2m"
      GC_MAX_DELETES          = tostring(var.gc_max_deletes)
      GC_ALLOW_EMPTY_DATABASE = tostring(var.gc_allow_empty_database)
    })
  }
  event_trigger {
    trigger_region        = var.region
    event_type            = "google.cloud.pubsub.topic.v1.messagePublished"
    pubsub_topic          = google_pubsub_topic.gc.id
    retry_policy          = "RETRY_POLICY_RETRY"
    service_account_email = google_service_account.trigger.email
  }
  depends_on = [google_project_service.apis, google_project_iam_member.trigger_receiver]
}
