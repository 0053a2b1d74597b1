# The aws provider's part on Google's side, used only when
# providers_enabled names aws: what the two functions that call EC2 read
# (the role they assume, the audience of the ID tokens they exchange for
# its credentials, the regions and zones they may use), and what the AWS
# side (the aws/ module, its own root module, applied with AWS
# credentials) needs from here: the audience and the unique ids of the
# functions' accounts, the only identities the role trusts. No AWS key
# is made, stored or read: the functions' own Google identities are the
# proof (docs/operations/aws.md).
locals {
  aws_enabled = contains(var.providers_enabled, "aws")
  # The audience of the functions' ID tokens for AWS: this project's and
  # deployment's, so no other deployment's token is one the role trusts.
  aws_audience = "https://egress-proxies.${var.project_id}.${var.deployment}/aws"
  # The role the aws/ module makes, by its predictable ARN: the AWS side
  # is applied after this module, from its outputs.
  aws_role_arn = var.aws_account_id == "" ? "" : "arn:aws:iam::${var.aws_account_id}:role/egress-proxy-${var.deployment}"
  # What the aws provider reads, in the functions that call it.
  aws_env = {
    AWS_ALLOWED_REGIONS = join(",", var.aws_allowed_regions)
    AWS_ALLOWED_ZONES   = join(",", var.aws_allowed_zones)
    AWS_ROLE_ARN        = local.aws_role_arn
    AWS_AUDIENCE        = local.aws_audience
  }
}

output "aws_audience" {
  description = "The audience of the functions' Google ID tokens for AWS (AWS_AUDIENCE): the aws/ module's variable audience."
  value       = local.aws_audience
}

output "aws_function_account_ids" {
  description = "The unique ids of the service accounts of Reconcile and CollectGarbage, the functions that call EC2: the aws/ module's variable function_account_ids, the only subjects its role trusts."
  value       = [google_service_account.reconcile.unique_id, google_service_account.gc.unique_id]
}
