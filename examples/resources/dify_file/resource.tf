# From a local file: only the path and the sha256 are stored in state, and editing the
# file replaces the upload (sha256 is computed at plan time). Works on every Terraform
# and OpenTofu version.
resource "dify_file" "itinerary" {
  source = "${path.module}/itinerary.md"
  user   = "alice" # must match the user of the conversations that use it
}

# Text made in the configuration, write-only (Terraform >= 1.11): the text is never stored
# in state or plan files. Terraform keeps no copy to compare with, so bump
# content_wo_version to upload a changed text.
resource "dify_file" "notes" {
  filename           = "notes.md"
  content_wo         = "# Packing list\n- passport\n- charger\n"
  content_wo_version = 1
}

# Binary content, usually filebase64("photo.png"); here a 1x1 PNG. Like the deprecated
# content, content_base64 is stored in state: prefer source for anything large.
resource "dify_file" "photo" {
  filename       = "photo.png"
  content_base64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
}
