terraform {
  required_version = ">= 1.6"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.36, < 8.0"
    }
  }
}

provider "google" {
  project = var.project_id
  region  = var.region
}
