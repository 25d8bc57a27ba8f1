package record_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// rawRequest sends one request with exactly the given Host and headers.
func rawRequest(t *testing.T, addr, method, path, host string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: %d\r\n", method, path, host, len(body))
	for k, v := range hdr {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(data)
}

// A web page cannot use the recorder: cross-origin requests and preflights
// are refused before anything reaches the upstream (before, preflights were
// relayed and the upstream's "Access-Control-Allow-Origin: *" handed back),
// a rebound DNS name (Host: evil.example) is refused, and CORS is granted
// only to --cors-origin origins.
func TestRecorderRefusesOtherSitesBeforeTheUpstream(t *testing.T) {
	up := newFakeDify(t, agentTurn("Hello", " there."))
	_, srv, _, _ := recorderFor(t, up, "")
	addr := srv.Listener.Addr().String()
	up.mu.Lock()
	before := len(up.auths)
	up.mu.Unlock()
	chatJSON := `{"query":"hi","inputs":{},"user":"tester","response_mode":"streaming"}`
	auth := "Bearer " + clientKey
	cases := []struct {
		name, method, host string
		hdr                map[string]string
		code               string
	}{
		{"preflight from a page", http.MethodOptions, addr, map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}, "forbidden_origin"},
		{"preflight from a loopback page without --cors-origin", http.MethodOptions, addr, map[string]string{"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"}, "forbidden_origin"},
		{"cross-origin POST", http.MethodPost, addr, map[string]string{"Origin": "https://evil.example", "Authorization": auth, "Content-Type": "application/json"}, "forbidden_origin"},
		{"rebound DNS name", http.MethodPost, "evil.example:" + strings.Split(addr, ":")[1], map[string]string{"Authorization": auth, "Content-Type": "application/json"}, "forbidden_host"},
		{"rebound listing", http.MethodGet, "evil.example", map[string]string{"Authorization": auth}, "forbidden_host"},
	}
	for _, c := range cases {
		path := "/v1/chat-messages"
		body := chatJSON
		if c.method == http.MethodGet {
			path, body = "/v1/conversations?user=tester", ""
		}
		if c.method == http.MethodOptions {
			body = ""
		}
		resp, data := rawRequest(t, addr, c.method, path, c.host, c.hdr, body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(data, c.code) {
			t.Errorf("%s: %d %s, want 403 %s", c.name, resp.StatusCode, data, c.code)
		}
		if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
			t.Errorf("%s: Access-Control-Allow-Origin %q", c.name, v)
		}
		if !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Origin") {
			t.Errorf("%s: no Vary: Origin", c.name)
		}
	}
	up.mu.Lock()
	after := len(up.auths)
	up.mu.Unlock()
	if after != before {
		t.Errorf("%d refused request(s) reached the upstream", after-before)
	}

	// The owner's own tools still work: no Origin, or a loopback one (no
	// CORS grant without --cors-origin).
	resp, data := rawRequest(t, addr, http.MethodGet, "/v1/conversations?user=tester", "localhost", map[string]string{"Authorization": auth, "Origin": "http://localhost:5173"}, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("loopback page: %d %s %v", resp.StatusCode, data, resp.Header)
	}
}

func TestRecorderCORSOnlyForConfiguredOrigins(t *testing.T) {
	up := newFakeDify(t, agentTurn("Hello", " there."))
	rec, err := record.New(t.Context(), record.Config{Upstream: up.URL(), UpstreamKey: upstreamKey, Dir: t.TempDir(),
		CORSOrigins: []string{"http://localhost:5173/"}, AllowedHosts: []string{"devbox.lan"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, rec)
	addr := srv.Listener.Addr().String()
	resp, _ := rawRequest(t, addr, http.MethodOptions, "/v1/chat-messages", addr, map[string]string{"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"}, "")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
		t.Errorf("configured origin's preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, data := rawRequest(t, addr, http.MethodGet, "/v1/conversations?user=tester", "devbox.lan", map[string]string{"Authorization": "Bearer " + clientKey, "Origin": "http://localhost:5173"}, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
		t.Errorf("configured origin and host: %d %s %v", resp.StatusCode, data, resp.Header)
	}
	// A page on an --allow-host name is the owner's too (as for the control
	// API): answered, without a CORS grant.
	resp, data = rawRequest(t, addr, http.MethodGet, "/v1/conversations?user=tester", "devbox.lan", map[string]string{"Authorization": "Bearer " + clientKey, "Origin": "http://devbox.lan:3000"}, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("page on an allowed host: %d %s %v", resp.StatusCode, data, resp.Header)
	}
	// "*" would hand the key to every site.
	if _, err := record.New(t.Context(), record.Config{Upstream: up.URL(), UpstreamKey: upstreamKey, Dir: t.TempDir(), CORSOrigins: []string{"http://a.test,*"}}); err == nil {
		t.Error(`CORS origin "*" accepted`)
	}
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// A cassette name chosen by a request that looks like a key is refused
// without repeating it, and never becomes a file name (before, lower-case
// key-shaped names such as "app-…" were accepted as they were).
func TestRecordRefusesSecretCassetteNames(t *testing.T) {
	up := newFakeDify(t, agentTurn("a", "b"))
	_, srv, dir, _ := recorderFor(t, up, "")
	for _, name := range []string{"app-k3yf0rt3stsonlyzq8wx2vb7", upstreamKey, "api_key"} {
		h := http.Header{cassette.NameHeader: {name}, "Content-Type": {"application/json"}, "Authorization": {"Bearer " + clientKey}}
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/conversations?user=tester", nil)
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || strings.Contains(string(body), name) {
			t.Errorf("%q: %d %s", name, resp.StatusCode, body)
		}
	}
	for f := range files(t, dir) {
		if strings.Contains(strings.ToLower(f), "k3yf0r") || strings.Contains(f, "api_key") {
			t.Errorf("file %s written", f)
		}
	}
}

// An answer that ends in a link with a token, repeated by the closing
// message as New Agent does, is saved with the token redacted everywhere;
// before, the deltas and the closing message were checked as one text and
// the turn was refused as "split over several deltas".
func TestRecordSavesAnAnswerEndingInAToken(t *testing.T) {
	const token = "app-Qz7Xw2Vb9Kq4Lm8Np3Rs6Tu1"
	up := newFakeDify(t, agentTurn("Here is your link: ", "https://files.example/r?token="+token))
	rec, srv, dir, _ := recorderFor(t, up, "")
	chat(t, srv.URL, nil, chatBody("Give me the link", ""))
	if err := stop(srv, rec); err != nil {
		t.Fatalf("Close = %v, want the turn saved", err)
	}
	saved := 0
	for name, data := range files(t, dir) {
		if strings.Contains(string(data), token[4:]) {
			t.Errorf("%s keeps the token", name)
		}
		if strings.Contains(string(data), "token=[REDACTED]") {
			saved++
		}
	}
	if saved == 0 {
		t.Errorf("no cassette with the redacted answer: %v", files(t, dir))
	}
}

// A key split across two fields of one agent_thought (the thought ends with
// its first half, the observation starts with the rest) is not saved: the
// fields are checked glued together. Before, each half passed on its own.
func TestRecordRefusesKeySplitAcrossThoughtFields(t *testing.T) {
	turn := agentTurn("Done", ".")
	turn[0] = scheduledFrame{0, dataFrame(`"agent_thought","id":"11111111-2222-4333-8444-555555555555","position":1,"thought":"the key is app-Qz7Xw2Vb","observation":"9Kq4Lm8Np3Rs6Tu1 ok","tool":"","tool_input":"","tool_labels":{},"message_files":[]`)}
	up := newFakeDify(t, turn)
	rec, srv, dir, _ := recorderFor(t, up, "")
	chat(t, srv.URL, nil, chatBody("Think about the key", ""))
	err := stop(srv, rec)
	var refused *record.SaveRefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "agent_thought fields") {
		t.Fatalf("Close = %v, want a refusal naming the agent_thought fields", err)
	}
	for name, data := range files(t, dir) {
		if strings.Contains(string(data), "Qz7Xw2Vb") {
			t.Errorf("%s keeps half of the key", name)
		}
	}
}
