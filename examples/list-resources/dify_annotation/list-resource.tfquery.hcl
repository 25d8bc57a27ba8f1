# annotations.tfquery.hcl — find annotations made in the console and adopt
# them with `terraform query -generate-config-out=annotations.tf`.
list "dify_annotation" "refunds" {
  provider = dify

  config {
    keyword = "refund" # optional, case-insensitive, question or answer
  }
}
