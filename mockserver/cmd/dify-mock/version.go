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

// runVersion prints "dify-mock VERSION (commit COMMIT, GOOS/GOARCH)".
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	f := newFlags("version", "dify-mock version (or dify-mock --version)",
		"Prints the version of dify-mock, the commit it was built from and the platform.")
	if err := f.parse(args, noEnv, stdout, stderr); err != nil {
		return exitCode(err)
	}
	if err := f.noArgs(stderr); err != nil {
		return exitCode(err)
	}
	fmt.Fprintf(stdout, "dify-mock %s (commit %s, %s/%s)\n", version, commit, runtime.GOOS, runtime.GOARCH)
	return 0
}
