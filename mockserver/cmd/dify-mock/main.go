// Command dify-mock impersonates the Dify Agent app Service API on your
// machine: `dify-mock` (or `dify-mock serve`) starts it with the built-in
// cassettes at http://127.0.0.1:5001/v1. Other subcommands work on cassettes;
// `dify-mock --help` lists them.
//
// All command-line parsing lives in this package; the libraries it drives
// (mockserver, author, lint, record, fault) take plain option structs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one `dify-mock NAME [flags]` subcommand.
//
// Run gets the arguments after the subcommand name and returns the process
// exit code (0 ok, 1 failure, 2 usage error). ctx is cancelled on SIGINT or
// SIGTERM; a second signal kills the process.
type command struct {
	Name    string
	Summary string
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands is every subcommand, in the order `dify-mock --help` lists them.
//
// To add a subcommand NAME:
//  1. write NAME.go in this folder with
//     func runNAME(ctx context.Context, args []string, stdout, stderr io.Writer) int
//     that declares its flags with newFlags (flags.go: one help format, and
//     withEnv for DIFY_MOCK_* variables), parses them, and calls the library
//     with an options struct;
//  2. add its line below;
//  3. test it through run(), like main_test.go does.
//
// A new serve flag is one line in newServeFlags (serve.go), a field in
// serveOptions and, when it needs one, its name in that function's withEnv
// call; `dify-mock --help` and `dify-mock help serve` show it.
var commands = []command{
	{Name: "serve", Summary: "run the mock API server", Run: runServe},
	{Name: "record", Summary: "proxy a real Dify and record what clients do as cassettes", Run: runRecord},
	{Name: "author", Summary: "turn a scenario file into a cassette, without a live Dify", Run: runAuthor},
	{Name: "lint", Summary: "check cassettes: format, frames, event order, fields, ids, secrets", Run: runLint},
	{Name: "verify", Summary: "compare the mock with your Dify, case by case (see docs/mock/verify.md)", Run: runVerify},
	{Name: "faults", Summary: "list the faults the mock can inject, with an example each", Run: runFaults},
	{Name: "health", Summary: "check that a running mock answers (exit 0) — for container HEALTHCHECKs", Run: runHealth},
	{Name: "version", Summary: "print the version (also: --version)", Run: runVersion},
}

// defaultCommand runs when the first argument is a flag or absent.
const defaultCommand = "serve"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // restore default handling: a second Ctrl-C ends the process at once
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.Name == name {
			return c, true
		}
	}
	return command{}, false
}

// run dispatches args to a subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := defaultCommand
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "-h" || a == "-help" || a == "--help":
			usage(stdout)
			return 0
		case a == "-version" || a == "--version":
			return runVersion(ctx, args[1:], stdout, stderr)
		case a == "help":
			if len(args) > 1 {
				if c, ok := lookupCommand(args[1]); ok {
					return c.Run(ctx, []string{"--help"}, stdout, stderr)
				}
				fmt.Fprintf(stderr, "dify-mock: unknown subcommand %q\n\n", args[1])
				usage(stderr)
				return 2
			}
			usage(stdout)
			return 0
		case strings.HasPrefix(a, "-"):
			// flags for the default subcommand
		default:
			name, args = a, args[1:]
		}
	}
	c, ok := lookupCommand(name)
	if !ok {
		fmt.Fprintf(stderr, "dify-mock: unknown subcommand %q\n\n", name)
		usage(stderr)
		return 2
	}
	return c.Run(ctx, args, stdout, stderr)
}

// usage is the top-level help: the subcommands, then the flags of the
// default one (serve), since `dify-mock --flag…` means `dify-mock serve --flag…`.
func usage(w io.Writer) {
	fmt.Fprintf(w, `dify-mock impersonates the Dify Agent app Service API for frontends and tests.

Usage:
  dify-mock [serve] [flags]     start the mock (default: http://127.0.0.1:5001/v1)
  dify-mock <subcommand> [flags]
  dify-mock help <subcommand>   help of one subcommand
  dify-mock --version

Subcommands:
`)
	width := 0
	for _, c := range commands {
		width = max(width, len(c.Name))
	}
	for _, c := range commands {
		mark := ""
		if c.Name == defaultCommand {
			mark = " (default)"
		}
		fmt.Fprintf(w, "  %-*s  %s%s\n", width, c.Name, c.Summary, mark)
	}
	fmt.Fprintf(w, "\nServe flags (`dify-mock help serve` says more):\n")
	newServeFlags(&serveOptions{}).writeFlags(w)
}

// noEnv is the getenv of subcommands without environment variables.
func noEnv(string) string { return "" }
