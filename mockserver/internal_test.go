package mockserver

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPanicBecomesA500Envelope: a panicking handler yields Dify's 500 body
// (API §1.4) and a log line without the request's secrets.
func TestPanicBecomesA500Envelope(t *testing.T) {
	var logs bytes.Buffer
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := s.recoverer(s.logRequests(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })))
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

func TestValidUUID(t *testing.T) {
	for s, want := range map[string]bool{
		"c0000000-0000-4000-8000-000000000001": true,
		"C0000000-0000-4000-8000-00000000000A": true,
		"c0000000000040008000000000000001":     false,
		"c0000000-0000-4000-8000-00000000000g": false,
		"":                                     false,
		"c0000000-0000-4000-8000_000000000001": false,
	} {
		if validUUID(s) != want {
			t.Errorf("validUUID(%q) = %v", s, !want)
		}
	}
}
