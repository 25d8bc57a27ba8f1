# dify_file does not support import: Dify's Service API has no endpoint that
# returns an uploaded file by its id, so nothing about an existing upload can
# be read back. Upload the file again with a new dify_file resource instead.
