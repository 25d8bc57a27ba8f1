# Lets this example be validated on its own; the docs show only the other file.
terraform {
  required_version = ">= 1.14"
  required_providers {
    dify = {
      source = "difyops/dify"
    }
  }
}
