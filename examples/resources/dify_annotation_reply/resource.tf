# Turn annotation reply on: Dify answers a query from the closest
# annotation whose similarity reaches score_threshold. Enabling runs a job
# that embeds every annotation question; the apply waits for it.
resource "dify_annotation_reply" "this" {
  score_threshold         = 0.9
  embedding_provider_name = "openai"
  embedding_model_name    = "text-embedding-3-small"

  timeouts {
    create = "15m" # embedding many annotations takes a while (default 10m)
  }

  # Enable after the annotations exist, so they are embedded by this job.
  depends_on = [dify_annotation.hours]
}

resource "dify_annotation" "hours" {
  question = "What are your opening hours?"
  answer   = "9am to 5pm, Monday to Friday."
}
