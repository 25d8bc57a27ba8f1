# Discover existing conversations with `terraform query` and adopt them:
#
#   terraform init
#   terraform query                                    # list what exists
#   terraform query -generate-config-out=generated.tf  # write resource + import blocks
#   terraform plan                                     # N to import, 0 to add, 0 to change
#   terraform apply
#
# The generated import blocks address each conversation by its identity
# (user and id); the resource blocks hold what an import reads back, so the
# plan shows only the imports.
terraform {
  required_version = ">= 1.14"
  required_providers {
    dify = {
      source = "difyops/dify"
    }
  }
}

provider "dify" {
  # base_url and api_key from DIFY_BASE_URL and DIFY_API_KEY
}
