module github.com/difyops/terraform-provider-dify

go 1.26.8

require (
	github.com/dnaeon/go-vcr/v2 v2.1.0 // indirect
	github.com/hashicorp/terraform-plugin-framework v1.19.0 // indirect
	github.com/hashicorp/terraform-plugin-framework-timeouts v0.7.0 // indirect
	github.com/hashicorp/terraform-plugin-framework-validators v0.19.0 // indirect
	github.com/hashicorp/terraform-plugin-go v0.31.0 // indirect
	github.com/hashicorp/terraform-plugin-log v0.11.0 // indirect
	github.com/hashicorp/terraform-plugin-testing v1.16.0 // indirect
	github.com/julienschmidt/httprouter v1.3.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
