package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
)

// version and commit are set by release builds
// (-X main.version={{.Version}} -X main.commit={{.Commit}}, see .goreleaser.yml
// and the Makefile); the npm package and the container image report them.
var (
	version = "dev"
	commit  = "none"
)

func init() {
	subcommands["version"] = subcommand{Summary: "print the version (also: --version)", Run: runVersion}
}

// runVersion prints "dify-mock VERSION (commit COMMIT, GOOS/GOARCH)".
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprintln(stderr, "Usage: dify-mock version (or dify-mock --version)")
		return 0
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "dify-mock version: unexpected argument %q\n", args[0])
		return 2
	}
	fmt.Fprintf(stdout, "dify-mock %s (commit %s, %s/%s)\n", version, commit, runtime.GOOS, runtime.GOARCH)
	return 0
}
