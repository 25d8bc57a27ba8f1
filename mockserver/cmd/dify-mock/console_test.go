package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The banner's lines for the API base URL and the console.
var (
	consoleRE = regexp.MustCompile(`console +(http://127\.0\.0\.1:\d+/__mock/)`)
	baseRE    = regexp.MustCompile(`API base URL  (http://127\.0\.0\.1:\d+/v1)`)
)

// TestServeStateFileSurvivesARestart is the frontend team's story: chat,
// stop the mock, start it again with the same --state-file, and find the
// conversation.
func TestServeStateFileSurvivesARestart(t *testing.T) {
	stateFile := filepath.Join(t.TempDir(), "state.json")

	s := startServe(t, "--addr", "127.0.0.1:0", "--speed", "0", "--log-level", "warn", "--state-file", stateFile, "--admin-token", "tok-1")
	found := s.waitBanner(baseRE, consoleRE)
	base, console := found[0], found[1]
	req, _ := http.NewRequest(http.MethodPost, base+"/chat-messages",
		strings.NewReader(`{"query":"Hello","inputs":{},"user":"alice","response_mode":"streaming"}`))
	req.Header.Set("Authorization", "Bearer app-test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// The admin token guards the control API.
	if st := get(t, console+"api/state", ""); st != 401 {
		t.Fatalf("control API without the token: %d", st)
	}
	if st := get(t, console+"api/state", "tok-1"); st != 200 {
		t.Fatalf("control API with the token: %d", st)
	}
	s.stop()
	if !strings.Contains(s.out.String(), "state saved to "+stateFile) {
		t.Fatalf("no save message: %s", s.out.String())
	}
	info, err := os.Stat(stateFile)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", err, info)
	}

	s2 := startServe(t, "--addr", "127.0.0.1:0", "--speed", "0", "--log-level", "warn", "--state-file", stateFile)
	base = s2.waitBanner(baseRE)[0]
	req, _ = http.NewRequest(http.MethodGet, base+"/conversations?user=alice", nil)
	req.Header.Set("Authorization", "Bearer app-test")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"name":"Hello"`) {
		t.Fatalf("after the restart: %s", body)
	}
	s2.stop()
}

func get(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("X-Dify-Mock-Admin-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestServeRefusesABadStateFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(bad, []byte(`{"version":1,"end_users":[{"id":"x","user":"a"},{"id":"x","user":"b"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--state-file", bad}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "duplicate id") {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	// A folder that does not exist is found at start, not at shutdown.
	out.Reset()
	errOut.Reset()
	missing := filepath.Join(t.TempDir(), "gone", "state.json")
	if code := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--state-file", missing}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "could not be saved") {
		t.Errorf("--state-file in a missing folder: exit %d: %s", code, errOut.String())
	}
	for _, args := range [][]string{{"--journal-size", "0"}, {"--watch-cassettes"}} {
		out.Reset()
		errOut.Reset()
		if code := run(context.Background(), append([]string{"--addr", "127.0.0.1:0"}, args...), &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d: %s", args, code, errOut.String())
		}
	}
}

// serve --journal=false (or DIFY_MOCK_JOURNAL=false) says so at start, serves
// the API and keeps the console, whose journal routes answer 409.
func TestServeJournalOff(t *testing.T) {
	o, err := parseServe(nil, func(k string) string {
		if k == "DIFY_MOCK_JOURNAL" {
			return "false"
		}
		return ""
	}, io.Discard, io.Discard)
	if err != nil || o.journal {
		t.Fatalf("DIFY_MOCK_JOURNAL=false: journal %v, %v", o != nil && o.journal, err)
	}
	s := startServe(t, "--addr", "127.0.0.1:0", "--speed", "0", "--log-level", "warn", "--journal=false")
	found := s.waitBanner(baseRE, consoleRE)
	if !strings.Contains(s.out.String(), "journal       off (--journal=false)") {
		t.Fatalf("banner does not say the journal is off:\n%s", s.out.String())
	}
	base, console := found[0], found[1]
	for _, c := range []struct {
		url, auth string
		want      int
	}{
		{base + "/parameters", "Bearer app-test", http.StatusOK},
		{strings.TrimSuffix(console, "/") + "/api/journal", "", http.StatusConflict},
	} {
		req, _ := http.NewRequest(http.MethodGet, c.url, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("GET %s: %d %s, want %d", c.url, resp.StatusCode, body, c.want)
		}
	}
	s.stop()
}
