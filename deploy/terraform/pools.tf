# Warm pools (internal/pools): Reconcile also runs for every write of a
# pool's document and of a pool's member. A function has one event_trigger
# (functions.tf, the proxies'), so these are Eventarc triggers of their own
# on the function's Cloud Run service, with the same event type, database
# and service account.
resource "google_eventarc_trigger" "reconcile_pools" {
  name                    = "proxy-reconcile-pools"
  location                = var.firestore_location
  service_account         = google_service_account.trigger.email
  event_data_content_type = "application/protobuf"
  matching_criteria {
    attribute = "type"
    value     = "google.cloud.firestore.document.v1.written"
  }
  matching_criteria {
    attribute = "database"
    value     = google_firestore_database.default.name
  }
  matching_criteria {
    attribute = "document"
    value     = "pools/{pool}"
    operator  = "match-path-pattern"
  }
  destination {
    cloud_run_service {
      service = google_cloudfunctions2_function.reconcile.name
      region  = var.region
    }
  }
  depends_on = [google_project_service.apis, google_project_iam_member.trigger_receiver]
}

resource "google_eventarc_trigger" "reconcile_members" {
  name                    = "proxy-reconcile-members"
  location                = var.firestore_location
  service_account         = google_service_account.trigger.email
  event_data_content_type = "application/protobuf"
  matching_criteria {
    attribute = "type"
    value     = "google.cloud.firestore.document.v1.written"
  }
  matching_criteria {
    attribute = "database"
    value     = google_firestore_database.default.name
  }
  matching_criteria {
    attribute = "document"
    value     = "pools/{pool}/proxies/{proxy}"
    operator  = "match-path-pattern"
  }
  destination {
    cloud_run_service {
      service = google_cloudfunctions2_function.reconcile.name
      region  = var.region
    }
  }
  depends_on = [google_project_service.apis, google_project_iam_member.trigger_receiver]
}

# A claim draws a warm member at random (internal/store.drawWarm): the
# claimable members of a pool (status.phase Ready, claimedBy null) from a
# uid on, ordered by uid. Equality on two fields and a range on a third
# need this composite index.
resource "google_firestore_index" "claim_draw" {
  database    = google_firestore_database.default.name
  collection  = "proxies"
  query_scope = "COLLECTION"
  fields {
    field_path = "status.phase"
    order      = "ASCENDING"
  }
  fields {
    field_path = "claimedBy"
    order      = "ASCENDING"
  }
  fields {
    field_path = "uid"
    order      = "ASCENDING"
  }
}
