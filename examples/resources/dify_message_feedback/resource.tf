resource "dify_conversation" "smoke" {
  query = "What are your opening hours?"
}

# The end user rates the first answer of the conversation.
resource "dify_message_feedback" "smoke" {
  message_id = dify_conversation.smoke.message_id
  rating     = "like" # or "dislike"
  content    = "Correct and short."
}
