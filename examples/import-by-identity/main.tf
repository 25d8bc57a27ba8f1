# Import a conversation by its resource identity (Terraform >= 1.12) instead
# of the USER/CONVERSATION_ID string.
terraform {
  required_version = ">= 1.12"
  required_providers {
    dify = {
      source = "difyops/dify"
    }
  }
}

import {
  to = dify_conversation.trip
  identity = {
    user = "alice"
    id   = "0b2e9c1a-5d3f-4e61-9a55-0c7e2f3b8d11"
  }
}

resource "dify_conversation" "trip" {
  user  = "alice"
  query = "Can you read my itinerary and check the connections?"
}
