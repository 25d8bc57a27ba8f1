package main

import (
	"context"
	"io"

	"github.com/difyops/terraform-provider-dify/mockserver/lint"
)

func init() {
	subcommands["lint"] = subcommand{
		Summary: "check cassettes: format, frames, event order, fields, ids, secrets",
		Run: func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			return lint.Main(args, stdout, stderr)
		},
	}
}
