//go:build !race

package mockserver_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Without the race detector only (the reliability stage of make test runs
// it): loading a cassette with an 8 MiB frame takes seconds under -race.

// A detached stream is no longer the http.Server's to close: when its
// client stops reading and a write blocks, Shutdown's deadline closes the
// connection itself, so the stream ends and a later Shutdown returns.
func TestShutdownClosesADetachedStreamWhoseClientStoppedReading(t *testing.T) {
	dir := t.TempDir()
	// One 8 MiB frame: more than the socket buffers below hold, in one
	// write, so the replay is inside that write, not between frames, when
	// Shutdown comes.
	frames := []frame{delta(0, recMsg, strings.Repeat("a", 8<<20)), closing(10*time.Second, recMsg, "done"), end(10*time.Second, recMsg)}
	for name, data := range map[string][]byte{
		"app":   appFile(t, testParams),
		"flood": chatFile(t, cassette.Meta{Description: "more than a socket holds", Mode: "agent", Default: true}, turn{query: "Flood me", frames: frames}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, mockserver.Config{Cassettes: set, Speed: 1})
	c, err := net.Dial("tcp", strings.TrimPrefix(e.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A small receive buffer (no autotuning), so the server's writes block.
	if err := c.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	body := `{"query":"Flood me","user":"slow","inputs":{"city":"Seoul"},"response_mode":"streaming"}`
	fmt.Fprintf(c, "POST /v1/chat-messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer app-test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// Read the header and a little, then stop reading.
	head := make([]byte, 4096)
	if _, err := io.ReadFull(c, head); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(head), "HTTP/1.1 200 ") {
		t.Fatalf("the chat was not answered with a stream: %.300s", head)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err = e.srv.Shutdown(ctx)
	cancel()
	if err == nil {
		t.Fatal("Shutdown returned in time although the stream could not write its shutdown frame")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("the blocked stream did not end after Shutdown closed its connection: %v", err)
	}
}
