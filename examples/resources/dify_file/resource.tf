# From a local file: editing the file replaces the upload (sha256 is computed at plan time).
resource "dify_file" "itinerary" {
  source = "${path.module}/itinerary.md"
  user   = "alice" # must match the user of the conversations that use it
}

# Inline text.
resource "dify_file" "notes" {
  filename = "notes.md"
  content  = "# Packing list\n- passport\n- charger\n"
}

# Binary content, usually filebase64("photo.png"); here a 1x1 PNG.
resource "dify_file" "photo" {
  filename       = "photo.png"
  content_base64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
}
