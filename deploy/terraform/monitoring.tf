# The operator's view: one Cloud Monitoring dashboard over the log-based
# metrics of metrics.tf and the dead-letter subscription, and the alert
# policies that page when something needs a person. docs/operations/alerts.md
# says what each chart and alert shows.
locals {
  # The garbage collector's tick, in seconds, read off gc_schedule
  # ("*/N * * * *"; its validation takes no other form). The GC alerts wait
  # three ticks before they call a collector failing or gone, and the charts
  # of the per-tick lines align on one tick, so each point is one run.
  gc_interval_seconds = 60 * tonumber(regex("^\\*/([0-9]+) ", var.gc_schedule)[0])

  # The metric types, for the filters below: the log-based metrics by
  # reference, so that a policy is created after its metric exists (the
  # API refuses a condition on a metric it does not know).
  user_metric  = "logging.googleapis.com/user"
  on_cloud_run = "resource.type=\"cloud_run_revision\""

  # The dashboard, as the Monitoring API's Dashboard in JSON's field names.
  # A local encoded with jsonencode rather than a dashboard.json file: the
  # charts name the metrics by reference and align on the GC's interval,
  # which a file could do only as a template with placeholders of its own,
  # and each chart carries a comment on why it aggregates as it does, which
  # JSON cannot. The deploy tests evaluate this local and parse the result
  # as the API's Dashboard, so a misspelt field fails there rather than at
  # apply time.
  dashboard = {
    displayName = "Egress proxies"
    mosaicLayout = {
      columns = 12
      tiles = concat([
        {
          # The fleet lines (one per phase per run): the mean of a run's
          # counts is the count. Reduced by mean, not sum, so that a window
          # holding two runs (or the lines of two revisions, during a
          # deploy) still shows one fleet.
          xPos = 0, yPos = 0, width = 6, height = 4
          widget = {
            title = "Proxies by phase"
            xyChart = {
              dataSets = [{
                plotType           = "STACKED_AREA"
                legendTemplate     = "$${metric.labels.phase}"
                minAlignmentPeriod = "${local.gc_interval_seconds}s"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = "metric.type=\"${local.user_metric}/${google_logging_metric.fleet.name}\" AND ${local.on_cloud_run}"
                    aggregation = {
                      alignmentPeriod    = "${local.gc_interval_seconds}s"
                      perSeriesAligner   = "ALIGN_DELTA"
                      crossSeriesReducer = "REDUCE_MEAN"
                      groupByFields      = ["metric.label.phase"]
                    }
                  }
                }
              }]
              yAxis = { label = "proxies", scale = "LINEAR" }
            }
          }
        },
        {
          # Percentiles of the ready latency distribution over an hour:
          # proxies are created a few at a time, and an hour holds enough
          # of them for a p99 to mean something.
          xPos = 6, yPos = 0, width = 6, height = 4
          widget = {
            title = "Time to Ready (p50, p99 per hour)"
            xyChart = {
              dataSets = [for p in ["50", "99"] : {
                plotType           = "LINE"
                legendTemplate     = "p${p}"
                minAlignmentPeriod = "3600s"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = "metric.type=\"${local.user_metric}/${google_logging_metric.ready_latency.name}\" AND ${local.on_cloud_run}"
                    aggregation = {
                      alignmentPeriod    = "3600s"
                      perSeriesAligner   = "ALIGN_DELTA"
                      crossSeriesReducer = "REDUCE_PERCENTILE_${p}"
                    }
                  }
                }
              }]
              yAxis = { label = "seconds", scale = "LINEAR" }
            }
          }
        },
        {
          # Rates rather than counts, so the numbers mean the same at
          # whatever alignment the Console picks for a long time range.
          xPos = 0, yPos = 4, width = 6, height = 4
          widget = {
            title = "Invocations and errors by function"
            xyChart = {
              dataSets = [for s in [
                { legend = "$${metric.labels.function}", outcome = "" },
                { legend = "$${metric.labels.function} errors", outcome = " AND metric.label.outcome=\"error\"" },
                ] : {
                plotType           = "LINE"
                legendTemplate     = s.legend
                minAlignmentPeriod = "60s"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = "metric.type=\"${local.user_metric}/${google_logging_metric.invocations.name}\" AND ${local.on_cloud_run}${s.outcome}"
                    aggregation = {
                      alignmentPeriod    = "60s"
                      perSeriesAligner   = "ALIGN_RATE"
                      crossSeriesReducer = "REDUCE_SUM"
                      groupByFields      = ["metric.label.function"]
                    }
                  }
                }
              }]
              yAxis = { label = "per second", scale = "LINEAR" }
            }
          }
        },
        {
          # The gc summary line's deleted and failed, per run: aligned on
          # one tick, the mean of a window is what its run did.
          xPos = 6, yPos = 4, width = 6, height = 4
          widget = {
            title = "GC: orphaned VMs deleted and failed deletes (per run)"
            xyChart = {
              dataSets = [for m, field in local.gc_summary_metrics : {
                plotType           = "LINE"
                legendTemplate     = "$${metric.labels.provider} ${field}"
                minAlignmentPeriod = "${local.gc_interval_seconds}s"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = "metric.type=\"${local.user_metric}/${google_logging_metric.gc_summary[m].name}\" AND ${local.on_cloud_run}"
                    aggregation = {
                      alignmentPeriod    = "${local.gc_interval_seconds}s"
                      perSeriesAligner   = "ALIGN_DELTA"
                      crossSeriesReducer = "REDUCE_MEAN"
                      groupByFields      = ["metric.label.provider"]
                    }
                  }
                }
              }]
              yAxis = { label = "VMs", scale = "LINEAR" }
            }
          }
        },
        {
          # Pub/Sub samples the backlog every minute; the maximum of a
          # minute is the backlog.
          xPos = 0, yPos = 8, width = 6, height = 4
          widget = {
            title = "Dead-lettered reconcile requests"
            xyChart = {
              dataSets = [{
                plotType           = "LINE"
                legendTemplate     = google_pubsub_subscription.dead_letter.name
                minAlignmentPeriod = "60s"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = local.dead_letter_filter
                    aggregation = {
                      alignmentPeriod  = "60s"
                      perSeriesAligner = "ALIGN_MAX"
                    }
                  }
                }
              }]
              yAxis = { label = "messages", scale = "LINEAR" }
            }
          }
        },
        {
          # What two alerts count, for the operator they page: both are
          # rare, so counts per 5 minutes read better than rates.
          xPos = 6, yPos = 8, width = 6, height = 4
          widget = {
            title = "Boot failures and Compute quota errors (per 5 minutes)"
            xyChart = {
              dataSets = [
                {
                  plotType           = "STACKED_BAR"
                  legendTemplate     = "boot failed: $${metric.labels.why}"
                  minAlignmentPeriod = "300s"
                  timeSeriesQuery = {
                    timeSeriesFilter = {
                      filter = "metric.type=\"${local.user_metric}/${google_logging_metric.boot_failures.name}\" AND ${local.on_cloud_run}"
                      aggregation = {
                        alignmentPeriod    = "300s"
                        perSeriesAligner   = "ALIGN_SUM"
                        crossSeriesReducer = "REDUCE_SUM"
                        groupByFields      = ["metric.label.why"]
                      }
                    }
                  }
                },
                {
                  plotType           = "STACKED_BAR"
                  legendTemplate     = "quota exceeded"
                  minAlignmentPeriod = "300s"
                  timeSeriesQuery = {
                    timeSeriesFilter = {
                      filter = "metric.type=\"${local.user_metric}/${google_logging_metric.quota_errors.name}\" AND ${local.on_cloud_run}"
                      aggregation = {
                        alignmentPeriod    = "300s"
                        perSeriesAligner   = "ALIGN_SUM"
                        crossSeriesReducer = "REDUCE_SUM"
                      }
                    }
                  }
                },
              ]
              yAxis = { label = "lines", scale = "LINEAR" }
            }
          }
        },
        ],
        # Each cloud's refusals, a tile per cloud from its own file.
        local.clouds_dashboard_tiles,
        # Each namespace's month (the namespace cost lines, one per
        # namespace per run): the mean of a run's figure is the figure,
        # as for the fleet, so a window of two runs shows one month. The
        # month so far restarts at 0 when the month turns; the forecast
        # is what a budget is held to.
        [for i, m in [
          { metric = "namespace_cost_forecast", title = "forecast" },
          { metric = "namespace_cost_month_to_date", title = "so far" },
          ] : {
          xPos = 6 * i, yPos = 24, width = 6, height = 4
          widget = {
            title = "Namespaces: the month's cost, ${m.title} (${var.cost_currency})"
            xyChart = {
              dataSets = [{
                plotType           = "LINE"
                legendTemplate     = "$${metric.labels.namespace}"
                minAlignmentPeriod = "${local.gc_interval_seconds}s"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = "metric.type=\"${local.user_metric}/${google_logging_metric.namespace_cost[m.metric].name}\" AND ${local.on_cloud_run}"
                    aggregation = {
                      alignmentPeriod    = "${local.gc_interval_seconds}s"
                      perSeriesAligner   = "ALIGN_DELTA"
                      crossSeriesReducer = "REDUCE_MEAN"
                      groupByFields      = ["metric.label.namespace"]
                    }
                  }
                }
              }]
              yAxis = { label = var.cost_currency, scale = "LINEAR" }
            }
          }
        }],
        # Each proxy's traffic, as Compute counts its VM's network
        # interface (written by the platform for every VM, so it needs no
        # right of the VM's own and no line of the functions'): this
        # deployment's VMs by their egress-deployment label, one line per
        # proxy by its uid label (status.uid, `egress proxies get`), which
        # a replaced or rotated VM keeps. A proxy's interface carries both
        # legs of every connection, client and destination, so each chart
        # is about twice what its clients moved one way; the engine's own
        # count of the client leg is status.traffic.
        [for i, way in [
          { metric = "sent_bytes_count", title = "sent" },
          { metric = "received_bytes_count", title = "received" },
          ] : {
          xPos = 6 * i, yPos = 12, width = 6, height = 4
          widget = {
            title = "Proxy VMs: bytes ${way.title} per second, by proxy uid"
            xyChart = {
              dataSets = [{
                plotType           = "LINE"
                minAlignmentPeriod = "60s"
                timeSeriesQuery = {
                  timeSeriesFilter = {
                    filter = "metric.type=\"compute.googleapis.com/instance/network/${way.metric}\" AND ${local.proxy_vms}"
                    aggregation = {
                      alignmentPeriod    = "60s"
                      perSeriesAligner   = "ALIGN_RATE"
                      crossSeriesReducer = "REDUCE_SUM"
                      groupByFields      = ["metadata.user_labels.\"proxy-operator-uid\""]
                    }
                  }
                }
              }]
              yAxis = { label = "bytes/s", scale = "LINEAR" }
            }
          }
        }]
      )
    }
  }

  # This deployment's proxy VMs, by the labels every VM carries.
  proxy_vms = "resource.type=\"gce_instance\" AND metadata.user_labels.\"egress-deployment\"=\"${var.deployment}\""

  dead_letter_filter = join(" AND ", [
    "metric.type=\"pubsub.googleapis.com/subscription/num_undelivered_messages\"",
    "resource.type=\"pubsub_subscription\"",
    "resource.label.subscription_id=\"${google_pubsub_subscription.dead_letter.name}\"",
  ])
  collect_garbage_invocations = join(" AND ", [
    "metric.type=\"${local.user_metric}/${google_logging_metric.invocations.name}\"",
    local.on_cloud_run,
    "metric.label.function=\"CollectGarbage\"",
  ])

  # Where an operator reads the functions' lines.
  logs_explorer = "https://console.cloud.google.com/logs/query?project=${var.project_id}"
}

resource "google_monitoring_dashboard" "egress" {
  dashboard_json = jsonencode(local.dashboard)
  depends_on     = [google_project_service.apis]
}

# A reconcile request Reconcile refused ten times. Any one is worth a look,
# and the messages stay a week, so the incident stays open until someone
# has read and dropped them.
resource "google_monitoring_alert_policy" "dead_letter" {
  display_name          = "Egress proxies: reconcile requests dead-lettered"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = var.notification_channels
  conditions {
    display_name = "Messages in ${google_pubsub_subscription.dead_letter.name}"
    condition_threshold {
      filter          = local.dead_letter_filter
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_MAX"
      }
    }
  }
  documentation {
    mime_type = "text/markdown"
    subject   = "Egress proxies: reconcile requests in the dead-letter subscription"
    content   = <<-EOT
      A reconcile request on proxy-reconcile failed 10 deliveries to Reconcile and now waits in the subscription **${google_pubsub_subscription.dead_letter.name}**. Reconcile refuses a request only when it could not read or write the proxy's document in Firestore, so start there.

      1. Read Reconcile's errors in the [Logs Explorer](${local.logs_explorer}): `resource.labels.service_name="${google_cloudfunctions2_function.reconcile.name}" severity>=ERROR`.
      2. Read the requests without consuming them: `gcloud pubsub subscriptions pull ${google_pubsub_subscription.dead_letter.name} --project=${var.project_id} --limit=10` (no `--auto-ack`). Each names its document, `namespaces/NS/proxies/NAME`.
      3. Nothing is lost meanwhile: every garbage-collection tick re-drives the documents that stopped progressing. Once the cause is fixed and those proxies have moved on (`egress proxies get NAME --namespace NS`), drop the dead letters: `gcloud pubsub subscriptions seek ${google_pubsub_subscription.dead_letter.name} --project=${var.project_id} --time=$(date -u +%Y-%m-%dT%H:%M:%SZ)`.

      The incident closes when the subscription is empty.
    EOT
  }
}

# A run fails (outcome error) only when it could not look at everything: a
# provider could not be listed, or the documents could not be read. Then it
# deletes nothing and re-drives nothing. A failed tick is retried, so a
# failing collector logs an error in every interval; the condition asks for
# errors in every one-interval window for two intervals, which is three
# ticks in a row, and lets a single failure that the retry or the next tick
# mends pass.
resource "google_monitoring_alert_policy" "gc_failing" {
  display_name          = "Egress proxies: garbage collection failing"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = var.notification_channels
  conditions {
    display_name = "CollectGarbage errors for 3 intervals"
    condition_threshold {
      filter          = "${local.collect_garbage_invocations} AND metric.label.outcome=\"error\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "${2 * local.gc_interval_seconds}s"
      aggregations {
        alignment_period     = "${local.gc_interval_seconds}s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
      # No error line is no error: the incident closes with the first
      # interval that has none.
      evaluation_missing_data = "EVALUATION_MISSING_DATA_INACTIVE"
    }
  }
  documentation {
    mime_type = "text/markdown"
    subject   = "Egress proxies: garbage collection has failed for 3 intervals"
    content   = <<-EOT
      CollectGarbage has failed every run for three scheduler intervals. A run fails only when it could not see everything, and then it deletes no orphaned VM and re-drives no stalled proxy: orphans keep costing, and a proxy whose event was lost waits.

      1. Read the runs' errors in the [Logs Explorer](${local.logs_explorer}): `resource.labels.service_name="${google_cloudfunctions2_function.gc.name}" severity>=ERROR`. `cannot list instances` names the provider whose listing failed; `cannot read the live uids` is Firestore.
      2. Usual causes: the collector's service account (${google_service_account.gc.email}) lost its custom role ${google_project_iam_custom_role.gc.role_id} or a permission of it (iam.tf; `gcloud projects get-iam-policy ${var.project_id}` shows the binding, `gcloud iam roles describe ${google_project_iam_custom_role.gc.role_id} --project=${var.project_id}` the permissions); the Compute or Firestore API is down or out of quota in the project.
      3. Once fixed, run a tick by hand and watch it succeed: `gcloud scheduler jobs run ${google_cloud_scheduler_job.gc.name} --location=${var.region} --project=${var.project_id}`.

      Deletes that fail one by one do not fail a run: the next run retries them, and the dashboard's chart of GC deletions shows them.
    EOT
  }
}

# No invocation at all, of any outcome: the scheduler job, the trigger or
# the function is gone or broken. Summed across series, so that a deploy,
# which ends the old revision's series, is not an absence.
resource "google_monitoring_alert_policy" "gc_not_running" {
  display_name          = "Egress proxies: garbage collection not running"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = var.notification_channels
  conditions {
    display_name = "No CollectGarbage invocation for 3 intervals"
    condition_absent {
      filter   = local.collect_garbage_invocations
      duration = "${3 * local.gc_interval_seconds}s"
      aggregations {
        alignment_period     = "${local.gc_interval_seconds}s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }
  documentation {
    mime_type = "text/markdown"
    subject   = "Egress proxies: garbage collection has not run for 3 intervals"
    content   = <<-EOT
      CollectGarbage has not been invoked for three intervals of its schedule (`${var.gc_schedule}`). Until it runs, orphaned VMs are not deleted and stalled proxies are not re-driven.

      1. The scheduler job: `gcloud scheduler jobs describe ${google_cloud_scheduler_job.gc.name} --location=${var.region} --project=${var.project_id}` must say `state: ENABLED`, and its last attempt must have succeeded.
      2. The function and its trigger on the topic ${google_pubsub_topic.gc.name}: `gcloud functions describe ${google_cloudfunctions2_function.gc.name} --region=${var.region} --project=${var.project_id}` must say `state: ACTIVE`.
      3. Run a tick by hand: `gcloud scheduler jobs run ${google_cloud_scheduler_job.gc.name} --location=${var.region} --project=${var.project_id}`; an `invocation` line from ${google_cloudfunctions2_function.gc.name} in the [Logs Explorer](${local.logs_explorer}) says it ran.

      The incident closes with the first invocation.
    EOT
  }
}

# Every boot failure is a proxy that was not Ready after the boot timeout
# (or whose VM said its bootstrap failed): a user waited boot_timeout for
# nothing. The reconciler replaces the VM by itself, but what failed one VM
# (the image, the network, the probe target) usually fails the next, so the
# first is worth a look. The window is half an hour, longer than the
# default boot timeout: a cause that fails every VM fails one per proxy
# every boot timeout, which keeps one incident open rather than opening one
# per VM; half an hour without a failure closes it.
resource "google_monitoring_alert_policy" "boot_failures" {
  display_name          = "Egress proxies: VMs not ready after the boot timeout"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = var.notification_channels
  conditions {
    display_name = "Boot failures"
    condition_threshold {
      filter          = "metric.type=\"${local.user_metric}/${google_logging_metric.boot_failures.name}\" AND ${local.on_cloud_run}"
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "1800s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
      evaluation_missing_data = "EVALUATION_MISSING_DATA_INACTIVE"
    }
  }
  documentation {
    mime_type = "text/markdown"
    subject   = "Egress proxies: a proxy VM did not become ready"
    content   = <<-EOT
      A proxy VM was not serving ${var.boot_timeout} after its creation (why=BootTimeout), or said its bootstrap failed (why=BootFailed). The reconciler replaces it; after ${var.max_boot_failures} in a row the proxy is Failed, with the last lines of the VM's serial console in its status message.

      1. Find the VMs in the [Logs Explorer](${local.logs_explorer}): `jsonPayload.message="instance did not become ready"`; providerID names the VM, why the failure.
      2. While the VM exists, read its console: `gcloud compute instances get-serial-port-output VM --zone=ZONE --project=${var.project_id}`, and look for the `egress-bootstrap` lines.
      3. Usual causes: the probe target (${var.probe_target}) unreachable through the proxy; no route to the internet from the proxies' network (GCP_NETWORK in Reconcile's environment); the VMs' service account (${google_service_account.proxy_vm.email}) without the pubsub scope it calls home with.

      The incident closes after half an hour without a boot failure.
    EOT
  }
}

# A create Compute refused for quota: the proxy waits, and the sweep retries
# it about every tick, logging the refusal again, until the quota is there.
# Nothing in the system can raise a quota, so the first refusal pages. The
# window is two ticks, so that while any proxy waits every window holds a
# refusal and the incident stays open; two ticks without one close it.
resource "google_monitoring_alert_policy" "quota" {
  display_name          = "Egress proxies: Compute quota exceeded"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = var.notification_channels
  conditions {
    display_name = "VM creates refused for quota"
    condition_threshold {
      filter          = "metric.type=\"${local.user_metric}/${google_logging_metric.quota_errors.name}\" AND ${local.on_cloud_run}"
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "${2 * local.gc_interval_seconds}s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
      evaluation_missing_data = "EVALUATION_MISSING_DATA_INACTIVE"
    }
  }
  documentation {
    mime_type = "text/markdown"
    subject   = "Egress proxies: Compute quota exceeded; proxies are waiting"
    content   = <<-EOT
      Compute refused to create a proxy VM for want of quota. The proxy waits with reason QuotaExceeded, and the sweep retries it every few minutes until the quota is there; no proxy waiting on it becomes Ready meanwhile.

      1. See which quota in the [Logs Explorer](${local.logs_explorer}): the `error` of the lines `jsonPayload.message="quota exceeded; the sweep retries"` names it (CPUs, in-use or static external addresses).
      2. Compare usage and limit: `gcloud compute regions describe REGION --project=${var.project_id}`.
      3. Raise the quota (IAM & Admin, Quotas), or delete proxies nobody needs. The waiting proxies are created at the next retry.

      The incident closes when two garbage-collection intervals pass without a refusal.
    EOT
  }
}

# A refused run deleted nothing because it would have deleted a fleet: more
# than gc_max_deletes resources, or any while no proxy document exists. It
# is a mistake (a wrong or empty database, a wrong deployment name) far more
# often than garbage, and nothing mends it by itself: every tick refuses
# again, so the first one pages. Two ticks without a refusal close it.
resource "google_monitoring_alert_policy" "gc_refused" {
  display_name          = "Egress proxies: garbage collection refused"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = var.notification_channels
  conditions {
    display_name = "Garbage-collection runs refused"
    condition_threshold {
      filter          = "metric.type=\"${local.user_metric}/${google_logging_metric.gc_refused.name}\" AND ${local.on_cloud_run}"
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "${2 * local.gc_interval_seconds}s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
      }
      evaluation_missing_data = "EVALUATION_MISSING_DATA_INACTIVE"
    }
  }
  documentation {
    mime_type = "text/markdown"
    subject   = "Egress proxies: garbage collection refused to delete"
    content   = <<-EOT
      A CollectGarbage run would have deleted more than ${var.gc_max_deletes} VMs and addresses, or some while no proxy document exists at all, and deleted nothing. Until this is resolved no orphaned VM of deployment ${var.deployment} is deleted.

      1. Read the line in the [Logs Explorer](${local.logs_explorer}): `jsonPayload.message="gc refused"`; `why` says which rule, `wouldDelete` how many, `documents` how many proxy documents the run read, `byProvider` whose.
      2. Check that the functions read the right database (project ${var.project_id}, Firestore `(default)`) and that no other deployment in the project uses the name `${var.deployment}` (variable `deployment`). An empty or wrong database makes every VM look orphaned: fix that, and the next run deletes nothing it should not.
      3. If the resources really are garbage, let one run through and set the limit back: `terraform apply -var gc_max_deletes=N` with N above wouldDelete, or `-var gc_allow_empty_database=true` when no document exists on purpose; then `gcloud scheduler jobs run ${google_cloud_scheduler_job.gc.name} --location=${var.region} --project=${var.project_id}`, and apply again without the variable.

      The incident closes when two garbage-collection intervals pass without a refusal.
    EOT
  }
}

# A namespace's month to date reached 80% (budget_80) or 100% (budget_100)
# of its budget: the collector logs the line once a month per threshold and
# namespace (internal/budgetalert), so the first one pages, one incident per
# namespace; it closes after a day without another. One policy per
# threshold of budgetalert.Thresholds (TestBudgetAlertPerThreshold).
resource "google_monitoring_alert_policy" "budget_80" {
  display_name          = "Egress proxies: a namespace spent 80% of its budget"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = var.notification_channels
  conditions {
    display_name = "Namespaces at 80% of their budget"
    condition_threshold {
      filter          = "metric.type=\"${local.user_metric}/${google_logging_metric.budget_thresholds.name}\" AND metric.label.threshold=\"80\" AND ${local.on_cloud_run}"
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "86400s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.namespace"]
      }
      evaluation_missing_data = "EVALUATION_MISSING_DATA_INACTIVE"
    }
  }
  documentation {
    mime_type = "text/markdown"
    subject   = "Egress proxies: a namespace spent 80% of its budget this month"
    content   = <<-EOT
      A namespace's month to date (what its proxies cost so far, and what its deleted proxies spent) reached 80% of its monthly budget. Its requests go on being admitted while their forecast fits the budget. The namespace is the incident's `namespace` label.

      1. Read the line in the [Logs Explorer](${local.logs_explorer}): `jsonPayload.message="budget threshold reached"`; `namespace`, `month`, `monthToDate`, `forecast` and `budget` are the figures, `owners` whom to tell.
      2. Tell the namespace's owners; they see the month with `egress namespaces get NAMESPACE`.
      3. If the budget is too small, a platform admin raises it: a `PATCH /v1/namespaces/NAMESPACE` with `{"budget": {"monthly": "AMOUNT", "currency": "CURRENCY"}}`. A new budget is told afresh when the month reaches its thresholds.

      Each threshold is told once a month per namespace. The incident closes after a day.
    EOT
  }
}

resource "google_monitoring_alert_policy" "budget_100" {
  display_name          = "Egress proxies: a namespace spent its whole budget"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = var.notification_channels
  conditions {
    display_name = "Namespaces at 100% of their budget"
    condition_threshold {
      filter          = "metric.type=\"${local.user_metric}/${google_logging_metric.budget_thresholds.name}\" AND metric.label.threshold=\"100\" AND ${local.on_cloud_run}"
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"
      aggregations {
        alignment_period     = "86400s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.namespace"]
      }
      evaluation_missing_data = "EVALUATION_MISSING_DATA_INACTIVE"
    }
  }
  documentation {
    mime_type = "text/markdown"
    subject   = "Egress proxies: a namespace spent its whole budget this month"
    content   = <<-EOT
      A namespace's month to date (what its proxies cost so far, and what its deleted proxies spent) reached 100% of its monthly budget. Requests whose forecast exceeds the budget are refused (BUDGET_EXCEEDED); the proxies carry on unless the namespace's atBudget says otherwise. The namespace is the incident's `namespace` label.

      1. Read the line in the [Logs Explorer](${local.logs_explorer}): `jsonPayload.message="budget threshold reached"`; `namespace`, `month`, `monthToDate`, `forecast` and `budget` are the figures, `owners` whom to tell.
      2. Tell the namespace's owners; they see the month with `egress namespaces get NAMESPACE`.
      3. If the budget is too small, a platform admin raises it: a `PATCH /v1/namespaces/NAMESPACE` with `{"budget": {"monthly": "AMOUNT", "currency": "CURRENCY"}}`. A new budget is told afresh when the month reaches its thresholds.

      Each threshold is told once a month per namespace. The incident closes after a day.
    EOT
  }
}
