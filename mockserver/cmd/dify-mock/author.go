package main

import (
	"context"
	"io"

	"github.com/difyops/terraform-provider-dify/mockserver/author"
)

func init() {
	subcommands["author"] = subcommand{
		Summary: "turn a scenario file into a cassette, without a live Dify",
		Run: func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			return author.Main(args, stdout, stderr)
		},
	}
}
