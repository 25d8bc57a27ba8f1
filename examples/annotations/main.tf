# Curated answers as code, with a smoke test that runs when they change.
#
# `make demo` runs this against dify-mock. By hand (Terraform >= 1.14 for
# the action; see "Try it offline" in docs/index.md for dev_overrides):
#
#   export DIFY_BASE_URL=http://127.0.0.1:5001/v1   # a running dify-mock, or your Dify
#   export DIFY_API_KEY=app-...
#   terraform apply                                   # annotations, reply switch, smoke test
#   terraform apply -invoke=action.dify_chat.smoke    # the smoke test again, on demand
#   terraform apply -invoke=action.dify_chat.agent    # watch the agent think and call tools
#   terraform destroy
terraform {
  required_version = ">= 1.14"
  required_providers {
    dify = {
      source = "difyops/dify"
    }
  }
}

provider "dify" {}

resource "dify_annotation" "hours" {
  question = "What are your opening hours?"
  answer   = "We are open 9am to 5pm, Monday to Friday."
}

resource "dify_annotation" "refund" {
  question = "Can I get a refund?"
  answer   = "Yes, within 30 days of booking."
}

# While this exists, a query close enough to a question is answered with the
# annotation, without running the agent.
resource "dify_annotation_reply" "this" {
  score_threshold         = 0.8
  embedding_provider_name = "openai"
  embedding_model_name    = "text-embedding-3-small"
  depends_on              = [dify_annotation.hours, dify_annotation.refund]

  # Ask the app after every change of the reply setting.
  lifecycle {
    action_trigger {
      events  = [after_create, after_update]
      actions = [action.dify_chat.smoke]
    }
  }
}

action "dify_chat" "smoke" {
  config {
    query                 = "what are your opening hours"
    expect_answer_matches = "9am to 5pm"
    timeout               = "1m"
  }
}

# Not triggered by anything: run it with -invoke. No annotation matches this
# query, so the agent runs, and its thoughts and tool calls stream into the
# Terraform output.
action "dify_chat" "agent" {
  config {
    query                 = "What will three nights in Lisbon cost for two?"
    inputs                = { home_city = "Berlin", budget = "medium" }
    expect_answer_matches = "(?i)\\d+ EUR"
    timeout               = "2m"
  }
}

output "annotation_ids" {
  value = [dify_annotation.hours.id, dify_annotation.refund.id]
}
