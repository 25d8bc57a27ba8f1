package record_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// lineWriter collects output and reports the first line matching re.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	re    *regexp.Regexp
	found chan string
	once  sync.Once
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.re != nil {
		if m := w.re.FindStringSubmatch(w.buf.String()); m != nil {
			w.once.Do(func() { w.found <- m[1] })
		}
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestRunUsageErrors(t *testing.T) {
	t.Setenv(record.EnvUpstreamKey, "")
	cases := map[string]struct {
		args []string
		want string
	}{
		"no upstream":  {[]string{"--cassettes", "x"}, "--upstream and --cassettes are required"},
		"no key":       {[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x"}, "no upstream API key: set DIFY_MOCK_UPSTREAM_KEY"},
		"remote addr":  {[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x", "--upstream-key", upstreamKey, "--addr", "0.0.0.0:5002"}, "not a loopback address"},
		"bad rule":     {[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x", "--upstream-key", upstreamKey, "--redact", "a(b"}, "--redact: redaction rule"},
		"missing file": {[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x", "--upstream-key", upstreamKey, "--redact-file", "/nonexistent/rules"}, "--redact-file"},
		"stray arg":    {[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x", "extra"}, `unexpected argument "extra"`},
	}
	for name, c := range cases {
		var out, errb bytes.Buffer
		if code := record.Run(context.Background(), c.args, &out, &errb); code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %s)", name, code, errb.String())
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: stderr %q lacks %q", name, errb.String(), c.want)
		}
		if strings.Contains(errb.String()+out.String(), upstreamKey) {
			t.Errorf("%s: output shows the key", name)
		}
	}
	var out, errb bytes.Buffer
	if code := record.Run(context.Background(), []string{"--help"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "--redact") && !strings.Contains(errb.String(), "-redact") {
		t.Errorf("--help: exit %d, %s", code, errb.String())
	}
}

// TestRunRecordsUntilCancelled drives the whole command: key from the
// environment, rules from a file, one turn, then a stop.
func TestRunRecordsUntilCancelled(t *testing.T) {
	up := newFakeDify(t, agentTurn("Mail ", "alice@example.com today."))
	dir := filepath.Join(t.TempDir(), "new-folder")
	rules := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(rules, []byte("# e-mail addresses\n[a-z]+@example\\.com => someone@example.org\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(record.EnvUpstreamKey, upstreamKey)
	stdout := &lineWriter{re: regexp.MustCompile(`listening on (http://\S+)/v1`), found: make(chan string, 1)}
	stderr := &lineWriter{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- record.Run(ctx, []string{"--upstream", up.URL(), "--cassettes", dir, "--addr", "127.0.0.1:0", "--redact-file", rules}, stdout, stderr)
	}()
	var base string
	select {
	case base = <-stdout.found:
	case code := <-done:
		t.Fatalf("exited early with %d: %s", code, stderr)
	}
	resp, _ := chat(t, base, nil, chatBody("Who wrote?", ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout.String(), "2 file(s) written") || !strings.Contains(stdout.String(), "who-wrote.yaml") {
		t.Errorf("summary: %s", stdout)
	}
	if strings.Contains(stdout.String()+stderr.String(), upstreamKey) {
		t.Errorf("the key was printed")
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := set.Get("who-wrote")
	body := ""
	for _, f := range c.Turns[0].Frames {
		body += string(f.Raw)
	}
	if strings.Contains(body, "alice@example.com") || !strings.Contains(body, "someone@example.org today.") {
		t.Errorf("the redaction file was not applied: %s", body)
	}
}
