// Command loadgen is the load client of `make bench` (scripts/bench.sh). It
// runs in its own process, against a dify-mock started by the script, and
// appends one JSON result per run to a results file; `loadgen report` turns
// that file into the markdown tables of bench/results.md.
//
//	loadgen streams  --url URL --streams N [--cassette NAME] [--speed S] [--pid PID] [--debug-url URL] [--keys-file FILE] [--round K] [--start-rate R]
//	loadgen http     --url URL --endpoint parameters|conversations|rename|upload [--concurrency 50]
//	loadgen provider --url URL --terraform PATH --plugin-dir DIR [--conversations 1,10,100]
//	loadgen upstream [--addr 127.0.0.1:0] [--cassette NAME]
//	loadgen relay    --upstream URL [--addr 127.0.0.1:0]
//	loadgen live     --url URL --upstream URL --streams N [--target NAME] [--pid PID] [--saving TEXT]
//	loadgen burn     [--cores 0.5] [--period 10ms]
//	loadgen report   --in results.jsonl [--out bench/results.md]
//
// Every subcommand prints what it is doing to stderr; results go to --out
// (JSON lines) so the script can render them in one table at the end.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

type subcommand struct {
	summary string
	run     func(ctx context.Context, args []string, stderr io.Writer) error
}

var subcommands = map[string]subcommand{
	"streams":  {"concurrent SSE replays: per-frame lateness, time to first event, server RSS/goroutines", runStreams},
	"http":     {"non-streaming endpoint throughput and latency at a fixed concurrency", runHTTP},
	"provider": {"requests and wall time of `terraform plan` with N conversations in state", runProvider},
	"report":   {"render the results file as markdown tables", runReport},
	// The peer comparison (peers.go).
	"peers-setup": {"write the inputs dify-mock, WireMock and the bare handler serve in the peer comparison", runPeersSetup},
	"bare":        {"serve GET /v1/parameters with a bare httprouter handler (the Go ceiling)", runBare},
	"peers":       {"GET /v1/parameters and a streamed answer against dify-mock, WireMock and the bare handler", runPeers},
	// The live lane (live.go).
	"upstream": {"a fake Dify upstream on loopback: every chat streams a built-in cassette's turn at its recorded pace, its writes timed", runUpstream},
	"relay":    {"a bare Go relay (httputil.ReverseProxy, flushing each read) in front of an upstream: the live lane's floor", runRelay},
	"live":     {"N concurrent live chats through hybrid mode or the bare relay: lateness added vs the upstream's writes, relay RSS per stream", runLive},
	// Other work on the machine, on purpose (burn.go).
	"burn": {"keep this many cores busy until stopped: other work beside a streams row", runBurn},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	sc, ok := subcommands[os.Args[1]]
	if !ok {
		if os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
			usage(os.Stdout)
			return
		}
		fmt.Fprintf(os.Stderr, "loadgen: unknown subcommand %q\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	if err := sc.run(ctx, os.Args[2:], os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "loadgen %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: loadgen <subcommand> [flags]  (loadgen <subcommand> -h for its flags)\n\nSubcommands:\n")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, subcommands[n].summary)
	}
}

// appendResult adds one JSON line to path ("" = stdout).
func appendResult(path string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if path == "" {
		_, err = os.Stdout.Write(line)
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
