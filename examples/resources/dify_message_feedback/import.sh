# USER/MESSAGE_ID: the end user who rated and the rated message.
terraform import dify_message_feedback.smoke alice/0b2e9c1a-5d3f-4e61-9a55-0c7e2f3b8d11
