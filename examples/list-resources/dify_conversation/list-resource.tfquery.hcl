# conversations.tfquery.hcl — run `terraform query` next to a configuration
# that has the dify provider block.
list "dify_conversation" "alice" {
  provider = dify

  config {
    user          = "alice"  # default: the provider's user
    name_contains = "lisbon" # optional, case-insensitive
  }
}
