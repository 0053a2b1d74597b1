# The product's metrics are log-based: every invocation of a function ends
# with one JSON line (internal/metering),
#
#   {"message":"invocation","function":"Reconcile","outcome":"ok","latencyMs":812.4,
#    "usage":{"firestoreReads":1,"firestoreWrites":3,"providerCreate":1,...}}
#
# and these metrics turn its fields into Cloud Monitoring series, by
# function: the figures `make bench` measures locally from the same lines.
# A log line rather than an exporter, because a Cloud Run function has no
# CPU to push from between requests. The lines are logged at INFO, so
# log_level must stay info or debug for the metrics to count.
locals {
  invocation_filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=(\"${google_cloudfunctions2_function.api.name}\" OR \"${google_cloudfunctions2_function.reconcile.name}\" OR \"${google_cloudfunctions2_function.gc.name}\")",
    "jsonPayload.message=\"invocation\"",
  ])

  # Metric name => the usage field it sums (metering.Usage's JSON names).
  usage_metrics = {
    firestore_reads      = "firestoreReads"
    firestore_writes     = "firestoreWrites"
    provider_create      = "providerCreate"
    provider_get         = "providerGet"
    provider_delete      = "providerDelete"
    provider_list_by_tag = "providerListByTag"
    provider_errors      = "providerErrors"
    pubsub_published     = "pubsubPublished"
  }
}

# Invocations, by function and outcome (ok, error, ignored).
resource "google_logging_metric" "invocations" {
  name        = "egress/invocations"
  description = "Function invocations of the egress proxies, by function and outcome."
  filter      = local.invocation_filter
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "function"
      value_type = "STRING"
    }
    labels {
      key        = "outcome"
      value_type = "STRING"
    }
  }
  label_extractors = {
    function = "EXTRACT(jsonPayload.function)"
    outcome  = "EXTRACT(jsonPayload.outcome)"
  }
  depends_on = [google_project_service.apis]
}

# What each invocation cost, one distribution per usage field: its count is
# the invocations, its mean times its count the total.
resource "google_logging_metric" "usage" {
  for_each    = local.usage_metrics
  name        = "egress/${each.key}"
  description = "Per invocation of the egress proxies' functions: ${each.value} (internal/metering)."
  filter      = local.invocation_filter
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "1"
    labels {
      key        = "function"
      value_type = "STRING"
    }
  }
  value_extractor  = "EXTRACT(jsonPayload.usage.${each.value})"
  label_extractors = { function = "EXTRACT(jsonPayload.function)" }
  bucket_options {
    exponential_buckets {
      num_finite_buckets = 20
      growth_factor      = 2
      scale              = 1
    }
  }
  depends_on = [google_project_service.apis]
}

# How long invocations take, by function.
resource "google_logging_metric" "latency" {
  name        = "egress/invocation_latency"
  description = "Latency of the egress proxies' function invocations, by function."
  filter      = local.invocation_filter
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "ms"
    labels {
      key        = "function"
      value_type = "STRING"
    }
  }
  value_extractor  = "EXTRACT(jsonPayload.latencyMs)"
  label_extractors = { function = "EXTRACT(jsonPayload.function)" }
  bucket_options {
    exponential_buckets {
      num_finite_buckets = 24
      growth_factor      = 2
      scale              = 1
    }
  }
  depends_on = [google_project_service.apis]
}
