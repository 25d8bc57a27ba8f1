package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// appFolder copies the built-in cassettes into dir/name, an app folder,
// with keys (a keys.txt) when given.
func appFolder(t *testing.T, dir, name string, keys ...string) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "cassettes")
	dst := filepath.Join(dir, name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(keys) > 0 {
		body := "# " + name + "'s keys\n\n" + strings.Join(keys, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dst, keysFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestServeApps: --apps serves each subfolder as an app reached by its
// keys (keys.txt, DIFY_MOCK_APP_KEYS) or app-NAME; the banner lists the
// apps without their keys; --state-file saves every app.
func TestServeApps(t *testing.T) {
	dir := t.TempDir()
	appFolder(t, dir, "alpha")
	appFolder(t, dir, "beta", "app-beta-secret")
	appFolder(t, dir, "gamma")
	t.Setenv(appKeysEnv, "alpha=app-alpha-secret")
	state := filepath.Join(t.TempDir(), "state.json")
	s := startServe(t, "--apps", dir, "--addr", "127.0.0.1:0", "--speed", "0", "--log-level", "warn", "--state-file", state)
	base := s.waitBanner(regexp.MustCompile(`API base URL  (http://127\.0\.0\.1:\d+/v1)`))[0]
	banner := s.out.String()
	for _, want := range []string{"serving 3 app(s)", "app alpha", "app beta", "app gamma", "key app-gamma", "1 key(s)"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	if strings.Contains(banner, "secret") {
		t.Errorf("banner shows a key:\n%s", banner)
	}
	get := func(key, path string) (int, string) {
		t.Helper()
		return getWithKey(t, base+path, key)
	}
	for key, want := range map[string]int{
		"app-alpha-secret": 200, "app-beta-secret": 200, "app-gamma": 200,
		"app-alpha": 401, "app-beta": 401, // given keys replace app-NAME
		"app-other": 401,
	} {
		if got, body := get(key, "/info"); got != want {
			t.Errorf("%s: %d %s, want %d", key, got, body, want)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/chat-messages", strings.NewReader(`{"query":"hi","inputs":{},"user":"u","response_mode":"streaming"}`))
	req.Header.Set("Authorization", "Bearer app-beta-secret")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat with beta's key: %d", resp.StatusCode)
	}
	s.stop()
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Apps map[string]struct {
			Conversations []json.RawMessage `json:"conversations"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	if len(saved.Apps) != 3 || len(saved.Apps["beta"].Conversations) != 1 || len(saved.Apps["alpha"].Conversations) != 0 {
		t.Errorf("state file: %.400s", data)
	}
	if strings.Contains(string(data), "secret") {
		t.Error("the state file holds a key")
	}
}

// TestServeAppsFlagErrors: each mistake is one line naming the flag and
// the app, never a key.
func TestServeAppsFlagErrors(t *testing.T) {
	dir := t.TempDir()
	alpha := appFolder(t, dir, "alpha")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--app", "alpha"}, "want NAME=PATH"},
		{[]string{"--app", "Alpha=" + alpha}, `"Alpha"`},
		{[]string{"--app", "alpha=" + alpha, "--app", "alpha=" + alpha}, `app "alpha" is already given`},
		{[]string{"--app", "alpha=" + alpha, "--cassettes", alpha}, "--cassettes is for one app"},
		{[]string{"--app", "alpha=" + alpha, "--api-key", "app-secret-1"}, "--api-key is for one app"},
		{[]string{"--app-key", "alpha=app-secret-1"}, "--app-key needs --app"},
		{[]string{"--app", "alpha=" + alpha, "--app-key", "beta=app-secret-1"}, `--app-key for "beta": no such app (apps: alpha)`},
		{[]string{"--app", "alpha=" + alpha, "--app-key", "app-secret-1"}, "want NAME=KEY"},
		{[]string{"--apps", filepath.Join(dir, "missing")}, "--apps"},
		{[]string{"--apps", t.TempDir()}, "no apps in it"},
	} {
		var errOut strings.Builder
		_, err := parseServe(c.args, func(string) string { return "" }, io.Discard, &errOut)
		if err == nil {
			t.Errorf("%q: accepted", c.args)
			continue
		}
		msg := errOut.String()
		if !strings.Contains(msg, c.want) {
			t.Errorf("%q: %s; want %q", c.args, msg, c.want)
		}
		if strings.Contains(msg, "secret") {
			t.Errorf("%q: the message shows a key: %s", c.args, msg)
		}
	}
	// A bad keys.txt line is named by its number, not its contents.
	if err := os.WriteFile(filepath.Join(alpha, keysFile), []byte("app-good\napp secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := appKeys([]appSpec{{name: "alpha", path: alpha}}, nil)
	if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad keys.txt: %v", err)
	}
	// Beyond loopback, an app reached by app-NAME is refused.
	if err := os.Remove(filepath.Join(alpha, keysFile)); err != nil {
		t.Fatal(err)
	}
	appFolder(t, dir, "beta")
	var errOut strings.Builder
	code := runServe(t.Context(), []string{"--apps", dir, "--addr", "0.0.0.0:0"}, io.Discard, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "every app a key") {
		t.Errorf("remote without keys: exit %d %s", code, errOut.String())
	}
}

// TestServeAppsHybrid: --app-upstream puts one app in hybrid mode (its key
// from DIFY_MOCK_APP_UPSTREAM_KEYS); the other app replays its folder.
func TestServeAppsHybrid(t *testing.T) {
	up := startUpstreamMock(t, "name: live\nquery: Who wrote?\nsteps:\n  - answer: Somebody wrote it.\n")
	dir := t.TempDir()
	live := filepath.Join(dir, "live")
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	appFolder(t, dir, "replay")
	t.Setenv(appUpstreamKeysEnv, "live="+recordUpstreamKey)
	s := startServe(t, "--apps", dir, "--app-upstream", "live="+up+"/v1", "--addr", "127.0.0.1:0", "--speed", "0", "--log-level", "warn")
	base := s.waitBanner(regexp.MustCompile(`API base URL  (http://127\.0\.0\.1:\d+/v1)`))[0]
	if !strings.Contains(s.out.String(), "upstream "+up+"/v1: unrecorded chats stream from it live") {
		t.Errorf("banner lacks the live app's upstream:\n%s", s.out.String())
	}
	chat := func(key string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/chat-messages",
			strings.NewReader(`{"query":"Who wrote the Iliad?","inputs":{},"response_mode":"streaming","user":"u1"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}
	resp, body := chat("app-live")
	if resp.StatusCode != 200 || resp.Header.Get("X-Dify-Mock-Upstream") != "live" || !strings.Contains(body, "Somebody wrote it.") {
		t.Errorf("the live app's chat: %d %v %.300s", resp.StatusCode, resp.Header, body)
	}
	resp, body = chat("app-replay")
	if resp.StatusCode != 200 || resp.Header.Get("X-Dify-Mock-Upstream") != "" || strings.Contains(body, "Somebody wrote it.") {
		t.Errorf("the replaying app's chat: %d %v %.300s", resp.StatusCode, resp.Header, body)
	}
	s.stop()
	if _, err := os.Stat(filepath.Join(live, "who-wrote-the-iliad.yaml")); err != nil {
		t.Errorf("the live turn was not saved into the app's folder: %v", err)
	}
	if strings.Contains(s.out.String()+s.errOut.String(), recordUpstreamKey) {
		t.Error("the upstream key was printed")
	}

	for _, c := range []struct {
		args []string
		keys string // DIFY_MOCK_APP_UPSTREAM_KEYS
		want string
	}{
		{[]string{"--app-upstream", "live=" + up}, "", "--app-upstream needs --app"},
		{[]string{"--apps", dir, "--app-upstream", "ghost=" + up}, "", `--app-upstream for "ghost": no such app (apps: live, replay)`},
		{[]string{"--apps", dir, "--app-upstream", "replay=" + up}, "", `"replay" needs the app's upstream key`},
		{[]string{"--apps", dir, "--app-upstream", "replay=" + up}, "live=" + recordUpstreamKey + ",replay=" + recordUpstreamKey, `"live": the app has no --app-upstream`},
	} {
		var errOut strings.Builder
		if _, err := parseServe(c.args, func(k string) string {
			if k == appUpstreamKeysEnv {
				return c.keys
			}
			return ""
		}, io.Discard, &errOut); err == nil || !strings.Contains(errOut.String(), c.want) || strings.Contains(errOut.String(), recordUpstreamKey) {
			t.Errorf("%q: %v %s; want %q", c.args, err, errOut.String(), c.want)
		}
	}
}

// TestServeAppsOfDSLFiles: --apps DIR takes the Dify DSL files directly in
// DIR as apps named after the files, each answering with the app its file
// describes, reached by app-NAME; a folder and a file of one name are refused.
func TestServeAppsOfDSLFiles(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{"support.yml": "support-agent.yml", "helper.yaml": "legacy-helper.yml"} {
		data, err := os.ReadFile(appdslTestdata + src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Not a DSL: neither an app nor an error.
	if err := os.WriteFile(filepath.Join(dir, "notes.yml"), []byte("todo: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--apps", dir, "--addr", "127.0.0.1:0", "--speed", "0", "--log-level", "warn")
	base := s.waitBanner(regexp.MustCompile(`API base URL  (http://127\.0\.0\.1:\d+/v1)`))[0]
	for key, want := range map[string]string{
		"app-support": `"name":"Support Agent"`, "app-helper": `"name":"Legacy Helper"`,
	} {
		if status, body := getWithKey(t, base+"/info", key); status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%s: /info %d %s, want %s", key, status, body, want)
		}
	}
	s.stop()

	if err := os.Mkdir(filepath.Join(dir, "support"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := appSpecs(nil, dir); err == nil || !strings.Contains(err.Error(), `app "support" is both the folder`) {
		t.Errorf("a folder and a DSL file of one name: %v", err)
	}
}
