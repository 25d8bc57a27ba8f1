data "dify_annotations" "refunds" {
  keyword = "refund" # optional: question or answer contains it
}

output "refund_questions" {
  value = [for a in data.dify_annotations.refunds.annotations : a.question]
}
