data "dify_app_info" "this" {}

output "app" {
  value = "${data.dify_app_info.this.name} (${data.dify_app_info.this.mode}) by ${data.dify_app_info.this.author_name}"
}
