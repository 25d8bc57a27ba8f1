# Lets this example be validated on its own; the docs show only the other file.
terraform {
  required_providers {
    dify = {
      source = "difyops/dify"
    }
  }
}
