# The app's one setting has the fixed id "annotation-reply". Its values
# cannot be read back, so the first apply after the import runs the enable
# job with the configured values.
terraform import dify_annotation_reply.this annotation-reply
