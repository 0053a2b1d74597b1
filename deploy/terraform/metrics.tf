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
  # The lines of the three functions, as Cloud Run hands them to Cloud
  # Logging; each metric below narrows it to one message.
  # Only what Cloud Run took from the functions' standard output: an entry
  # written through the Logging API, by any account that may, goes to
  # another log (the VMs' access lines Reconcile writes go to
  # egress-proxy-access), so it feeds no metric and fires no alert.
  function_logs = join(" AND ", [
    "logName=\"projects/${var.project_id}/logs/run.googleapis.com%2Fstdout\"",
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=(\"${google_cloudfunctions2_function.api.name}\" OR \"${google_cloudfunctions2_function.reconcile.name}\" OR \"${google_cloudfunctions2_function.gc.name}\")",
  ])
  invocation_filter = "${local.function_logs} AND jsonPayload.message=\"invocation\""

  # Metric name => the usage field it sums (metering.Usage's JSON names).
  usage_metrics = {
    firestore_reads      = "firestoreReads"
    firestore_writes     = "firestoreWrites"
    provider_create      = "providerCreate"
    provider_get         = "providerGet"
    provider_delete      = "providerDelete"
    provider_list_by_tag = "providerListByTag"
    provider_reconfigure = "providerReconfigure"
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

# The metrics below are read off the lines the reconciler and the garbage
# collector log at their decisions (internal/reconcile, internal/gc), one
# metric per message, for the dashboard and the alert policies in
# monitoring.tf. The deploy tests hold each filter's message, and each field
# extracted, to a line the code logs.

# How long a proxy took from its document's creation to Ready: the
# reconciler's `proxy ready` line, once per proxy that turns Ready (after a
# replacement too, whose time still counts from the document's creation).
# Buckets 25% apart from 1 s to about 2 hours, so p50 and p99 are read to
# within a bucket's width of a quarter.
resource "google_logging_metric" "ready_latency" {
  name        = "egress/ready_latency"
  description = "Seconds from a proxy document's creation to Ready (the reconciler's proxy ready line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"proxy ready\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "s"
  }
  value_extractor = "EXTRACT(jsonPayload.secondsSinceCreate)"
  bucket_options {
    exponential_buckets {
      num_finite_buckets = 40
      growth_factor      = 1.25
      scale              = 1
    }
  }
  depends_on = [google_project_service.apis]
}

# Proxies by phase: the collector's `fleet` lines, one per phase every tick.
# A distribution rather than a counter, because a counter counts lines, not
# the number on them; its mean per tick is the fleet, exact (a distribution
# keeps its mean, the buckets only serve percentiles), and a tick delivered
# twice gives the same mean, where a sum would double.
resource "google_logging_metric" "fleet" {
  name        = "egress/fleet"
  description = "Proxy documents in each phase, as every garbage-collection run counts them (the fleet lines)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"fleet\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "1"
    labels {
      key        = "phase"
      value_type = "STRING"
    }
  }
  value_extractor  = "EXTRACT(jsonPayload.proxies)"
  label_extractors = { phase = "EXTRACT(jsonPayload.phase)" }
  bucket_options {
    exponential_buckets {
      num_finite_buckets = 20
      growth_factor      = 2
      scale              = 1
    }
  }
  depends_on = [google_project_service.apis]
}

# Each namespace's month, in the deployment's currency (cost_currency):
# the collector's `namespace cost` lines, one per namespace every tick,
# summed from its live proxies' status.cost (the run reads them with the
# proxies' claims, so the lines cost no read; deleted proxies' spend is
# not in them, the namespace's GET adds it). Distributions for the same
# reason as the fleet: the number is on the line, and a run's mean is the
# namespace's figure. Named apart from the budget crossings' metrics: these
# chart a figure, those count events.
locals {
  # Metric name => the namespace cost field it reads.
  namespace_cost_metrics = {
    namespace_cost_forecast      = "forecast"
    namespace_cost_month_to_date = "monthToDate"
  }
}

resource "google_logging_metric" "namespace_cost" {
  for_each    = local.namespace_cost_metrics
  name        = "egress/${each.key}"
  description = "Each namespace's month in the deployment's currency, as every garbage-collection run sums its live proxies' costs: the namespace cost line's ${each.value}."
  filter      = "${local.function_logs} AND jsonPayload.message=\"namespace cost\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "1"
    labels {
      key        = "namespace"
      value_type = "STRING"
    }
    labels {
      key        = "currency"
      value_type = "STRING"
    }
  }
  value_extractor = "EXTRACT(jsonPayload.${each.value})"
  label_extractors = {
    namespace = "EXTRACT(jsonPayload.namespace)"
    currency  = "EXTRACT(jsonPayload.currency)"
  }
  bucket_options {
    exponential_buckets {
      num_finite_buckets = 24
      growth_factor      = 2
      scale              = 1
    }
  }
  depends_on = [google_project_service.apis]
}

# What each garbage-collection run did with the orphans, by provider: the
# `gc summary` line's deleted and failed counts. Distributions for the same
# reason as the fleet: the number is on the line.
locals {
  # Metric name => the gc summary field it reads.
  gc_summary_metrics = {
    gc_deleted = "deleted"
    gc_failed  = "failed"
  }
}

resource "google_logging_metric" "gc_summary" {
  for_each    = local.gc_summary_metrics
  name        = "egress/${each.key}"
  description = "Orphaned VMs per garbage-collection run, by provider: the gc summary line's ${each.value}."
  filter      = "${local.function_logs} AND jsonPayload.message=\"gc summary\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "1"
    labels {
      key        = "provider"
      value_type = "STRING"
    }
  }
  value_extractor  = "EXTRACT(jsonPayload.${each.value})"
  label_extractors = { provider = "EXTRACT(jsonPayload.provider)" }
  bucket_options {
    exponential_buckets {
      num_finite_buckets = 16
      growth_factor      = 2
      scale              = 1
    }
  }
  depends_on = [google_project_service.apis]
}

# VMs that did not become ready, by why: BootTimeout (not serving within
# boot_timeout of its creation) or BootFailed (the VM said its bootstrap
# failed). Each is replaced, up to max_boot_failures in a row.
resource "google_logging_metric" "boot_failures" {
  name        = "egress/boot_failures"
  description = "Proxy VMs that did not become ready, by why (BootTimeout, BootFailed)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"instance did not become ready\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "why"
      value_type = "STRING"
    }
  }
  label_extractors = { why = "EXTRACT(jsonPayload.why)" }
  depends_on       = [google_project_service.apis]
}

# Creates the provider refused for want of Compute quota; the proxy waits
# for the sweep to try again, and stays waiting until the quota is there.
resource "google_logging_metric" "quota_errors" {
  name        = "egress/quota_errors"
  description = "VM creates refused for Compute quota (the reconciler's quota exceeded line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"quota exceeded; the sweep retries\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
  }
  depends_on = [google_project_service.apis]
}

# Runs the collector refused: it would have deleted more than gc_max_deletes
# resources, or any while no proxy document exists at all, and deleted
# nothing (the collector's gc refused line, one per refused run).
resource "google_logging_metric" "gc_refused" {
  name        = "egress/gc_refused"
  description = "Garbage-collection runs that refused to delete (the collector's gc refused line): too many deletions, or no proxy document at all."
  filter      = "${local.function_logs} AND jsonPayload.message=\"gc refused\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
  }
  depends_on = [google_project_service.apis]
}

# Budget thresholds a namespace's month reached: the collector's budget
# threshold reached line (internal/budgetalert), logged once a month for
# each of 80 and 100 percent of the namespace's budget, by namespace and
# threshold.
resource "google_logging_metric" "budget_thresholds" {
  name        = "egress/budget_thresholds"
  description = "Namespaces whose month to date reached a threshold (80, 100 percent) of their budget, by namespace and threshold (the collector's budget threshold reached line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"budget threshold reached\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "namespace"
      value_type = "STRING"
    }
    labels {
      key        = "threshold"
      value_type = "STRING"
    }
  }
  label_extractors = {
    namespace = "EXTRACT(jsonPayload.namespace)"
    threshold = "EXTRACT(jsonPayload.threshold)"
  }
  depends_on = [google_project_service.apis]
}
