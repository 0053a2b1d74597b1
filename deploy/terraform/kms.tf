# The key that wraps the keyset the proxies' passwords are sealed with
# (internal/sealing; the keyset is Firestore's keysets/credentials). A
# reader of the database (a project Viewer holds datastore.entities.get and
# list) sees the sealed passwords and the wrapped keyset; only the two
# accounts below may use this key to unwrap it.
#
# Cloud KMS never deletes a key ring, and destroying a key only schedules
# its versions for destruction: a deployment applied again after a
# `terraform destroy` imports the two (docs/operations/backup-and-recovery.md).
resource "google_kms_key_ring" "credentials" {
  name       = "egress-${var.deployment}"
  location   = var.region
  depends_on = [google_project_service.apis]
}

# A new primary version every rotation period (90 days); the older ones
# still unwrap what they wrapped.
resource "google_kms_crypto_key" "credentials" {
  name            = "proxy-credentials"
  key_ring        = google_kms_key_ring.credentials.id
  purpose         = "ENCRYPT_DECRYPT"
  rotation_period = var.credentials_key_rotation_period
}

# The ProxyAPI opens passwords (status.proxyURL) and seals new ones
# (:rotateCredentials); Reconcile seals the first ones and opens them for
# the engine's configuration. Either may make the keyset, on the first
# use of a new deployment. Nothing else may use the key: not the
# collector, not the VMs, not a Viewer.
resource "google_kms_crypto_key_iam_member" "credentials" {
  for_each = {
    api       = google_service_account.api.member
    reconcile = google_service_account.reconcile.member
  }
  crypto_key_id = google_kms_crypto_key.credentials.id
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = each.value
}
