package mockserver_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// connCountingServer runs the mock and counts its open connections.
func connCountingServer(t *testing.T, cfg mockserver.Config) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	if cfg.Cassettes == nil {
		cfg.Cassettes = testSet(t, testParams)
	}
	srv, err := mockserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var open atomic.Int64
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, &open
}

// Connections that send headers and then dribble (or stop sending) their
// body are answered 408 and closed once the body deadline passes; before
// the deadline existed they stayed open for ever and, with `ulimit -n 1024`,
// 500 of them starved every other client.
func TestSlowBodiesAreCutOff(t *testing.T) {
	ts, open := connCountingServer(t, mockserver.Config{BodyReadTimeout: 300 * time.Millisecond})
	const conns = 40
	paths := []string{"/v1/chat-messages", "/v1/files/upload", "/v1/conversations/" + recConv + "/name"}
	var wg sync.WaitGroup
	answers := make(chan string, conns)
	for i := range conns {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		ct := "application/json"
		if i%3 == 1 {
			ct = "multipart/form-data; boundary=x"
		}
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer app-test\r\nContent-Type: %s\r\nContent-Length: 100000\r\n\r\n{\"query\":", paths[i%3], ct)
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				answers <- "no answer: " + err.Error()
				return
			}
			body, _ := io.ReadAll(resp.Body)
			answers <- fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}()
	}
	start := time.Now()
	settle(t, 10*time.Second, func() bool { return open.Load() == 0 },
		func() string {
			return fmt.Sprintf("%d of %d dribbling connections still open after %v", open.Load(), conns, time.Since(start))
		})
	wg.Wait()
	close(answers)
	for a := range answers {
		if !strings.HasPrefix(a, "408 ") || !strings.Contains(a, `"code":"request_timeout"`) {
			t.Errorf("answer %q, want 408 request_timeout", a)
		}
	}
}

// The body deadline ends with the body: a stream that lasts many times the
// deadline plays to its end, over a body that arrived in pieces.
func TestBodyDeadlineNeverCutsAStream(t *testing.T) {
	ts, _ := connCountingServer(t, mockserver.Config{BodyReadTimeout: 200 * time.Millisecond})
	pr, pw := io.Pipe()
	go func() {
		for _, piece := range []string{`{"query":"Take your time",`, `"inputs":{"city":"Oslo"},`, `"user":"u1","response_mode":"streaming"}`} {
			_, _ = pw.Write([]byte(piece))
			time.Sleep(50 * time.Millisecond) // pieces, within the deadline
		}
		_ = pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat-messages", pr)
	req.Header.Set("Authorization", "Bearer app-test")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(mockserver.HeaderCassette, "slow")
	req.Header.Set(mockserver.HeaderSpeed, "10") // ten recorded seconds in one: five deadlines
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	frames := readFrames(t, resp.Body, start, nil)
	if n := len(frames); n == 0 || frames[n-1].event() != "message_end" {
		t.Fatalf("stream ended after %v with %d frames, last %+v; want it to reach message_end", time.Since(start), n, frames)
	}
	if d := time.Since(start); d < 800*time.Millisecond {
		t.Fatalf("stream took %v; the test needs it to outlast the deadline several times", d)
	}
}
