data "dify_app_meta" "this" {}

# Empty for New Agent apps.
output "tool_icons" {
  value = data.dify_app_meta.this.tool_icons
}
