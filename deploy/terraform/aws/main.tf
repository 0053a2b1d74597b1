# The aws provider's side in AWS: the role the two functions that call
# EC2 (Reconcile, CollectGarbage) assume by federation, its trust of their
# Google identities, its policy (the EC2 actions the provider calls, on
# this deployment's resources only, where EC2 lets a policy say so), and
# the security group of the proxies in each allowed region. There is no
# AWS key anywhere: each function exchanges its Google-signed ID token for
# the audience with STS AssumeRoleWithWebIdentity for the role's
# credentials, which last an hour. Its own root module: a Google-only
# deployment never needs the aws provider or an AWS account.
#
# Apply it with credentials of an AWS administrator (yours, for this
# apply only), after the main module, with the main module's outputs
# aws_audience and aws_function_account_ids (docs/operations/aws.md):
#
#   terraform -chdir=deploy/terraform/aws apply \
#     -var deployment=egress -var 'regions=["us-east-1","eu-central-1"]' \
#     -var audience=$(terraform -chdir=deploy/terraform output -raw aws_audience) \
#     -var "function_account_ids=$(terraform -chdir=deploy/terraform output -json aws_function_account_ids)" \
#     -var 'allowed_source_ranges=["203.0.113.0/24"]'
terraform {
  required_version = ">= 1.6"
  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 6.0 gave every regional resource its region argument: one apply
      # makes the security group in each allowed region.
      version = ">= 6.0, < 7.0"
    }
  }
}

provider "aws" {
  region = var.regions[0]
}

variable "deployment" {
  description = "The deployment's name (DEPLOYMENT), as in the main module: every resource the aws provider makes carries it as the tag egress-deployment, and the policy allows nothing of another's."
  type        = string
  default     = "egress"
}

variable "regions" {
  description = "The regions the provider may use (AWS_ALLOWED_REGIONS, as in the main module): each gets the proxies' security group, in its default VPC."
  type        = list(string)
  validation {
    condition     = length(var.regions) > 0 && alltrue([for r in var.regions : can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$", r))])
    error_message = "regions must hold at least one AWS region name, such as us-east-1."
  }
}

variable "audience" {
  description = "The audience of the functions' Google ID tokens (AWS_AUDIENCE: the main module's output aws_audience); the role trusts tokens for it only."
  type        = string
}

variable "function_account_ids" {
  description = "The unique ids (numeric) of the Google service accounts of Reconcile and CollectGarbage (the main module's output aws_function_account_ids): the only subjects the role trusts."
  type        = list(string)
  validation {
    condition     = length(var.function_account_ids) > 0 && alltrue([for id in var.function_account_ids : can(regex("^[0-9]{10,30}$", id))])
    error_message = "function_account_ids must hold the numeric unique ids of the functions' service accounts."
  }
}

variable "proxy_ports" {
  description = "TCP ports (or ranges such as \"3128-3130\") to open, as in the main module (PROXY_PORTS)."
  type        = list(string)
  default     = ["3128"]
}

variable "allowed_source_ranges" {
  description = "CIDRs that may reach them, as in the main module (FIREWALL_SOURCE_RANGES)."
  type        = list(string)
  validation {
    condition     = length(var.allowed_source_ranges) > 0 && alltrue([for r in var.allowed_source_ranges : can(cidrhost(r, 0))])
    error_message = "allowed_source_ranges must hold at least one valid CIDR."
  }
}

variable "status_source_ranges" {
  description = "The control plane's egress addresses (the main module's output status_source_ranges): opened to the proxy ports too, where each instance answers them its status and nothing else."
  type        = list(string)
  validation {
    condition     = length(var.status_source_ranges) > 0 && alltrue([for r in var.status_source_ranges : can(cidrhost(r, 0))])
    error_message = "status_source_ranges must hold at least one valid CIDR: the main module's output status_source_ranges."
  }
}

locals {
  security_group = "egress-proxy-${var.deployment}"
  ipv4_ranges    = [for r in var.allowed_source_ranges : r if !strcontains(r, ":")]
  ipv6_ranges    = [for r in var.allowed_source_ranges : r if strcontains(r, ":")]
}

# The role. Its trust: Google's identity provider (accounts.google.com,
# which AWS knows without an identity provider resource), tokens for the
# audience only (accounts.google.com:oaud is the token's aud), and the
# two functions' accounts only (accounts.google.com:aud is a service
# account token's azp, and :sub its subject: both the account's unique
# id).
resource "aws_iam_role" "functions" {
  name                 = local.security_group
  description          = "Assumed by the egress proxies' functions (deployment ${var.deployment}) with their Google identities; no key."
  max_session_duration = 3600
  assume_role_policy = templatefile("${path.module}/trust.json.tftpl", {
    audience = var.audience
    subjects = jsonencode(var.function_account_ids)
  })
  tags = { "egress-deployment" = var.deployment }
}

# The role's policy: policy.json.tftpl, which deploy's tests hold to the
# EC2 calls the functions' code makes.
resource "aws_iam_role_policy" "ec2" {
  name = "egress-ec2"
  role = aws_iam_role.functions.id
  policy = templatefile("${path.module}/policy.json.tftpl", {
    deployment = var.deployment
  })
}

# The proxies' security group in each region's default VPC (the provider
# launches into it by name): the proxy ports from the allowed sources and
# from the control plane's egress addresses (its status request), and
# every destination out, which the VM's own filter narrows.
data "aws_vpc" "default" {
  for_each = toset(var.regions)
  region   = each.value
  default  = true
}

resource "aws_security_group" "proxy" {
  for_each    = toset(var.regions)
  region      = each.value
  name        = local.security_group
  description = "egress proxies of deployment ${var.deployment}: the proxy ports from the allowed sources"
  vpc_id      = data.aws_vpc.default[each.key].id
  tags        = { "egress-deployment" = var.deployment, "proxy-operator-managed" = "true" }

  dynamic "ingress" {
    for_each = var.proxy_ports
    content {
      description      = "proxy port ${ingress.value}"
      protocol         = "tcp"
      from_port        = tonumber(split("-", ingress.value)[0])
      to_port          = tonumber(element(split("-", ingress.value), length(split("-", ingress.value)) - 1))
      cidr_blocks      = local.ipv4_ranges
      ipv6_cidr_blocks = local.ipv6_ranges
    }
  }
  # SOCKS5's UDP relay listens on its proxy port's number (spec.socks5UDP);
  # where no proxy turned it on, the VM's own filter drops the datagrams.
  dynamic "ingress" {
    for_each = var.proxy_ports
    content {
      description      = "SOCKS5 UDP relay on port ${ingress.value}"
      protocol         = "udp"
      from_port        = tonumber(split("-", ingress.value)[0])
      to_port          = tonumber(element(split("-", ingress.value), length(split("-", ingress.value)) - 1))
      cidr_blocks      = local.ipv4_ranges
      ipv6_cidr_blocks = local.ipv6_ranges
    }
  }
  # The control plane's status request: the instance's engine answers
  # these addresses the status alone (vmconfig.StatusAccess).
  dynamic "ingress" {
    for_each = var.proxy_ports
    content {
      description = "status of the proxy on port ${ingress.value}, from the control plane"
      protocol    = "tcp"
      from_port   = tonumber(split("-", ingress.value)[0])
      to_port     = tonumber(element(split("-", ingress.value), length(split("-", ingress.value)) - 1))
      cidr_blocks = var.status_source_ranges
    }
  }
  egress {
    description      = "the proxied traffic"
    protocol         = "-1"
    from_port        = 0
    to_port          = 0
    cidr_blocks      = ["0.0.0.0/0"]
    ipv6_cidr_blocks = ["::/0"]
  }
}

output "role_arn" {
  description = "The role the functions assume (AWS_ROLE_ARN): the main module composes it from aws_account_id and the deployment."
  value       = aws_iam_role.functions.arn
}
