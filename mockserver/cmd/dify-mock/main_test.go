package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHelpListsSubcommands(t *testing.T) {
	saved := commands
	commands = append(commands[:len(commands):len(commands)], command{Name: "zz-test", Summary: "a test subcommand", Run: func(context.Context, []string, io.Writer, io.Writer) int { return 7 }})
	defer func() { commands = saved }()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		if !regexp.MustCompile(`\n  serve +run the mock API server \(default\)\n`).MatchString(out.String()) ||
			!regexp.MustCompile(`\n  zz-test +a test subcommand\n`).MatchString(out.String()) {
			t.Errorf("%v:\n%s", args, out.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"zz-test", "x"}, &out, &errOut); code != 7 {
		t.Errorf("dispatch: exit %d", code)
	}
	if code := run(context.Background(), []string{"nope"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `unknown subcommand "nope"`) {
		t.Errorf("unknown: exit %d %s", code, errOut.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"help", "serve"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "DIFY_MOCK_MAX_MODEL_REQUESTS") {
		t.Errorf("help serve: exit %d\n%s", code, out.String())
	}
}

func TestServeFlagsAndEnv(t *testing.T) {
	env := map[string]string{
		"DIFY_MOCK_SPEED": "2.5", "DIFY_MOCK_API_KEY": "app-a, app-b", "DIFY_MOCK_RUN_TIMEOUT": "90s",
		"DIFY_MOCK_MODE": "agent-chat", "DIFY_MOCK_CORS_ORIGIN": "http://localhost:3000",
	}
	o, err := parseServe([]string{"--max-model-requests", "7", "--mode", "agent"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.speed != 2.5 || strings.Join(o.apiKeys.values, ",") != "app-a,app-b" || o.runTimeout != 90*time.Second ||
		o.maxModelRequests != 7 || o.mode != "agent" || strings.Join(o.cors.values, ",") != "http://localhost:3000" || o.addr != "127.0.0.1:5001" {
		t.Errorf("%+v", o)
	}
	// Keys on the command line replace the environment's.
	o, _ = parseServe([]string{"--api-key", "app-c", "--api-key", "app-d"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if strings.Join(o.apiKeys.values, ",") != "app-c,app-d" {
		t.Errorf("keys %v", o.apiKeys.values)
	}
	if _, err := parseServe(nil, func(k string) string {
		if k == "DIFY_MOCK_SPEED" {
			return "fast"
		}
		return ""
	}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "DIFY_MOCK_SPEED") {
		t.Errorf("bad env: %v", err)
	}
	if _, err := parseServe([]string{"extra"}, func(string) string { return "" }, io.Discard, io.Discard); err == nil {
		t.Error("stray argument accepted")
	}
}

// TestServeStartsAndStops runs the default subcommand on a free port, talks
// to it, and stops it the way SIGINT does (context cancellation).
// servedCLI is a `dify-mock serve` run in the background for a test.
type servedCLI struct {
	t           *testing.T
	cancel      context.CancelFunc
	out, errOut syncBuffer
	done        chan int
}

func startServe(t *testing.T, args ...string) *servedCLI {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &servedCLI{t: t, cancel: cancel, done: make(chan int, 1)}
	t.Cleanup(cancel)
	go func() { s.done <- run(ctx, args, &s.out, &s.errOut) }()
	return s
}

// waitBanner polls the start-up output until every pattern matches and
// returns each pattern's first submatch.
func (s *servedCLI) waitBanner(patterns ...*regexp.Regexp) []string {
	s.t.Helper()
	return s.waitFor(&s.out, patterns)
}

// waitLog is waitBanner for the log (standard error), which is written in
// batches (logwriter.go) and so may lag behind the banner.
func (s *servedCLI) waitLog(patterns ...*regexp.Regexp) []string {
	s.t.Helper()
	return s.waitFor(&s.errOut, patterns)
}

// waitFor polls out until every pattern matches and returns each pattern's
// first submatch.
func (s *servedCLI) waitFor(out *syncBuffer, patterns []*regexp.Regexp) []string {
	s.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		var found []string
		for _, re := range patterns {
			if m := re.FindStringSubmatch(out.String()); m != nil {
				found = append(found, m[1])
			}
		}
		if len(found) == len(patterns) {
			return found
		}
		select {
		case code := <-s.done:
			s.t.Fatalf("exited %d: %s %s", code, s.out.String(), s.errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no match for %v in: %s", patterns, out.String())
		}
	}
}

// getWithKey is GET url with key as the bearer token: the status and body.
func getWithKey(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// stop cancels the run and requires a clean exit.
func (s *servedCLI) stop() {
	s.t.Helper()
	s.cancel()
	select {
	case code := <-s.done:
		if code != 0 {
			s.t.Fatalf("exit %d: %s", code, s.errOut.String())
		}
	case <-time.After(10 * time.Second):
		s.t.Fatal("serve did not stop")
	}
}

func TestServeStartsAndStops(t *testing.T) {
	s := startServe(t, "--addr", "127.0.0.1:0", "--speed", "0", "--log-level", "warn")
	base := s.waitBanner(regexp.MustCompile(`API base URL  (http://127\.0\.0\.1:\d+/v1)`))[0]
	banner := s.out.String()
	for _, want := range []string{`serving "`, "(mode agent)", "built-in cassettes", "(* = default)"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Dify OpenAPI") {
		t.Fatalf("GET /v1/: %d %s", resp.StatusCode, body)
	}
	s.stop()
	if _, err := http.Get(base + "/"); err == nil {
		t.Error("still serving after shutdown")
	}
}

func TestServeReportsBadCassetteFolder(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--cassettes", t.TempDir() + "/missing"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "cassette folder") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
}

// TestHelpFormatIsUniform: every subcommand's help starts with its usage
// line and lists each flag as "--name" with its variable, if any, below.
func TestHelpFormatIsUniform(t *testing.T) {
	for _, c := range commands {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{c.Name, "--help"}, &out, &errOut); code != 0 {
			t.Errorf("%s --help: exit %d %s", c.Name, code, errOut.String())
		}
		if !strings.HasPrefix(out.String(), "Usage: dify-mock ") {
			t.Errorf("%s --help does not start with its usage line:\n%s", c.Name, out.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "  -") && !regexp.MustCompile(`^  (--[a-z][a-z-]+|-[a-z])( \S+)?$`).MatchString(line) {
				t.Errorf("%s --help: flag line %q is not in the common format", c.Name, line)
			}
		}
	}
	var out, errOut bytes.Buffer
	run(context.Background(), []string{"--help"}, &out, &errOut)
	if !strings.Contains(out.String(), "--max-model-requests int") || !strings.Contains(out.String(), "env DIFY_MOCK_SPEED") {
		t.Errorf("top-level --help lacks the serve flags:\n%s", out.String())
	}
}

// TestServePortInUse: a taken port names the tools that find its holder.
func TestServePortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--addr", ln.Addr().String(), "--log-level", "warn"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "address already in use") || !strings.Contains(errOut.String(), "lsof -i :"+port) {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
}
