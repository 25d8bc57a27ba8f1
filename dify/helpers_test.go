package dify

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"
)

const testKey = "app-TESTKEY0123456789abcdef"

// recorded is one request as the test server saw it.
type recorded struct {
	Method   string
	Path     string // escaped path
	RawQuery string
	Header   http.Header
	Body     []byte
}

// recorder is an httptest handler that records every request and answers
// through respond.
type recorder struct {
	mu       sync.Mutex
	requests []recorded
	respond  func(w http.ResponseWriter, r *http.Request, n int) // n counts from 1
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.requests = append(rec.requests, recorded{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Clone(), body})
	n := len(rec.requests)
	respond := rec.respond
	rec.mu.Unlock()
	respond(w, r, n)
}

// answer replaces respond between steps of a test. Under the lock: a
// request the previous step gave up on (a cancelled poll) may still be
// in the handler.
func (rec *recorder) answer(respond func(w http.ResponseWriter, r *http.Request, n int)) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.respond = respond
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.requests)
}

func (rec *recorder) last(t *testing.T) recorded {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.requests) == 0 {
		t.Fatal("server saw no request")
	}
	return rec.requests[len(rec.requests)-1]
}

// fastRetry keeps retry tests quick.
var fastRetry = RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

// newTestClient starts a server on 127.0.0.1 (httptest's default) whose
// base path is /v1, like Dify's.
func newTestClient(t *testing.T, h http.Handler, opts ...Option) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	opts = append([]Option{WithUser("user-1"), WithRetryPolicy(fastRetry)}, opts...)
	c, err := NewClient(srv.URL+"/v1/", testKey, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// jsonReply answers with status and a JSON body.
func jsonReply(status int, body string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
