output "api_url" {
  description = "Base URL of the ProxyAPI: POST $api_url/v1/namespaces/NS/proxies with an identity token."
  value       = google_cloudfunctions2_function.api.service_config[0].uri
}

output "functions" {
  description = "The deployed functions by entry point."
  value = {
    ProxyAPI       = google_cloudfunctions2_function.api.name
    Reconcile      = google_cloudfunctions2_function.reconcile.name
    CollectGarbage = google_cloudfunctions2_function.gc.name
  }
}

output "topics" {
  description = "The Pub/Sub topics: reconcile requests, GC ticks and dead letters."
  value = {
    reconcile   = google_pubsub_topic.reconcile.name
    gc          = google_pubsub_topic.gc.name
    dead_letter = google_pubsub_topic.dead_letter.name
  }
}

output "service_accounts" {
  description = "One service account per function, the triggers' and the proxy VMs'."
  value = {
    api       = google_service_account.api.email
    reconcile = google_service_account.reconcile.email
    gc        = google_service_account.gc.email
    triggers  = google_service_account.trigger.email
    proxy_vm  = google_service_account.proxy_vm.email
  }
}

output "console_url" {
  description = "The web console, behind IAP when console_enabled; empty otherwise."
  value       = var.console_enabled ? "${google_cloudfunctions2_function.api.service_config[0].uri}/console/" : ""
}

output "status_source_ranges" {
  description = "With hetzner or aws: the functions' fixed egress address (VM_STATUS_SOURCE_RANGES), which the hetzner-firewall module's and the aws/ module's status_source_ranges open to the proxy ports for the status request."
  value       = [for a in google_compute_address.control_egress : "${a.address}/32"]
}
