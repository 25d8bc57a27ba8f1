package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// serve --upstream from a clean start: the banner shows the upstream and
// the cap, the first chat streams from the upstream and is saved into the
// folder, the key is never printed.
func TestServeHybridMode(t *testing.T) {
	up := startUpstreamMock(t, "name: live\nquery: Who wrote?\nsteps:\n  - answer: Somebody wrote it.\n")
	dir := filepath.Join(t.TempDir(), "grown")
	t.Setenv("DIFY_MOCK_UPSTREAM_KEY", recordUpstreamKey)
	s := startServe(t, "--addr", "127.0.0.1:0", "--cassettes", dir, "--upstream", up+"/v1", "--max-new-turns", "3", "--speed", "0")
	base := s.waitBanner(regexp.MustCompile(`API base URL  (http://127\.0\.0\.1:\d+/v1)`))[0]
	banner := s.out.String()
	for _, want := range []string{"  upstream      " + up + "/v1: chats no recorded turn answers stream from it live, saved into " + dir + ", up to 3 new turn(s) this run",
		"  match         similar queries (threshold 0.5)", "cassettes     0"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/chat-messages",
		strings.NewReader(`{"query":"Who wrote the Iliad?","inputs":{},"response_mode":"streaming","user":"u1"}`))
	req.Header.Set("Authorization", "Bearer app-dummy")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Dify-Mock-Upstream") != "live" || !strings.Contains(string(body), "Somebody wrote it.") {
		t.Fatalf("chat: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	s.stop()
	if _, err := os.Stat(filepath.Join(dir, "who-wrote-the-iliad.yaml")); err != nil {
		t.Errorf("the live turn was not saved: %v\n%s", err, s.errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "app.yaml")); err != nil {
		t.Errorf("the upstream's app description was not saved: %v", err)
	}
	if strings.Contains(s.out.String()+s.errOut.String()+string(body), recordUpstreamKey) {
		t.Error("the key was printed")
	}
}

func TestServeHybridUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--upstream", "http://127.0.0.1:1/v1"}, map[string]string{"DIFY_MOCK_UPSTREAM_KEY": recordUpstreamKey}, "--upstream needs --cassettes DIR"},
		{[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x"}, nil, "--upstream needs the upstream key: set DIFY_MOCK_UPSTREAM_KEY"},
		{[]string{"--upstream", "http://127.0.0.1:1/v1", "--cassettes", "x", "--max-new-turns", "-1"}, map[string]string{"DIFY_MOCK_UPSTREAM_KEY": recordUpstreamKey}, "--max-new-turns -1"},
		{[]string{"--match", "fuzzy"}, nil, `--match "fuzzy": want similar or exact`},
		{[]string{"--match-threshold", "0"}, nil, "--match-threshold 0"},
	} {
		var errOut strings.Builder
		_, err := parseServe(tc.args, func(k string) string { return tc.env[k] }, io.Discard, &errOut)
		if err == nil || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: err %v, stderr %q; want %q", tc.args, err, errOut.String(), tc.want)
		}
		if strings.Contains(errOut.String(), recordUpstreamKey) {
			t.Errorf("%v: the key was printed", tc.args)
		}
	}
}
