package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/verify"
)

const verifyTestKey = "app-CliVerifySecret0b1c2d3e4f"

// verifyUpstream is an in-process mock standing in for a Dify; rename, when
// set, renames the "limit" field of every GET /conversations answer.
func verifyUpstream(t *testing.T, rename bool) (base string, requests func() int) {
	t.Helper()
	srv, err := mockserver.New(mockserver.Config{APIKeys: []string{verifyTestKey}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		if !rename || r.URL.Path != "/v1/conversations" {
			srv.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(bytes.Replace(rec.Body.Bytes(), []byte(`"limit":`), []byte(`"page_size":`), 1))
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/v1", func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func withTerminal(t *testing.T, tty bool, input string) {
	t.Helper()
	savedIn, savedTTY := verifyStdin, verifyIsTerminal
	verifyStdin, verifyIsTerminal = strings.NewReader(input), func() bool { return tty }
	t.Cleanup(func() { verifyStdin, verifyIsTerminal = savedIn, savedTTY })
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"verify"}, args...), &out, &errOut)
	for name, s := range map[string]string{"stdout": out.String(), "stderr": errOut.String()} {
		if strings.Contains(s, verifyTestKey) {
			t.Errorf("the key appears on %s", name)
		}
	}
	return code, out.String(), errOut.String()
}

func TestVerifyExitCodes(t *testing.T) {
	t.Setenv("DIFY_MOCK_UPSTREAM_KEY", verifyTestKey)
	withTerminal(t, false, "")

	same, _ := verifyUpstream(t, false)
	code, out, errOut := runCLI(t, "--upstream", same, "--yes", "--json", "--quiet")
	if code != 0 {
		t.Fatalf("against the mock itself: exit %d\n%s\n%s", code, out, errOut)
	}
	var rep verify.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.Compared == 0 || len(rep.Differences) != 0 || !strings.HasPrefix(rep.User, verify.UserPrefix) {
		t.Errorf("report: %+v", rep)
	}
	if !regexp.MustCompile(`sends the upstream [123] chat turn\(s\), which cost model tokens, and never more than 3 `).MatchString(errOut) {
		t.Errorf("the chat-turn count was not announced:\n%s", errOut)
	}

	differs, _ := verifyUpstream(t, true)
	code, out, _ = runCLI(t, "--upstream", differs, "--yes", "--quiet", "--max-chat-turns", "2")
	if code != 1 {
		t.Fatalf("with a renamed field: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "$.page_size") || !strings.Contains(out, "bounds/conversations-limit-100") {
		t.Errorf("table does not name the renamed field:\n%s", out)
	}
}

func TestVerifyAsksFirst(t *testing.T) {
	t.Setenv("DIFY_MOCK_UPSTREAM_KEY", verifyTestKey)
	base, requests := verifyUpstream(t, false)

	withTerminal(t, false, "")
	code, _, errOut := runCLI(t, "--upstream", base)
	if code != 2 || !strings.Contains(errOut, "--yes") {
		t.Errorf("without a terminal and --yes: exit %d\n%s", code, errOut)
	}
	withTerminal(t, true, "n\n")
	code, _, errOut = runCLI(t, "--upstream", base)
	if code != 2 || !strings.Contains(errOut, "Continue? [y/N]") || !strings.Contains(errOut, "nothing was sent") {
		t.Errorf("declined: exit %d\n%s", code, errOut)
	}
	if n := requests(); n != 0 {
		t.Fatalf("%d request(s) reached the upstream before confirmation", n)
	}
	withTerminal(t, true, "y\n")
	if code, out, errOut := runCLI(t, "--upstream", base, "--quiet", "--max-chat-turns", "0"); code != 0 {
		t.Errorf("confirmed: exit %d\n%s\n%s", code, out, errOut)
	} else if !strings.Contains(errOut, "sends the upstream 0 chat turn(s)") || !strings.Contains(out, "skipped on both sides") {
		t.Errorf("--max-chat-turns 0:\n%s\n%s", out, errOut)
	}
	if requests() == 0 {
		t.Error("a confirmed run sent nothing")
	}
}

func TestVerifyUsage(t *testing.T) {
	t.Setenv("DIFY_MOCK_UPSTREAM_KEY", "")
	withTerminal(t, false, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--upstream is required"},
		{[]string{"--upstream", "http://127.0.0.1:1/v1"}, "no upstream API key"},
		{[]string{"--upstream", "ftp://x", "--upstream-key", verifyTestKey, "--yes"}, "want http(s)://host"},
		{[]string{"--upstream", "http://127.0.0.1:1/v1", "--upstream-key", verifyTestKey, "--inputs", "[1]"}, "--inputs"},
		{[]string{"--upstream", "http://127.0.0.1:1/v1", "--upstream-key", verifyTestKey, "--max-chat-turns", "-1"}, "--max-chat-turns"},
		{[]string{"--upstream", "http://127.0.0.1:1/v1", "--upstream-key", verifyTestKey, "--yes", "--quiet"}, "upstream:"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", tc.args, code, tc.want, errOut)
		}
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"help", "verify"}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "--max-chat-turns") {
		t.Errorf("help verify: exit %d\n%s", code, out.String())
	}
}

// TestVerifyInterrupted: Ctrl-C (ctx cancelled) mid-run ends with exit 2,
// a partial report, and none of the run's conversations left upstream.
func TestVerifyInterrupted(t *testing.T) {
	t.Setenv("DIFY_MOCK_UPSTREAM_KEY", verifyTestKey)
	withTerminal(t, false, "")
	srv, err := mockserver.New(mockserver.Config{APIKeys: []string{verifyTestKey}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/messages" && r.URL.Query().Get("conversation_id") != "" {
			cancel() // the user presses Ctrl-C
		}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"verify", "--upstream", ts.URL + "/v1", "--yes", "--json", "--quiet"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "interrupted") {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	var rep verify.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || !rep.Interrupted {
		t.Fatalf("partial report: %v\n%s", err, out.String())
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/conversations?user="+rep.User, nil)
	req.Header.Set("Authorization", "Bearer "+verifyTestKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) != 0 {
		t.Errorf("conversations of %s after the interrupt: %d (%v)", rep.User, len(list.Data), err)
	}
	if strings.Contains(out.String()+errOut.String(), verifyTestKey) {
		t.Error("the key was printed")
	}
}

// TestVerifyNamesTheMockApp: against a dify-mock serving several apps,
// --mock-app picks the app's key (DIFY_MOCK_APP_KEYS, else app-NAME) and
// the report names the app that answered and which key it was, never the
// key.
func TestVerifyNamesTheMockApp(t *testing.T) {
	t.Setenv("DIFY_MOCK_UPSTREAM_KEY", verifyTestKey)
	withTerminal(t, false, "")
	up, _ := verifyUpstream(t, false)
	builtin, err := mockserver.BuiltinSet()
	if err != nil {
		t.Fatal(err)
	}
	// The other app answers /info with another name.
	other, otherApp := *builtin, *builtin.App
	otherApp.Responses = maps.Clone(builtin.App.Responses)
	info := *otherApp.Responses["/info"]
	info.Body = bytes.Replace(info.Body, []byte(builtin.App.Info.Name), []byte("Another App"), 1)
	otherApp.Responses["/info"], other.App = &info, &otherApp
	srv, err := mockserver.New(mockserver.Config{Apps: []mockserver.AppConfig{
		{Name: "other", Cassettes: &other},
		{Name: "support", Cassettes: builtin, APIKeys: []string{"app-SupportSecret1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	t.Setenv(appKeysEnv, "other=app-x1,support=app-SupportSecret1")
	code, out, errOut := runCLI(t, "--upstream", up, "--mock", ts.URL+"/v1", "--mock-app", "support", "--yes", "--json", "--quiet", "--max-chat-turns", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var rep verify.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.MockApp != builtin.App.Info.Name || !strings.Contains(rep.MockKey, `app "support"`) || strings.Contains(out+errOut, "SupportSecret") {
		t.Errorf("report: mock app %q, key %q", rep.MockApp, rep.MockKey)
	}
	if key, label := mockAppKey("other", func(string) string { return "" }); key != "app-other" || !strings.Contains(label, "app-other") {
		t.Errorf("mockAppKey without the variable = %q, %q", key, label)
	}
	code, _, errOut = runCLI(t, "--upstream", up, "--mock-app", "support", "--yes")
	if code != 2 || !strings.Contains(errOut, "--mock-app needs --mock") {
		t.Errorf("--mock-app without --mock: exit %d %s", code, errOut)
	}
}
