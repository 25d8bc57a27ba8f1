package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/conformance"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/verify"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

const verifyAbout = `Runs the same conformance cases against your Dify and against dify-mock,
request for request, and reports every difference clients could see: status,
error code and message, response shape (field names, types, null vs missing),
headers (Content-Type, Content-Disposition, Allow, …; CORS aside), and for
one real chat turn the event sequence and each event type's fields. Timing
and text are never compared.

Safe on a real app: every request runs as a new end user
dify-mock-verify-<random>; only the conversations that user creates are
deleted again (also on Ctrl-C); chat turns are capped by --max-chat-turns;
the key is never printed or written. It asks before sending anything (or
pass --yes; without a terminal --yes is required).

Exit status: 0 no differences, 1 differences, 2 usage error, a server
that could not be reached or answered no request, or not confirmed.
See docs/mock/verify.md.`

// Where verify asks for confirmation; tests replace them.
var (
	verifyStdin io.Reader = os.Stdin
	// A real terminal, not merely a character device (</dev/null is one).
	verifyIsTerminal = func() bool { return term.IsTerminal(int(os.Stdin.Fd())) }
)

// runVerify is `dify-mock verify`.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newFlags("verify", "dify-mock verify --upstream URL [--mock URL] [flags]", verifyAbout)
	fs := f.fs
	upstream := fs.String("upstream", "", "`URL` of your Dify's Service API, e.g. https://dify.example.com/v1 (required)")
	key := fs.String("upstream-key", "", "the app's API `KEY` (app-…); prefer the environment variable, which keeps it out of the process list")
	mock := fs.String("mock", "", "`URL` (Service API base) of a running dify-mock to check (default: the built-in mock, started in-process on 127.0.0.1 with the upstream's app description)")
	mockKey := fs.String("mock-key", "", "API `KEY` sent to --mock (default: a random app-… key)")
	mockApp := fs.String("mock-app", "", "check the app `NAME` of a --mock serving several apps: its key is read from "+appKeysEnv+" (NAME=KEY pairs, as serve takes), else app-NAME (docs/mock/apps.md)")
	cassettes := fs.String("cassettes", "", "chat cassettes `DIR` for the built-in mock (default: the built-in cassettes; the app description is always the upstream's)")
	maxTurns := fs.Int("max-chat-turns", verify.DefaultMaxChatTurns, "most chat turns the upstream is asked to run (they cost model tokens): a hard cap counting every chat request it accepts; 0 sends no chat request")
	inputs := fs.String("inputs", "", "`JSON` object sent as the inputs of each chat turn (for apps whose form has required fields)")
	timeout := fs.Duration("timeout", conformance.Timeout, "bound on each request, a chat turn included")
	yes := fs.Bool("yes", false, "do not ask for confirmation (required without a terminal)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	recordDiff := fs.String("record-diff", "", "write the live answers of differing cases as cassettes into `DIR` (scrubbed like recordings)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	var redacts, redactFiles listFlag
	fs.Var(&redacts, "redact", "extra redaction `RULE` for --record-diff, as in record; repeatable")
	fs.Var(&redactFiles, "redact-file", "`FILE` of redaction rules for --record-diff; repeatable")
	f.withEnv("upstream-key")
	if err := f.parse(args, os.Getenv, stdout, stderr); err != nil {
		return exitCode(err)
	}
	if err := f.noArgs(stderr); err != nil {
		return exitCode(err)
	}
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "dify-mock verify: "+format+"\n", args...)
		return code
	}
	if *upstream == "" {
		return fail(2, "--upstream is required (see --help)")
	}
	if *key == "" {
		return fail(2, "no upstream API key: set %s (or pass --upstream-key)", envName("upstream-key"))
	}
	if *maxTurns < 0 {
		return fail(2, "--max-chat-turns must be 0 or more")
	}
	if *timeout <= 0 {
		return fail(2, "--timeout must be positive")
	}
	opts := verify.Options{
		Upstream: *upstream, UpstreamKey: *key, Mock: *mock, MockKey: *mockKey,
		MaxChatTurns: *maxTurns, Timeout: *timeout, RecordDiff: *recordDiff,
	}
	if *mockApp != "" {
		switch {
		case *mock == "":
			return fail(2, "--mock-app needs --mock URL: the built-in mock serves one app")
		case *mockKey != "":
			return fail(2, "--mock-app and --mock-key both choose the key: give one")
		}
		if err := mockserver.CheckAppName(*mockApp); err != nil {
			return fail(2, "--mock-app: %v", err)
		}
		opts.MockKey, opts.MockKeyName = mockAppKey(*mockApp, os.Getenv)
	}
	if *inputs != "" {
		if err := json.Unmarshal([]byte(*inputs), &opts.Inputs); err != nil || opts.Inputs == nil {
			return fail(2, "--inputs: want a JSON object")
		}
	}
	if *cassettes != "" {
		if *mock != "" {
			return fail(2, "--cassettes is for the built-in mock; a --mock server has its own")
		}
		set, err := cassette.LoadDir(*cassettes)
		if err != nil {
			return fail(2, "--cassettes: %v", err)
		}
		opts.Cassettes = set
	}
	for _, s := range redacts.values {
		r, err := record.ParseRule(s)
		if err != nil {
			return fail(2, "--redact: %v", err)
		}
		opts.Rules = append(opts.Rules, r)
	}
	for _, file := range redactFiles.values {
		rs, err := record.LoadRuleFile(file)
		if err != nil {
			return fail(2, "--redact-file: %v", err)
		}
		opts.Rules = append(opts.Rules, rs...)
	}
	var logMu sync.Mutex
	if !*quiet {
		opts.Logf = func(format string, args ...any) {
			logMu.Lock()
			defer logMu.Unlock()
			fmt.Fprintf(stderr, "%s dify-mock verify: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
		}
	}
	declinedWhy := ""
	opts.Confirm = func(p verify.Plan) bool {
		fmt.Fprintf(stderr, "dify-mock verify: %d cases against %s and %s, as end user %s.\n", p.Cases, p.Upstream, mockLabel(p.Mock), p.User)
		fmt.Fprintf(stderr, "  It sends the upstream %d chat turn(s), which cost model tokens, and never more than %d (--max-chat-turns):\n", p.ChatTurns, p.MaxChatTurns)
		if p.ChatRoutes > 0 {
			fmt.Fprintf(stderr, "  %d more chat request(s) carry bad input Dify refuses before any model runs; one it accepts counts, and once\n  the cap is spent no chat request is sent.\n", p.ChatRoutes)
		}
		fmt.Fprintf(stderr, "  It uploads small text files (the Service API cannot delete them), creates one annotation and deletes it, and deletes the conversations it creates.\n")
		if *yes {
			return true
		}
		if !verifyIsTerminal() {
			declinedWhy = "not confirmed: stdin is not a terminal; pass --yes to run without asking"
			return false
		}
		fmt.Fprint(stderr, "Continue? [y/N] ")
		line, _ := bufio.NewReader(verifyStdin).ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true
		}
		declinedWhy = "not confirmed; nothing was sent"
		return false
	}

	rep, err := verify.Run(ctx, opts)
	if rep != nil {
		if *asJSON {
			_ = rep.WriteJSON(stdout)
		} else {
			_ = rep.WriteTable(stdout)
		}
	}
	var ue *verify.UsageError
	var te *verify.TransportError
	switch {
	case errors.Is(err, verify.ErrDeclined):
		return fail(2, "%s", declinedWhy)
	case errors.As(err, &ue):
		return fail(2, "%v", ue)
	case errors.As(err, &te):
		return fail(2, "%v", te)
	case ctx.Err() != nil:
		return fail(2, "interrupted; the conversations created so far were deleted%s", cleanupNote(rep))
	case err != nil:
		return fail(2, "%v", err)
	case len(rep.Errors) > 0:
		return fail(2, "%d case(s) got no answer; the comparison is incomplete", len(rep.Errors))
	case len(rep.Cleanup) > 0:
		return fail(2, "could not delete everything the run created: %s", strings.Join(rep.Cleanup, "; "))
	case len(rep.Differences) > 0:
		return 1
	}
	return 0
}

// mockAppKey is the key of the mock's app name, as serve gives it: the
// first of its --app-key pairs in DIFY_MOCK_APP_KEYS, else app-NAME. label
// says which, for the report (never the key).
func mockAppKey(name string, getenv func(string) string) (key, label string) {
	for _, pair := range strings.Split(getenv(appKeysEnv), ",") {
		n, k, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && n == name && k != "" {
			return k, fmt.Sprintf("app %q's key from %s", name, appKeysEnv)
		}
	}
	return mockserver.DefaultAppKey(name), fmt.Sprintf("%s (the key of an app given none)", mockserver.DefaultAppKey(name))
}

func mockLabel(m string) string {
	if m == "built-in" {
		return "the built-in mock"
	}
	return m
}

func cleanupNote(rep *verify.Report) string {
	if rep == nil || len(rep.Cleanup) == 0 {
		return ""
	}
	return " except: " + strings.Join(rep.Cleanup, "; ")
}
