package record

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// EnvUpstreamKey is the environment variable holding the upstream API key.
const EnvUpstreamKey = "DIFY_MOCK_UPSTREAM_KEY"

// DefaultAddr is where the recorder listens unless --addr says otherwise.
const DefaultAddr = "127.0.0.1:5002"

// shutdownGrace is how long in-flight streams may run on after Ctrl-C.
const shutdownGrace = 30 * time.Second

const usageText = `Usage: dify-mock record --upstream URL --cassettes DIR [flags]

Proxies a real Dify and records what clients do as cassettes. Point a client
at http://ADDR/v1 with any API key: the recorder sends the upstream key
instead, streams every answer back while it arrives and writes each chat
session to DIR/<name>.yaml after every completed turn (app.yaml, the app
description, at start). Existing files are never overwritten. Stop with
Ctrl-C. See docs/mock/recording.md.

Flags:
`

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// Run is `dify-mock record`: it records until ctx is cancelled (the CLI
// cancels it on SIGINT or SIGTERM), lets streams in flight finish for up to
// 30 s, and returns the exit code: 0 on success, 1 when recording failed or
// a save was refused, 2 for bad usage.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dify-mock record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	upstream := fs.String("upstream", "", "Dify API base URL to record from, e.g. https://api.dify.ai/v1 (required; an empty path means /v1)")
	dir := fs.String("cassettes", "", "folder the cassettes are written to (required; created if missing)")
	addr := fs.String("addr", DefaultAddr, "address to listen on")
	key := fs.String("upstream-key", "", "app API key for the upstream (default $"+EnvUpstreamKey+", which keeps it out of the process list)")
	var redacts, redactFiles multiFlag
	fs.Var(&redacts, "redact", "extra redaction `RULE`: REGEX, or REGEX => REPLACEMENT ($1 expands groups); repeatable")
	fs.Var(&redactFiles, "redact-file", "`FILE` of redaction rules, one per line (# comments); repeatable")
	allowRemote := fs.Bool("allow-remote", false, "allow --addr on a non-loopback interface (anyone who reaches it spends your key)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "dify-mock record: "+format+"\n", args...)
		return code
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q (see --help)", fs.Arg(0))
	}
	if *upstream == "" || *dir == "" {
		return fail(2, "--upstream and --cassettes are required (see --help)")
	}
	upstreamKey := *key
	if upstreamKey == "" {
		upstreamKey = os.Getenv(EnvUpstreamKey)
	}
	if upstreamKey == "" {
		return fail(2, "no upstream API key: set %s (or pass --upstream-key)", EnvUpstreamKey)
	}
	var rules []Rule
	for _, s := range redacts {
		r, err := ParseRule(s)
		if err != nil {
			return fail(2, "--redact: %v", err)
		}
		rules = append(rules, r)
	}
	for _, f := range redactFiles {
		rs, err := LoadRuleFile(f)
		if err != nil {
			return fail(2, "--redact-file: %v", err)
		}
		rules = append(rules, rs...)
	}
	if !*allowRemote && !isLoopback(*addr) {
		return fail(2, "--addr %s is not a loopback address; the recorder adds your API key to every request it forwards, so pass --allow-remote only if every host that can reach it may use that key", *addr)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(1, "%v", err)
	}
	defer ln.Close()
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(stderr, "%s dify-mock record: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	rec, err := New(ctx, Config{Upstream: *upstream, UpstreamKey: upstreamKey, Dir: *dir, Rules: rules, Logf: logf})
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "dify-mock record: recording %s into %s\n", rec.upstream.Redacted(), *dir)
	fmt.Fprintf(stdout, "dify-mock record: listening on http://%s/v1 (clients may use any API key; Ctrl-C to stop)\n", ln.Addr())

	srv := &http.Server{Handler: rec, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		return fail(1, "%v", err)
	}
	logf("stopping: waiting up to %s for streams in flight", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	refused := rec.Close()
	written := rec.Written()
	fmt.Fprintf(stdout, "dify-mock record: %d file(s) written\n", len(written))
	for _, p := range written {
		fmt.Fprintf(stdout, "  %s\n", p)
	}
	if refused != nil {
		return fail(1, "some recordings were not saved:\n%v", refused)
	}
	return 0
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
