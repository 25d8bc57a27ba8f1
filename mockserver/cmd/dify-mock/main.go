// Command dify-mock impersonates the Dify Agent app Service API on your
// machine: `dify-mock` (or `dify-mock serve`) starts it with the built-in
// cassettes at http://127.0.0.1:5001/v1. Other subcommands work on cassettes;
// `dify-mock --help` lists them.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// subcommand is one `dify-mock NAME [flags]` command.
//
// Each subcommand lives in its own file and registers itself from that
// file's init():
//
//	func init() {
//		subcommands["lint"] = subcommand{Summary: "check cassettes", Run: runLint}
//	}
//
// Run gets the arguments after the subcommand name and returns the process
// exit code (0 ok, 1 failure, 2 usage error). ctx is cancelled on SIGINT or
// SIGTERM; a second signal kills the process.
type subcommand struct {
	Summary string
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// subcommands is the registry, filled by init() functions.
var subcommands = map[string]subcommand{}

// defaultSubcommand runs when the first argument is a flag or absent.
const defaultSubcommand = "serve"

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

// run dispatches args to a subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := defaultSubcommand
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "--version" || a == "-version":
			return runVersion(ctx, nil, stdout, stderr)
		case a == "-h" || a == "-help" || a == "--help":
			usage(stdout)
			return 0
		case a == "help":
			if len(args) > 1 {
				if sc, ok := subcommands[args[1]]; ok {
					return sc.Run(ctx, []string{"--help"}, stdout, stderr)
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
	sc, ok := subcommands[name]
	if !ok {
		fmt.Fprintf(stderr, "dify-mock: unknown subcommand %q\n\n", name)
		usage(stderr)
		return 2
	}
	return sc.Run(ctx, args, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `dify-mock impersonates the Dify Agent app Service API for frontends and tests.

Usage:
  dify-mock [serve] [flags]     start the mock (default: http://127.0.0.1:5001/v1)
  dify-mock <subcommand> [flags]
  dify-mock help <subcommand>   flags of one subcommand

Subcommands:
`)
	names := make([]string, 0, len(subcommands))
	width := 0
	for n := range subcommands {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	for _, n := range names {
		mark := ""
		if n == defaultSubcommand {
			mark = " (default)"
		}
		fmt.Fprintf(w, "  %-*s  %s%s\n", width, n, subcommands[n].Summary, mark)
	}
	fmt.Fprintf(w, "\nRun 'dify-mock help serve' for the server's flags and their DIFY_MOCK_* environment variables.\n")
}
