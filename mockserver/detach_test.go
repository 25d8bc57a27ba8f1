package mockserver_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
)

// A stream taken off net/http's connection goroutine (chat_detach.go)
// behaves as one served by a handler: the connection serves the client's
// next requests, and the journal entry and the access log line are complete
// by the time the client has read the stream's end.
func TestDetachedStreamKeepsTheConnectionAndFinishesItsEntry(t *testing.T) {
	logs := &lockedBuffer{}
	e := newEnv(t, mockserver.Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	e.hc = &http.Client{Transport: &http.Transport{}} // keep-alive, as clients run
	defer e.hc.CloseIdleConnections()

	var reused []bool
	traced := func(req *http.Request) *http.Request {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
		return req.WithContext(httptrace.WithClientTrace(context.Background(), trace))
	}
	for i := range 3 {
		body := strings.NewReader(`{"query":"hello","user":"keep","inputs":{"city":"Seoul"},"response_mode":"streaming"}`)
		req, _ := http.NewRequest(http.MethodPost, e.url("/chat-messages"), body)
		req.Header.Set("Authorization", "Bearer app-test")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(mockserver.HeaderSpeed, "0")
		resp, err := e.hc.Do(traced(req))
		if err != nil {
			t.Fatal(err)
		}
		frames := readFrames(t, resp.Body, time.Now(), nil)
		resp.Body.Close()
		if n := len(frames); n == 0 || frames[n-1].event() != "message_end" {
			t.Fatalf("chat %d: %d frames, the last not message_end", i, n)
		}
		// No waiting: the entry is finished before the stream's last chunk.
		entries := e.srv.Journal().List(journal.Filter{Route: "POST /v1/chat-messages"})
		if len(entries) != i+1 {
			t.Fatalf("chat %d: %d journal entries", i, len(entries))
		}
		for _, en := range entries {
			if !en.Done || en.Status != http.StatusOK || en.Outcome != "completed" {
				t.Fatalf("chat %d: journal entry done=%v status=%d outcome=%q after the stream ended", i, en.Done, en.Status, en.Outcome)
			}
		}
		if n := strings.Count(logs.String(), "path=/v1/chat-messages status=200"); n != i+1 {
			t.Fatalf("chat %d: %d access log lines for the chats:\n%s", i, n, logs)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, e.url("/parameters"), nil)
	req.Header.Set("Authorization", "Bearer app-test")
	resp, err := e.hc.Do(traced(req))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /parameters after the streams: %d", resp.StatusCode)
	}
	for i, r := range reused[1:] {
		if !r {
			t.Fatalf("request %d opened a new connection (reused %v): a stream's connection must serve the next request", i+1, reused)
		}
	}
}

// A client that asks to close gets its connection closed after the stream,
// and a request body the handler did not read to its end is not taken for
// the next request.
func TestDetachedStreamHonoursConnectionClose(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	e.hc = &http.Client{Transport: &http.Transport{}}
	defer e.hc.CloseIdleConnections()
	var reused []bool
	for range 2 {
		body := strings.NewReader(`{"query":"hello","user":"close","inputs":{"city":"Seoul"},"response_mode":"streaming"}`)
		req, _ := http.NewRequest(http.MethodPost, e.url("/chat-messages"), body)
		req.Header.Set("Authorization", "Bearer app-test")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(mockserver.HeaderSpeed, "0")
		req.Close = true
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
		resp, err := e.hc.Do(req.WithContext(httptrace.WithClientTrace(context.Background(), trace)))
		if err != nil {
			t.Fatal(err)
		}
		frames := readFrames(t, resp.Body, time.Now(), nil)
		resp.Body.Close()
		if len(frames) == 0 || !resp.Close {
			t.Fatalf("%d frames, response close=%v: want a complete stream that says it closes", len(frames), resp.Close)
		}
	}
	if reused[1] {
		t.Fatal("a connection the client asked to close was reused")
	}
}
