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
	f, vf := newVerifyFlags()
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
	opts, err := vf.options()
	if err != nil {
		return fail(2, "%v", err)
	}
	if !*vf.quiet {
		opts.Logf = verifyLogf(stderr)
	}
	declinedWhy := ""
	opts.Confirm = confirmVerify(stderr, *vf.yes, &declinedWhy)

	rep, err := verify.Run(ctx, opts)
	if rep != nil {
		if *vf.asJSON {
			_ = rep.WriteJSON(stdout)
		} else {
			_ = rep.WriteTable(stdout)
		}
	}
	return verifyExit(ctx, rep, err, declinedWhy, fail)
}

// verifyFlags are the values of verify's flags, once parsed.
type verifyFlags struct {
	upstream, key, mock, mockKey, mockApp, cassettes, inputs, recordDiff *string
	maxTurns                                                             *int
	timeout                                                              *time.Duration
	yes, asJSON, quiet                                                   *bool
	redacts, redactFiles                                                 listFlag
}

// newVerifyFlags defines verify's flags.
func newVerifyFlags() (*commandFlags, *verifyFlags) {
	f := newFlags("verify", "dify-mock verify --upstream URL [--mock URL] [flags]", verifyAbout)
	fs := f.fs
	vf := &verifyFlags{}
	vf.upstream = fs.String("upstream", "", "`URL` of your Dify's Service API, e.g. https://dify.example.com/v1 (required)")
	vf.key = fs.String("upstream-key", "", "the app's API `KEY` (app-…); prefer the environment variable, which keeps it out of the process list")
	vf.mock = fs.String("mock", "", "`URL` (Service API base) of a running dify-mock to check (default: the built-in mock, started in-process on 127.0.0.1 with the upstream's app description)")
	vf.mockKey = fs.String("mock-key", "", "API `KEY` sent to --mock (default: a random app-… key)")
	vf.mockApp = fs.String("mock-app", "", "check the app `NAME` of a --mock serving several apps: its key is read from "+appKeysEnv+" (NAME=KEY pairs, as serve takes), else app-NAME (docs/mock/apps.md)")
	vf.cassettes = fs.String("cassettes", "", "chat cassettes `DIR` for the built-in mock (default: the built-in cassettes; the app description is always the upstream's)")
	vf.maxTurns = fs.Int("max-chat-turns", verify.DefaultMaxChatTurns, "most chat turns the upstream is asked to run (they cost model tokens): a hard cap counting every chat request it accepts; 0 sends no chat request")
	vf.inputs = fs.String("inputs", "", "`JSON` object sent as the inputs of each chat turn (for apps whose form has required fields)")
	vf.timeout = fs.Duration("timeout", conformance.Timeout, "bound on each request, a chat turn included")
	vf.yes = fs.Bool("yes", false, "do not ask for confirmation (required without a terminal)")
	vf.asJSON = fs.Bool("json", false, "print the report as JSON")
	vf.recordDiff = fs.String("record-diff", "", "write the live answers of differing cases as cassettes into `DIR` (scrubbed like recordings)")
	vf.quiet = fs.Bool("quiet", false, "no progress lines on stderr")
	fs.Var(&vf.redacts, "redact", "extra redaction `RULE` for --record-diff, as in record; repeatable")
	fs.Var(&vf.redactFiles, "redact-file", "`FILE` of redaction rules for --record-diff; repeatable")
	f.withEnv("upstream-key")
	return f, vf
}

// options checks the flags and makes verify.Options of them (no Logf or
// Confirm yet). An error is a usage error, worded for the command line.
func (vf *verifyFlags) options() (verify.Options, error) {
	switch {
	case *vf.upstream == "":
		return verify.Options{}, errors.New("--upstream is required (see --help)")
	case *vf.key == "":
		return verify.Options{}, fmt.Errorf("no upstream API key: set %s (or pass --upstream-key)", envName("upstream-key"))
	case *vf.maxTurns < 0:
		return verify.Options{}, errors.New("--max-chat-turns must be 0 or more")
	case *vf.timeout <= 0:
		return verify.Options{}, errors.New("--timeout must be positive")
	}
	opts := verify.Options{
		Upstream: *vf.upstream, UpstreamKey: *vf.key, Mock: *vf.mock, MockKey: *vf.mockKey,
		MaxChatTurns: *vf.maxTurns, Timeout: *vf.timeout, RecordDiff: *vf.recordDiff,
	}
	if *vf.mockApp != "" {
		switch {
		case *vf.mock == "":
			return opts, errors.New("--mock-app needs --mock URL: the built-in mock serves one app")
		case *vf.mockKey != "":
			return opts, errors.New("--mock-app and --mock-key both choose the key: give one")
		}
		if err := mockserver.CheckAppName(*vf.mockApp); err != nil {
			return opts, fmt.Errorf("--mock-app: %v", err)
		}
		opts.MockKey, opts.MockKeyName = mockAppKey(*vf.mockApp, os.Getenv)
	}
	if *vf.inputs != "" {
		if err := json.Unmarshal([]byte(*vf.inputs), &opts.Inputs); err != nil || opts.Inputs == nil {
			return opts, errors.New("--inputs: want a JSON object")
		}
	}
	if *vf.cassettes != "" {
		if *vf.mock != "" {
			return opts, errors.New("--cassettes is for the built-in mock; a --mock server has its own")
		}
		set, err := cassette.LoadDir(*vf.cassettes)
		if err != nil {
			return opts, fmt.Errorf("--cassettes: %v", err)
		}
		opts.Cassettes = set
	}
	var err error
	opts.Rules, err = vf.redactRules()
	return opts, err
}

// redactRules are --redact's and --redact-file's rules, in that order.
func (vf *verifyFlags) redactRules() ([]record.Rule, error) {
	var rules []record.Rule
	for _, s := range vf.redacts.values {
		r, err := record.ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("--redact: %v", err)
		}
		rules = append(rules, r)
	}
	for _, file := range vf.redactFiles.values {
		rs, err := record.LoadRuleFile(file)
		if err != nil {
			return nil, fmt.Errorf("--redact-file: %v", err)
		}
		rules = append(rules, rs...)
	}
	return rules, nil
}

// verifyLogf is verify.Options.Logf: timestamped progress lines on stderr.
func verifyLogf(stderr io.Writer) func(format string, args ...any) {
	var logMu sync.Mutex
	return func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(stderr, "%s dify-mock verify: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
}

// confirmVerify is verify.Options.Confirm: it shows the plan and asks on
// the terminal unless yes; *declinedWhy says why it said no.
func confirmVerify(stderr io.Writer, yes bool, declinedWhy *string) func(verify.Plan) bool {
	return func(p verify.Plan) bool {
		fmt.Fprintf(stderr, "dify-mock verify: %d cases against %s and %s, as end user %s.\n", p.Cases, p.Upstream, mockLabel(p.Mock), p.User)
		fmt.Fprintf(stderr, "  It sends the upstream %d chat turn(s), which cost model tokens, and never more than %d (--max-chat-turns):\n", p.ChatTurns, p.MaxChatTurns)
		if p.ChatRoutes > 0 {
			fmt.Fprintf(stderr, "  %d more chat request(s) carry bad input Dify refuses before any model runs; one it accepts counts, and once\n  the cap is spent no chat request is sent.\n", p.ChatRoutes)
		}
		fmt.Fprintf(stderr, "  It uploads small text files (the Service API cannot delete them), creates one annotation and deletes it, and deletes the conversations it creates.\n")
		if yes {
			return true
		}
		if !verifyIsTerminal() {
			*declinedWhy = "not confirmed: stdin is not a terminal; pass --yes to run without asking"
			return false
		}
		fmt.Fprint(stderr, "Continue? [y/N] ")
		line, _ := bufio.NewReader(verifyStdin).ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true
		}
		*declinedWhy = "not confirmed; nothing was sent"
		return false
	}
}

// verifyExit is verify's exit status for a run's outcome (verifyAbout),
// with the reason on stderr (fail).
func verifyExit(ctx context.Context, rep *verify.Report, err error, declinedWhy string, fail func(int, string, ...any) int) int {
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
