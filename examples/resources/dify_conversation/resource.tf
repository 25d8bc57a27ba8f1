resource "dify_file" "itinerary" {
  source = "${path.module}/itinerary.md"
}

resource "dify_conversation" "trip" {
  query = "Can you read my itinerary and check the connections?"
  name  = "Lisbon trip" # optional; renaming later updates in place

  inputs = {
    home_city = "Berlin"
    budget    = "medium"
  }
  files = [dify_file.itinerary.id]

  timeouts {
    create = "45m" # how long the first reply may take (default 30m)
  }
}

output "answer" {
  value = dify_conversation.trip.answer
}

output "tools" {
  value = [for t in dify_conversation.trip.agent_thoughts : t.tool if t.tool != ""]
}
