package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/author"
)

// recordUpstreamKey is shaped like a Dify app key; it is not a live key.
const recordUpstreamKey = "app-K3yF0rT3stsOnlyZq8Wx2Vb7"

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

func TestRecordUsageErrors(t *testing.T) {
	t.Setenv("DIFY_MOCK_UPSTREAM_KEY", "")
	cases := map[string]struct {
		args []string
		want string
	}{
		"no upstream":  {[]string{"--cassettes", "x"}, "--upstream and --cassettes are required"},
		"no key":       {[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x"}, "no upstream API key: set DIFY_MOCK_UPSTREAM_KEY"},
		"remote addr":  {[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x", "--upstream-key", recordUpstreamKey, "--addr", "0.0.0.0:5002"}, "not a loopback address"},
		"bad rule":     {[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x", "--upstream-key", recordUpstreamKey, "--redact", "a(b"}, "--redact: redaction rule"},
		"missing file": {[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x", "--upstream-key", recordUpstreamKey, "--redact-file", "/nonexistent/rules"}, "--redact-file"},
		"stray arg":    {[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x", "extra"}, `unexpected argument "extra"`},
	}
	for name, c := range cases {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"record"}, c.args...), &out, &errb); code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %s)", name, code, errb.String())
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: stderr %q lacks %q", name, errb.String(), c.want)
		}
		if strings.Contains(errb.String()+out.String(), recordUpstreamKey) {
			t.Errorf("%s: output shows the key", name)
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"record", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "--redact") {
		t.Errorf("--help: exit %d, %s", code, out.String())
	}
}

// TestRecordRecordsUntilCancelled drives the whole command against the mock
// standing in for a real Dify: key from the environment, rules from a file,
// one turn, then a stop.
func TestRecordRecordsUntilCancelled(t *testing.T) {
	up := startUpstreamMock(t, "name: who-wrote\nquery: Who wrote?\nsteps:\n  - answer: Mail alice@example.com today.\n")
	dir := filepath.Join(t.TempDir(), "new-folder")
	rules := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(rules, []byte("# e-mail addresses\n[a-z]+@example\\.com => someone@example.org\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DIFY_MOCK_UPSTREAM_KEY", recordUpstreamKey)
	stdout := &lineWriter{re: regexp.MustCompile(`listening on (http://\S+)/v1`), found: make(chan string, 1)}
	stderr := &lineWriter{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"record", "--upstream", up + "/v1", "--cassettes", dir, "--addr", "127.0.0.1:0", "--redact-file", rules}, stdout, stderr)
	}()
	var base string
	select {
	case base = <-stdout.found:
	case code := <-done:
		t.Fatalf("exited early with %d: %s", code, stderr)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat-messages",
		strings.NewReader(`{"query":"Who wrote?","inputs":{},"response_mode":"streaming","user":"u1"}`))
	req.Header.Set("Authorization", "Bearer app-dummy")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout.String(), "2 file(s) written") || !strings.Contains(stdout.String(), "who-wrote.yaml") {
		t.Errorf("summary: %s", stdout)
	}
	if strings.Contains(stdout.String()+stderr.String(), recordUpstreamKey) {
		t.Errorf("the key was printed")
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := set.Get("who-wrote")
	recorded := ""
	for _, f := range c.Turns[0].Frames {
		recorded += string(f.Raw)
	}
	if strings.Contains(recorded, "alice@example.com") || !strings.Contains(recorded, "someone@example.org today.") {
		t.Errorf("the redaction file was not applied: %s", recorded)
	}
}

// startUpstreamMock serves one authored scenario with no delays, accepting
// only recordUpstreamKey, and returns its base URL (without /v1).
func startUpstreamMock(t *testing.T, scenario string) string {
	t.Helper()
	dir := t.TempDir()
	name, encoded, err := author.GenerateBytes("scenario.yaml", []byte(scenario), author.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := author.WriteCassette(dir, name, encoded, false); err != nil {
		t.Fatal(err)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mockserver.New(mockserver.Config{Cassettes: set, APIKeys: []string{recordUpstreamKey}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestRecordKeepUploadContentsFlag: an upload recorded by the command keeps
// only its summary, and its bytes with --keep-upload-contents.
func TestRecordKeepUploadContentsFlag(t *testing.T) {
	up := startUpstreamMock(t, "name: with-file\nquery: Read it\nsteps:\n  - answer: Done.\n")
	t.Setenv("DIFY_MOCK_UPSTREAM_KEY", recordUpstreamKey)
	const contents = "file-contents-5c1d8e"
	upload := "--B\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\nu1\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\nContent-Type: text/plain\r\n\r\n" + contents + "\r\n--B--\r\n"
	for _, keep := range []bool{false, true} {
		dir := t.TempDir()
		args := []string{"record", "--upstream", up + "/v1", "--cassettes", dir, "--addr", "127.0.0.1:0"}
		if keep {
			args = append(args, "--keep-upload-contents")
		}
		stdout := &lineWriter{re: regexp.MustCompile(`listening on (http://\S+)/v1`), found: make(chan string, 1)}
		stderr := &lineWriter{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() { done <- run(ctx, args, stdout, stderr) }()
		var base string
		select {
		case base = <-stdout.found:
		case code := <-done:
			cancel()
			t.Fatalf("exited early with %d: %s", code, stderr)
		}
		for _, r := range []struct{ path, ct, body string }{
			{"/v1/files/upload", "multipart/form-data; boundary=B", upload},
			{"/v1/chat-messages", "application/json", `{"query":"Read it","inputs":{},"response_mode":"streaming","user":"u1"}`},
		} {
			req, _ := http.NewRequest(http.MethodPost, base+r.path, strings.NewReader(r.body))
			req.Header.Set("Authorization", "Bearer app-dummy")
			req.Header.Set("Content-Type", r.ct)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 300 {
				t.Errorf("keep=%v: %s answered %d: %s", keep, r.path, resp.StatusCode, b.String())
			}
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("keep=%v: exit %d: %s", keep, code, stderr)
		}
		data, err := os.ReadFile(filepath.Join(dir, "read-it.yaml"))
		if err != nil {
			t.Fatalf("keep=%v: %v\n%s", keep, err, stdout)
		}
		hasBytes := strings.Contains(string(data), contents)
		hasSummary := strings.Contains(string(data), cassette.UploadSummaryHeader)
		if hasBytes != keep || hasSummary == keep {
			t.Errorf("keep=%v: cassette holds the file's bytes: %v, a summary: %v\n%s", keep, hasBytes, hasSummary, data)
		}
	}
}
