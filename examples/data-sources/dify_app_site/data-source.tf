data "dify_app_site" "this" {}

output "webapp" {
  value = {
    title    = data.dify_app_site.this.title
    language = data.dify_app_site.this.default_language
    theme    = data.dify_app_site.this.chat_color_theme
  }
}
