# Lets this example be validated on its own; the docs show only the other file.
terraform {
  # content_wo is a write-only attribute (Terraform >= 1.11); on older Terraform and on
  # OpenTofu 1.10, use source instead.
  required_version = ">= 1.11"
  required_providers {
    dify = {
      source = "difyops/dify"
    }
  }
}
