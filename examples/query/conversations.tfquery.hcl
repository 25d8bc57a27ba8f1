list "dify_conversation" "alice" {
  provider = dify

  config {
    user = "alice"
  }
}
