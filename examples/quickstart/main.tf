# Quickstart: read the app, upload a file, start a conversation about it.
#
# `make demo` (at the repository root) runs this against dify-mock in one go.
# By hand, with a provider built from source (see "Try it offline" in
# docs/index.md for the dev_overrides CLI configuration):
#
#   export DIFY_BASE_URL=http://127.0.0.1:5001/v1   # a running dify-mock, or your Dify
#   export DIFY_API_KEY=app-...                     # dify-mock accepts any app-... key
#   terraform apply
#   terraform apply -var conversation_name="Lisbon trip"   # renames in place
#   terraform destroy
terraform {
  required_providers {
    dify = {
      source = "difyops/dify"
    }
  }
}

provider "dify" {}

variable "conversation_name" {
  description = "Name of the conversation; change it to rename in place."
  type        = string
  default     = "Itinerary check"
}

data "dify_app_info" "app" {}

data "dify_app_parameters" "app" {}

resource "dify_file" "itinerary" {
  filename = "itinerary.md"
  content  = <<-EOT
    # Lisbon, 12-15 October
    - Fri 12: BER 07:05 -> LIS 09:55 (TP 549)
    - Mon 15: LIS 19:20 -> BER 00:45 (TP 550)
  EOT
}

resource "dify_conversation" "itinerary" {
  query = "Can you read my itinerary and check the connections?"
  name  = var.conversation_name
  files = [dify_file.itinerary.id]

  # Only the variables the app declares (see dify_app_parameters.user_input_form).
  inputs = {
    for item in data.dify_app_parameters.app.user_input_form : item.variable => "Berlin"
    if item.variable == "home_city"
  }
}

output "app" {
  value = "${data.dify_app_info.app.name} (${data.dify_app_info.app.mode})"
}

output "conversation_id" {
  value = dify_conversation.itinerary.id
}

output "answer" {
  value = dify_conversation.itinerary.answer
}

output "agent_thoughts" {
  value = [
    for t in dify_conversation.itinerary.agent_thoughts : {
      position    = t.position
      thought     = t.thought
      tool        = t.tool
      tool_input  = t.tool_input
      observation = t.observation
    } if t.tool != "" || t.thought != ""
  ]
}

output "total_tokens" {
  value = dify_conversation.itinerary.usage.total_tokens
}
