# ANNOTATION_ID: an annotation by its id (as listed by the dify_annotations data source or `terraform query`).
terraform import dify_annotation.hours 6f1a2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b
