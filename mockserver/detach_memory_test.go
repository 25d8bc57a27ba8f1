//go:build !race

package mockserver

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// TestDetachedStreamHoldsLessMemory checks the reason streams leave
// net/http's connection goroutine (chat_detach.go): a live stream served
// through Server.Listener holds neither the connection's buffers nor its
// goroutines. 100 streams of tool-use are held between frames, on a server
// with and without the Listener, and the live heap plus goroutine stacks
// per stream are compared. Without the race detector only: it changes
// sizes.
func TestDetachedStreamHoldsLessMemory(t *testing.T) {
	classic, _ := liveStreamBytes(t, false)
	detached, goroutines := liveStreamBytes(t, true)
	t.Logf("per live stream: %d bytes on the connection goroutine, %d detached (%.2f goroutines)", classic, detached, goroutines)
	if detached > classic-12<<10 {
		t.Errorf("a detached stream holds %d bytes, a stream on its connection goroutine %d: want at least 12 KiB less (net/http's 10 KiB of buffers and a goroutine)", detached, classic)
	}
	// On Linux the hang-up watcher (rawstream) waits for the client's
	// hang-up: a live stream's only goroutine is its replay. Measured
	// 9.4–10.1 KB per stream; 13.1–13.8 KB with a reader goroutine each.
	if runtime.GOOS == "linux" && goroutines > 1.05 {
		t.Errorf("a detached stream has %.2f goroutines, want 1 (its replay; the hang-up watcher reads for it)", goroutines)
	}
}

// liveStreamBytes starts n streams, waits until all are admitted, and
// returns the live heap and stack they hold, and their goroutines, per
// stream.
func liveStreamBytes(t *testing.T, listener bool) (int64, float64) {
	t.Helper()
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := raw
	if listener {
		ln = srv.Listener(raw)
	}
	hs := &http.Server{Handler: srv}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	body := `{"query":"What will three nights in Lisbon cost for two?","inputs":{},"user":"mem","response_mode":"streaming"}`
	request := func(speed string) string {
		return fmt.Sprintf("POST /v1/chat-messages HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer app-test\r\nContent-Type: application/json\r\n"+
			"X-Dify-Mock-Cassette: tool-use\r\nX-Dify-Mock-Speed: %s\r\nContent-Length: %d\r\n\r\n%s", raw.Addr(), speed, len(body), body)
	}
	send := func(req string) net.Conn {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for range 10 { // warm-up (pools, maps): whole streams at speed 0
		c := send(request("0"))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	const n = 100
	conns := make([]net.Conn, 0, n)
	for range n {
		conns = append(conns, send(request("0.1"))) // the first frame is due at 7.5 s
	}
	waitLive(t, srv, n)
	if listener { // a stream leaves its connection goroutine after its header
		waitDetached(t, srv, n)
		// ... and the connection goroutines return: at most 5 s for the
		// count to settle at one per stream (on Linux; it stays above
		// elsewhere, or with a reader per stream, and the test says so).
		for settle := time.Now().Add(5 * time.Second); runtime.NumGoroutine()-goroutines > n+n/20 && time.Now().Before(settle); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perStream := float64(runtime.NumGoroutine()-goroutines) / n
	for _, c := range conns {
		c.Close()
	}
	live := func(m *runtime.MemStats) int64 { return int64(m.HeapAlloc) + int64(m.StackInuse) }
	return (live(&after) - live(&before)) / n, perStream
}

// waitDetached waits until n streams have left net/http's connection
// goroutines (Server.Listener).
func waitDetached(t *testing.T, s *Server, n int) {
	t.Helper()
	waitTasks(t, s, n, "detached", func(t *task) bool { return t.conn.Load() != nil })
}

// waitLive waits until n streams are admitted and waiting for their first
// frame (a stream on its connection goroutine sends its header only with
// that frame, so the client cannot tell).
func waitLive(t *testing.T, s *Server, n int) {
	t.Helper()
	waitTasks(t, s, n, "admitted", func(*task) bool { return true })
}

// waitTasks waits up to 10 s until n of s's streams are what counts says.
func waitTasks(t *testing.T, s *Server, n int, what string, counts func(*task) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		s.tasks.Range(func(_, v any) bool {
			if counts(v.(*task)) {
				got++
			}
			return true
		})
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d streams %s after 10 s", got, n, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
