data "dify_app_parameters" "this" {}

# The variables a conversation's `inputs` may set, and which are required.
output "input_variables" {
  value = {
    for item in data.dify_app_parameters.this.user_input_form : item.variable => {
      label    = item.label
      required = item.required
      options  = item.options
    }
  }
}

output "image_upload_limit_mb" {
  value = data.dify_app_parameters.this.system_parameters.image_file_size_limit
}
