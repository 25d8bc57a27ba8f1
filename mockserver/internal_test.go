package mockserver

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestPanicBecomesA500Envelope: a panicking handler yields Dify's 500 body
// (docs/api §1.4) and a log line without the request's secrets.
func TestPanicBecomesA500Envelope(t *testing.T) {
	var logs bytes.Buffer
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := s.front(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	req := httptest.NewRequest(http.MethodGet, "/v1/info", nil)
	req.Header.Set("Authorization", "Bearer app-secret-key-1234")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var e apiError
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != 500 || e.Code != "internal_server_error" || e.Message != msgInternal || e.Status != 500 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "boom") {
		t.Errorf("panic not logged: %s", logs.String())
	}
	if strings.Contains(logs.String(), "app-secret-key-1234") {
		t.Errorf("the API key reached the log: %s", logs.String())
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Speed: -1}, {Speed: 1e-9}, {Speed: 1e9}, {Mode: "chat"}, {RunTimeout: -1}, {MaxModelRequests: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// TestRequestLogSaysWhatAnsweredAndWhy: the access log names the cassette
// and turn that answered a chat message, and the code and message of a
// refused request (without secrets).
func TestRequestLogSaysWhatAnsweredAndWhy(t *testing.T) {
	var logs lockedLog
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	post := func(body string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat-messages", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer app-mock")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderSpeed, "0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post(`{"query":"hello","inputs":{},"user":"u1","response_mode":"streaming"}`)
	post(`{"query":"hello","inputs":{},"response_mode":"streaming","user":""}`)
	lines := strings.Split(logs.String(), "\n")
	var chat, refused string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "msg=request") && strings.Contains(l, "status=200"):
			chat = l
		case strings.Contains(l, "msg=request") && strings.Contains(l, "status=400"):
			refused = l
		}
	}
	if !strings.Contains(chat, "cassette="+s.DefaultCassette()) || !strings.Contains(chat, "turn=0") {
		t.Errorf("chat log line does not name the cassette and turn: %q", chat)
	}
	if !strings.Contains(refused, "code=invalid_param") || !strings.Contains(refused, "message=") {
		t.Errorf("400 log line has no reason: %q\n%s", refused, logs.String())
	}
}

// lockedLog is a log buffer safe for the server's goroutines and the test.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestErrorReasonRedactsSecrets(t *testing.T) {
	got := errorReason([]byte(`{"code":"unauthorized","message":"key app-Zx9Qw8Er7Ty6Ui5Op4As is invalid","status":401}` + "\n"))
	if len(got) != 2 || got[0].Value.String() != "unauthorized" || strings.Contains(got[1].Value.String(), "Zx9Qw8") || !strings.Contains(got[1].Value.String(), "[REDACTED]") {
		t.Errorf("%v", got)
	}
	if got := errorReason([]byte("<!doctype html><title>404 Not Found</title>")); got != nil {
		t.Errorf("HTML body gave %v", got)
	}
}

// Precise waits (replay.Options.Precise) are for a few live streams only:
// each costs CPU for the last stretch before every frame.
func TestPreciseWhileFewStreamsAreLive(t *testing.T) {
	s, err := New(Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if !s.precise() {
		t.Fatal("no stream live, yet no precise wait")
	}
	ids := make([]string, preciseStreams+1)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
		if _, ok := s.beginStream(ids[i], "u"); !ok {
			t.Fatal("beginStream refused")
		}
		if got, want := s.precise(), i+1 <= preciseStreams; got != want {
			t.Fatalf("%d streams live: precise %v, want %v", i+1, got, want)
		}
	}
	s.endStream(ids[0])
	if !s.precise() {
		t.Errorf("%d streams live after one ended, yet no precise wait", preciseStreams)
	}
	for _, id := range ids[1:] {
		s.endStream(id)
	}
}
