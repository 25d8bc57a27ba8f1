# A smoke test that runs whenever the curated answers change: it asks the app
# one question, streams the agent's progress into the Terraform output, and
# fails the apply when the answer does not mention the expected text. The
# conversation it starts is deleted afterwards.
action "dify_chat" "smoke" {
  config {
    query                 = "What will three nights in Lisbon cost for two?"
    inputs                = { home_city = "Berlin", budget = "medium" }
    expect_answer_matches = "(?i)\\d+ EUR"
    timeout               = "3m"
  }
}

resource "terraform_data" "release" {
  input = "2026-11-30" # bump to re-run the smoke test

  lifecycle {
    action_trigger {
      events  = [after_create, after_update]
      actions = [action.dify_chat.smoke]
    }
  }
}

# Or run it on demand:
#   terraform apply -invoke=action.dify_chat.smoke
