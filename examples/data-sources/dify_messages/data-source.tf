resource "dify_conversation" "trip" {
  query = "What will three nights in Lisbon cost for two?"
}

data "dify_messages" "trip" {
  conversation_id = dify_conversation.trip.id
}

# Every tool the agent called during the conversation.
output "tools_used" {
  value = distinct(flatten([
    for m in data.dify_messages.trip.messages : [for t in m.agent_thoughts : t.tool if t.tool != ""]
  ]))
}
