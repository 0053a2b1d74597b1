# The web console (/console/ on the API's URL): people sign in through
# Identity-Aware Proxy for Cloud Run, which the API's service turns on when
# var.console_enabled is set; the API verifies IAP's signed header against
# the audience main.tf gives it (IAP_AUDIENCE). IAP calls the service as
# its own service agent, which must be an invoker; the people who may
# open the console are var.console_users (the API's namespaces and roles
# still decide what each sees).

resource "google_project_service" "iap" {
  count              = var.console_enabled ? 1 : 0
  service            = "iap.googleapis.com"
  disable_on_destroy = false
}

# Cloud Run functions manage the API's Cloud Run service, and their
# resource has no IAP setting: the service is switched to IAP with gcloud
# (IAP for Cloud Run's documented `gcloud run services update --iap`), on
# every apply. plantimestamp() changes at each plan, so the step is
# replaced and runs each time: an update of the function, or a hand, that
# turned IAP off is set right by the next apply, not only by the next
# change of the function's id. The call is idempotent.
resource "terraform_data" "api_iap" {
  count            = var.console_enabled ? 1 : 0
  triggers_replace = [google_cloudfunctions2_function.api.id, google_cloudfunctions2_function.api.service_config[0].service, plantimestamp()]
  provisioner "local-exec" {
    command = "gcloud beta run services update ${google_cloudfunctions2_function.api.name} --region=${var.region} --project=${var.project_id} --iap --quiet"
  }
  depends_on = [google_project_service.iap]
}

resource "google_cloud_run_service_iam_member" "iap_invokes_api" {
  count    = var.console_enabled ? 1 : 0
  location = var.region
  service  = google_cloudfunctions2_function.api.name
  role     = "roles/run.invoker"
  member   = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-iap.iam.gserviceaccount.com"
}

resource "google_iap_web_cloud_run_service_iam_member" "console_users" {
  for_each               = var.console_enabled ? toset(var.console_users) : toset([])
  location               = var.region
  cloud_run_service_name = google_cloudfunctions2_function.api.name
  role                   = "roles/iap.httpsResourceAccessor"
  member                 = each.value
}
