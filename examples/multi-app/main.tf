# Two Dify apps in one root module: one provider configuration per app, each
# an alias with that app's API key (in Dify an API key belongs to one app).
#
# Against dify-mock serving both apps (README.md here):
#
#   dify-mock serve --app support=examples/mock-apps/support-agent.yml \
#                   --app helper=examples/mock-apps/legacy-helper.yml
#   terraform apply -var support_api_key=app-support -var helper_api_key=app-helper
terraform {
  required_providers {
    dify = {
      source = "difyops/dify"
    }
  }
}

variable "base_url" {
  description = "Dify API base URL; one server serves both apps."
  type        = string
  default     = "http://127.0.0.1:5001/v1"
}

variable "support_api_key" {
  description = "API key of the support app."
  type        = string
  sensitive   = true
}

variable "helper_api_key" {
  description = "API key of the helper app."
  type        = string
  sensitive   = true
}

variable "user" {
  description = "The end user both conversations are started as."
  type        = string
  default     = "platform-team"
}

variable "inputs" {
  description = "Values for the apps' form fields, by variable name; each app gets the ones it declares."
  type        = map(string)
  default = {
    customer_name = "Ada"    # support-agent.yml: required
    city          = "Lisbon" # legacy-helper.yml: required
  }
}

provider "dify" {
  alias    = "support"
  base_url = var.base_url
  api_key  = var.support_api_key
  user     = var.user
}

provider "dify" {
  alias    = "helper"
  base_url = var.base_url
  api_key  = var.helper_api_key
  user     = var.user
}

data "dify_app_info" "support" {
  provider = dify.support
}

data "dify_app_info" "helper" {
  provider = dify.helper
}

data "dify_app_parameters" "support" {
  provider = dify.support
}

data "dify_app_parameters" "helper" {
  provider = dify.helper
}

resource "dify_conversation" "support" {
  provider = dify.support
  query    = "Hello"
  inputs = {
    for item in data.dify_app_parameters.support.user_input_form : item.variable => var.inputs[item.variable]
    if contains(keys(var.inputs), item.variable)
  }
}

resource "dify_conversation" "helper" {
  provider = dify.helper
  query    = "Hello"
  inputs = {
    for item in data.dify_app_parameters.helper.user_input_form : item.variable => var.inputs[item.variable]
    if contains(keys(var.inputs), item.variable)
  }
}

# A file uploaded in each app names the end user that uploaded it: the same
# user string is a different end user in each app.
resource "dify_file" "support" {
  provider = dify.support
  filename = "notes.md"
  content  = "Order 1234: the customer asks about delivery."
}

resource "dify_file" "helper" {
  provider = dify.helper
  filename = "notes.md"
  content  = "Trip: three nights in Lisbon."
}

output "apps" {
  value = {
    support = "${data.dify_app_info.support.name} (${data.dify_app_info.support.mode})"
    helper  = "${data.dify_app_info.helper.name} (${data.dify_app_info.helper.mode})"
  }
}

output "conversations" {
  value = {
    support = dify_conversation.support.id
    helper  = dify_conversation.helper.id
  }
}

output "end_users" {
  description = "The end user var.user is in each app: two ids."
  value = {
    support = dify_file.support.created_by
    helper  = dify_file.helper.created_by
  }
}
