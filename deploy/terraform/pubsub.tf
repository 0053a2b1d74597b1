# proxy-reconcile carries reconcile requests (requeues and the sweep's
# fan-out) to Reconcile, and only the functions publish there;
# proxy-callhome carries the proxy VMs' call-homes to Reconcile, which
# takes there only a message that names a proxy's uid (checked against its
# VM); proxy-gc carries Cloud Scheduler's ticks to CollectGarbage; what
# none could deliver goes to proxy-dead-letter.
resource "google_pubsub_topic" "reconcile" {
  name       = "proxy-reconcile"
  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic" "callhome" {
  name       = "proxy-callhome"
  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic" "gc" {
  name       = "proxy-gc"
  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic" "dead_letter" {
  name       = "proxy-dead-letter"
  depends_on = [google_project_service.apis]
}

# Keeps dead letters for a person to read (a week).
resource "google_pubsub_subscription" "dead_letter" {
  name                       = "proxy-dead-letter"
  topic                      = google_pubsub_topic.dead_letter.id
  message_retention_duration = "604800s"
}

# proxy-reconcile → Reconcile. A push subscription in the shape Eventarc's
# Pub/Sub triggers use (the functions framework turns the push into a
# messagePublished CloudEvent), rather than an Eventarc trigger, because
# Eventarc creates its subscription itself and gives it no dead-letter
# policy. Reconcile answers 5xx only when the document store failed; the
# backoff spaces the retries and the dead-letter topic ends them.
# Each of Reconcile's two topics has one, the topic named in the endpoint:
# the framework makes it the event's source, which is how Reconcile tells
# the functions' requests from the VMs' call-homes (a publisher cannot set
# it).
resource "google_pubsub_subscription" "reconcile" {
  for_each             = { reconcile = google_pubsub_topic.reconcile, callhome = google_pubsub_topic.callhome }
  name                 = "${each.value.name}-to-reconcile"
  topic                = each.value.id
  ack_deadline_seconds = 600
  push_config {
    push_endpoint = "${google_cloudfunctions2_function.reconcile.service_config[0].uri}/projects/${var.project_id}/topics/${each.value.name}?__GCP_CloudEventsMode=CUSTOM_PUBSUB_projects%2F${var.project_id}%2Ftopics%2F${each.value.name}"
    oidc_token {
      service_account_email = google_service_account.trigger.email
      audience              = google_cloudfunctions2_function.reconcile.service_config[0].uri
    }
  }
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.dead_letter.id
    max_delivery_attempts = 10
  }
}

# Pub/Sub's own service agent moves undeliverable messages to the dead
# letter topic and mints the push's identity tokens.
resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  topic  = google_pubsub_topic.dead_letter.id
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_pubsub_subscription_iam_member" "dead_letter_subscriber" {
  for_each     = google_pubsub_subscription.reconcile
  subscription = each.value.id
  role         = "roles/pubsub.subscriber"
  member       = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_service_account_iam_member" "pubsub_token_creator" {
  service_account_id = google_service_account.trigger.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

# Cloud Scheduler's tick: every few minutes, one message on proxy-gc.
resource "google_cloud_scheduler_job" "gc" {
  name     = "proxy-gc"
  region   = var.region
  schedule = var.gc_schedule
  pubsub_target {
    topic_name = google_pubsub_topic.gc.id
    data       = base64encode("{\"from\":\"cloud-scheduler\"}")
  }
  depends_on = [google_project_service.apis]
}

# Where the reconcile subscription was before proxy-callhome had its own.
moved {
  from = google_pubsub_subscription.reconcile
  to   = google_pubsub_subscription.reconcile["reconcile"]
}

moved {
  from = google_pubsub_subscription_iam_member.dead_letter_subscriber
  to   = google_pubsub_subscription_iam_member.dead_letter_subscriber["reconcile"]
}
