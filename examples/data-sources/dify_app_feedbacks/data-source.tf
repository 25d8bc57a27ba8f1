# What end users disliked, with their comments.
data "dify_app_feedbacks" "dislikes" {
  rating      = "dislike"
  from_source = "user"
}

output "dislikes" {
  value = [for f in data.dify_app_feedbacks.dislikes.feedbacks : { message = f.message_id, comment = f.content }]
}
