# Curated answers, reviewed like code. With annotation reply on (see
# dify_annotation_reply), a query close to a question is answered with its
# answer directly, without running the agent.
resource "dify_annotation" "hours" {
  question = "What are your opening hours?"
  answer   = "9am to 5pm, Monday to Friday."
}

locals {
  faq = {
    refund  = { q = "Can I get a refund?", a = "Yes, within 30 days of booking." }
    luggage = { q = "How much luggage can I bring?", a = "One cabin bag and one checked bag of 23 kg." }
  }
}

resource "dify_annotation" "faq" {
  for_each = local.faq
  question = each.value.q
  answer   = each.value.a
}

output "hits" {
  value = { for k, a in dify_annotation.faq : k => a.hit_count }
}
