package main

import "github.com/difyops/terraform-provider-dify/mockserver/record"

func init() {
	subcommands["record"] = subcommand{Summary: "proxy a real Dify and record what clients do as cassettes", Run: record.Run}
}
