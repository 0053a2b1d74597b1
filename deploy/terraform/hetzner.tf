# The hetzner provider's part, made only when providers_enabled names it:
# the secret that holds the Hetzner Cloud API token, and who may read it.
# Terraform makes the secret and never its value: add the token as a
# version yourself (docs/operations/hetzner.md), so it is in no variable,
# state or plan. Reconcile and CollectGarbage read it, on that one secret
# only; no other account may. The deployment's firewall on Hetzner is a
# module of its own (hetzner-firewall/), which only a Hetzner deployment
# applies: a Google-only one never needs the hcloud provider or a token.
locals {
  hetzner_enabled = contains(var.providers_enabled, "hetzner")
  # What the hetzner provider reads, in the functions that call it.
  hetzner_env = {
    HETZNER_TOKEN_SECRET      = join("", [for s in google_secret_manager_secret.hetzner_token : "${s.id}/versions/latest"])
    HETZNER_ALLOWED_LOCATIONS = join(",", var.hetzner_allowed_locations)
  }
}

resource "google_secret_manager_secret" "hetzner_token" {
  count     = local.hetzner_enabled ? 1 : 0
  secret_id = var.hetzner_token_secret
  labels    = { "egress-deployment" = var.deployment }
  replication {
    auto {}
  }
  depends_on = [google_project_service.apis]
}

resource "google_secret_manager_secret_iam_member" "hetzner_token_reconcile" {
  count     = local.hetzner_enabled ? 1 : 0
  secret_id = google_secret_manager_secret.hetzner_token[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.reconcile.member
}

resource "google_secret_manager_secret_iam_member" "hetzner_token_gc" {
  count     = local.hetzner_enabled ? 1 : 0
  secret_id = google_secret_manager_secret.hetzner_token[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.gc.member
}

# What Hetzner refuses, for the dashboard: creates a location had no room
# for (the provider moves the proxy to another location of the network
# zone), by location, and calls the rate limit refused (the reconciler
# waits as long as the API said), by operation. Zero while no proxy runs
# on Hetzner.
resource "google_logging_metric" "hetzner_capacity" {
  name        = "egress/hetzner_capacity"
  description = "Hetzner server creates refused for capacity (resource_unavailable, placement_error), by location (the hetzner provider's location out of capacity line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"hetzner location out of capacity\""
  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
    labels {
      key        = "location"
      value_type = "STRING"
    }
  }
  label_extractors = { location = "EXTRACT(jsonPayload.location)" }
  depends_on       = [google_project_service.apis]
}

resource "google_logging_metric" "hetzner_rate_limited" {
  name        = "egress/hetzner_rate_limited"
  description = "Hetzner API calls refused for the rate limit (429 rate_limit_exceeded), by operation (the hetzner provider's rate limit line)."
  filter      = "${local.function_logs} AND jsonPayload.message=\"hetzner rate limit reached; the call waits\""
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
