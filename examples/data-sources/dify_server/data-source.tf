data "dify_server" "this" {}

output "dify_version" {
  value = data.dify_server.this.server_version
}
