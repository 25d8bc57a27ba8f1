data "dify_conversations" "recent" {
  user        = "alice"       # defaults to the provider's user
  sort_by     = "-created_at" # newest first
  max_results = 50
}

output "conversation_names" {
  value = [for c in data.dify_conversations.recent.conversations : c.name]
}
