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
	"runtime/debug"
	"strings"
	"testing"
)

// TestStreamKeepsASmallStack checks what keeps 10,000 streams within the
// memory target (bench/README.md): a chat's connection goroutine never needs
// more than its first 8 KiB of stack. The deepest points of a chat (decoding
// its JSON, net/http writing the response header, storing the turn) would
// otherwise double the stack to 16 KiB for the rest of the stream.
//
// With the garbage collector off no stack shrinks, so after complete chats
// the idle keep-alive connections' goroutines still have the largest stack
// they ever needed. Without the race detector only: it changes frame sizes.
func TestStreamKeepsASmallStack(t *testing.T) {
	srv, err := New(Config{Speed: 0, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	body := `{"query":"What will three nights in Lisbon cost for two?","inputs":{},"user":"stack","response_mode":"streaming"}`
	req := fmt.Sprintf("POST /v1/chat-messages HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer app-test\r\nContent-Type: application/json\r\n"+
		"X-Dify-Mock-Cassette: tool-use\r\nContent-Length: %d\r\n\r\n%s", ln.Addr(), len(body), body)
	chat := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"event":"message_end"`) {
			t.Fatalf("%d %.300s", resp.StatusCode, b)
		}
		return c
	}
	for range 20 { // warm-up: pools, maps, the adaptive initial stack size
		chat().Close()
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 200
	conns := make([]net.Conn, 0, n)
	for range n {
		conns = append(conns, chat())
	}
	runtime.ReadMemStats(&after)
	for _, c := range conns {
		c.Close()
	}
	per := (int64(after.StackInuse) - int64(before.StackInuse)) / n
	t.Logf("stack per idle connection after a chat: %d bytes", per)
	if per > 12<<10 {
		t.Errorf("a chat grew its connection goroutine's stack to about %d bytes; want 8 KiB (stack.go)", per)
	}
}
