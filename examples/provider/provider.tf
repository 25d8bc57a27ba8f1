terraform {
  required_providers {
    dify = {
      source = "difyops/dify"
    }
  }
}

# Every setting is optional: configuration > environment variable > default.
# Keep the API key out of the configuration and export DIFY_API_KEY instead.
provider "dify" {
  base_url = "https://api.dify.ai/v1" # or DIFY_BASE_URL; a self-hosted Dify: https://dify.example.com/v1
  user     = "terraform"              # or DIFY_USER: the default end user of conversations and files

  retry_max_attempts = 4     # or DIFY_RETRY_MAX_ATTEMPTS
  retry_max_delay    = "30s" # or DIFY_RETRY_MAX_DELAY
  request_timeout    = "60s" # or DIFY_REQUEST_TIMEOUT
}
