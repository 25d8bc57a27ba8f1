package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// recordShutdownGrace is how long in-flight streams may run on after Ctrl-C.
const recordShutdownGrace = 30 * time.Second

const recordAbout = `Proxies a real Dify and records what clients do as cassettes. Point a client
at http://ADDR/v1 with any API key: the recorder sends the upstream key
instead, streams every answer back while it arrives and writes each chat
session to DIR/<name>.yaml after every completed turn (app.yaml, the app
description, at start). Existing files are never overwritten. Stop with
Ctrl-C. See docs/mock/recording.md.`

// runRecord is `dify-mock record`: it records until ctx is cancelled (on
// SIGINT or SIGTERM), lets streams in flight finish for up to 30 s, and
// returns the exit code: 0 on success, 1 when recording failed or a save
// was refused, 2 for bad usage.
func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newFlags("record", "dify-mock record --upstream URL --cassettes DIR [flags]", recordAbout)
	fs := f.fs
	upstream := fs.String("upstream", "", "Dify API base URL to record from, e.g. https://api.dify.ai/v1 (required; an empty path means /v1)")
	dir := fs.String("cassettes", "", "folder the cassettes are written to (required; created if missing)")
	addr := fs.String("addr", "127.0.0.1:5002", "address to listen on")
	key := fs.String("upstream-key", "", "app API key for the upstream; prefer the environment variable, which keeps it out of the process list")
	var redacts, redactFiles listFlag
	fs.Var(&redacts, "redact", "extra redaction `RULE`: REGEX, or REGEX => REPLACEMENT ($1 expands groups); repeatable")
	fs.Var(&redactFiles, "redact-file", "`FILE` of redaction rules, one per line (# comments); repeatable")
	allowRemote := fs.Bool("allow-remote", false, "allow --addr on a non-loopback interface (anyone who reaches it spends your key)")
	var corsOrigins, allowHosts listFlag
	fs.Var(&corsOrigins, "cors-origin", "browser `ORIGIN` (e.g. http://localhost:5173) allowed to call the recorder with CORS; repeatable or comma-separated; default none")
	fs.Var(&allowHosts, "allow-host", "Host `NAME` accepted besides localhost and IP addresses (e.g. the machine's name with --allow-remote); repeatable")
	keepUploads := fs.Bool("keep-upload-contents", false, "store uploaded files and audio byte for byte in the cassettes (each held in memory while recorded); by default only each file's name, size, content type and sha256 are kept")
	f.withEnv("upstream-key")
	if err := f.parse(args, os.Getenv, stdout, stderr); err != nil {
		return exitCode(err)
	}
	if err := f.noArgs(stderr); err != nil {
		return exitCode(err)
	}
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "dify-mock record: "+format+"\n", args...)
		return code
	}
	if *upstream == "" || *dir == "" {
		return fail(2, "--upstream and --cassettes are required (see --help)")
	}
	if *key == "" {
		return fail(2, "no upstream API key: set %s (or pass --upstream-key)", envName("upstream-key"))
	}
	var rules []record.Rule
	for _, s := range redacts.values {
		r, err := record.ParseRule(s)
		if err != nil {
			return fail(2, "--redact: %v", err)
		}
		rules = append(rules, r)
	}
	for _, file := range redactFiles.values {
		rs, err := record.LoadRuleFile(file)
		if err != nil {
			return fail(2, "--redact-file: %v", err)
		}
		rules = append(rules, rs...)
	}
	if !*allowRemote && !netguard.IsLoopbackAddr(*addr) {
		return fail(2, "--addr %s is not a loopback address; the recorder adds your API key to every request it forwards, so pass --allow-remote only if every host that can reach it may use that key", *addr)
	}

	ln, err := listen(*addr)
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
	rec, err := record.New(ctx, record.Config{Upstream: *upstream, UpstreamKey: *key, Dir: *dir, Rules: rules, Logf: logf,
		CORSOrigins: corsOrigins.values, AllowedHosts: allowHosts.values, KeepUploadContents: *keepUploads})
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "dify-mock record: recording %s into %s\n", rec.Upstream(), *dir)
	fmt.Fprintf(stdout, "dify-mock record: listening on http://%s/v1 (clients may use any API key; Ctrl-C to stop)\n", ln.Addr())

	srv := &http.Server{Handler: rec, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		return fail(1, "%v", err)
	}
	logf("stopping: waiting up to %s for streams in flight", recordShutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), recordShutdownGrace)
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
