resource "dify_file" "notes" {
  filename = "notes.md"
  content  = "# Notes\n"
  user     = "alice"
}

# created_by is Dify's id of the end user "alice".
data "dify_end_user" "alice" {
  id = dify_file.notes.created_by
}

output "end_user" {
  value = "${data.dify_end_user.alice.external_user_id} (${data.dify_end_user.alice.type}) since ${data.dify_end_user.alice.created_at}"
}
