package rawstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// server serves a handler that takes its response over with Take and runs
// play on the Stream, on a Listener; plain paths get "plain".
func server(t *testing.T, idle time.Duration, play func(*Stream)) (addr string, ln *Listener) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln = Listen(raw)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			_, _ = io.WriteString(w, "plain")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		if err := rc.Flush(); err != nil {
			return
		}
		conn, buf, err := rc.Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		go play(Take(conn, buf.Reader, ln, idle))
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return raw.Addr().String(), ln
}

func TestStreamIsChunkedAndTheConnectionServesTheNextRequest(t *testing.T) {
	addr, _ := server(t, time.Minute, func(s *Stream) {
		_, _ = s.Write([]byte("data: 1\n\n"))
		_ = s.Flush()
		_, _ = s.Write([]byte("data: 2\n\n"))
		_, _ = s.Write([]byte("data: 3\n\n"))
		s.End(true, true)
	})
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	var reused []bool
	get := func(path string) string {
		t.Helper()
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, "http://"+addr+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if path == "/stream" && (len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked") {
			t.Fatalf("transfer encoding %v, want chunked", resp.TransferEncoding)
		}
		return string(body)
	}
	for i, path := range []string{"/stream", "/stream", "/plain", "/stream"} {
		want := "data: 1\n\ndata: 2\n\ndata: 3\n\n"
		if path == "/plain" {
			want = "plain"
		}
		if got := get(path); got != want {
			t.Fatalf("request %d (%s): body %q, want %q", i, path, got, want)
		}
	}
	if want := []bool{false, true, true, true}; !reflect.DeepEqual(reused, want) {
		t.Fatalf("connection reused %v, want %v: a stream's connection must come back for the next request", reused, want)
	}
}

// oneChunk plays a stream of body, ending it with the connection kept.
func oneChunk(body string) func(*Stream) {
	return func(s *Stream) {
		_, _ = s.Write([]byte(body))
		s.End(true, true)
	}
}

// rawRequest sends a GET of /stream on a new connection.
func rawRequest(t *testing.T, addr string, extra string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"+extra); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// readStream reads one chunked response and returns its body.
func readStream(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func TestPipelinedRequestIsServedAfterTheStream(t *testing.T) {
	addr, _ := server(t, time.Minute, oneChunk("one"))
	_, br := rawRequest(t, addr, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
	if got := readStream(t, br); got != "one" {
		t.Fatalf("stream body %q", got)
	}
	if got := readStream(t, br); got != "plain" {
		t.Fatalf("pipelined request answered %q, want plain", got)
	}
}

func TestEndWithoutKeepClosesAndIdleConnectionsAreClosed(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep bool
	}{{"not kept", false}, {"kept, idle too long", true}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := server(t, 100*time.Millisecond, func(s *Stream) {
				_, _ = s.Write([]byte("x"))
				s.End(true, tc.keep)
			})
			c, br := rawRequest(t, addr, "")
			if got := readStream(t, br); got != "x" {
				t.Fatalf("body %q", got)
			}
			start := time.Now()
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := br.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("after the stream: read %d bytes, %v; want EOF (the server closes)", n, err)
			}
			if tc.keep && time.Since(start) < 50*time.Millisecond {
				t.Fatalf("a kept connection was closed after %v, before its idle time", time.Since(start))
			}
		})
	}
}

func TestHangupIsReportedAndResetResets(t *testing.T) {
	hung := make(chan time.Duration, 1)
	addr, _ := server(t, time.Minute, func(s *Stream) {
		_, _ = s.Write([]byte("first"))
		_ = s.Flush()
		hung <- waitHangup(s)
		s.End(true, true)
	})
	hangUpAfterFirstBytes(t, addr)
	if d := <-hung; d < 0 {
		t.Fatal("a client that closed its connection was not reported within 10 s")
	}

	addr2, _ := server(t, time.Minute, func(s *Stream) {
		_, _ = s.Write([]byte("x"))
		_ = s.Flush()
		s.Reset()
	})
	_, br2 := rawRequest(t, addr2, "")
	resp2, err := http.ReadResponse(br2, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp2.Body)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after Reset the client read %v, want connection reset", err)
	}
}

// OnHangup's function runs once whether it was given before the client
// hung up or after.
func TestOnHangupRunsOnceBeforeOrAfter(t *testing.T) {
	for _, after := range []bool{false, true} {
		var calls atomic.Int32
		called := make(chan struct{}, 2)
		done := make(chan struct{})
		addr, _ := server(t, time.Minute, func(s *Stream) {
			_, _ = s.Write([]byte("first"))
			_ = s.Flush()
			f := func() { calls.Add(1); called <- struct{}{} }
			if !after {
				s.OnHangup(f)
			}
			if waitHangup(s) < 0 {
				t.Error("no hang-up within 10 s")
			}
			if after {
				s.OnHangup(f)
			}
			s.End(true, false)
			close(done)
		})
		hangUpAfterFirstBytes(t, addr)
		<-done
		select {
		case <-called:
		case <-time.After(10 * time.Second):
			t.Fatalf("after=%v: OnHangup's function did not run", after)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("after=%v: ran %d times", after, n)
		}
	}

}

// hangUpAfterFirstBytes requests a stream from addr, reads the response
// header and the body's first bytes, and closes the connection.
func hangUpAfterFirstBytes(t *testing.T, addr string) {
	t.Helper()
	c, br := rawRequest(t, addr, "")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Body.Read(make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
}

// waitHangup waits up to 10 s for s's client to hang up and returns how
// long it took, -1 when it did not.
func waitHangup(s *Stream) time.Duration {
	start := time.Now()
	select {
	case <-s.Hangup():
		return time.Since(start)
	case <-time.After(10 * time.Second):
		return -1
	}
}

// TestHangupIsReportedOnAReusedConnection: the second stream of a
// keep-alive connection (handed back, served again, taken again) still
// learns that its client hung up, and a stream that ended before its
// client did anything leaves nothing watching for the connection.
func TestHangupIsReportedOnAReusedConnection(t *testing.T) {
	var n atomic.Int32
	hung := make(chan time.Duration, 1)
	var watched [2]atomic.Bool
	addr, _ := server(t, time.Minute, func(s *Stream) {
		s.mu.Lock()
		w := s.watched // before the client can have done anything
		s.mu.Unlock()
		i := n.Add(1)
		watched[min(i, 2)-1].Store(w)
		_, _ = s.Write([]byte("one"))
		if i == 1 {
			s.End(true, true)
			return
		}
		_ = s.Flush()
		hung <- waitHangup(s)
		s.End(true, true)
	})
	c, br := rawRequest(t, addr, "")
	if got := readStream(t, br); got != "one" {
		t.Fatalf("first stream %q", got)
	}
	if _, err := io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if d := <-hung; d < 0 {
		t.Fatal("the second stream of a connection did not see its client close within 10 s")
	}
	if n.Load() != 2 {
		t.Fatalf("%d streams played, want 2", n.Load())
	}
	if runtime.GOOS == "linux" && (!watched[0].Load() || !watched[1].Load()) {
		t.Fatalf("streams watched by the hang-up watcher: %v, %v; want both (no reader goroutine per stream)", watched[0].Load(), watched[1].Load())
	}
}

func TestClosedListenerClosesReturnedConnections(t *testing.T) {
	released := make(chan struct{})
	addr, ln := server(t, time.Minute, func(s *Stream) {
		<-released
		s.End(true, true)
	})
	c, br := rawRequest(t, addr, "")
	if _, err := http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	_ = ln.Close()
	close(released)
	// The next request reaches the reader, whose connection can go back to
	// no server: it is closed.
	if _, err := io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatal(err)
	}
	if strings.Contains(string(rest), "plain") {
		t.Fatal("a connection was served after its listener was closed")
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
}

func TestClosingTheListenerClosesIdleConnections(t *testing.T) {
	addr, ln := server(t, time.Hour, oneChunk("x"))
	c, br := rawRequest(t, addr, "")
	if got := readStream(t, br); got != "x" {
		t.Fatalf("body %q", got)
	}
	_ = ln.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("an idle connection after the listener closed: %v, want EOF at once (not after the idle hour)", err)
	}
}

// Once its reader may see the stream ended, a Stream must not touch its
// connection again: the reader can hand it back at once, and it is then the
// next request's. Here End is held at that moment until the next stream on
// the same connection has started. A read deadline End set after that
// (its keep-alive wait) landed on the next stream, whose reader then
// reported a hang-up the client never made; in net/http's hands the same
// deadline could stall a Hijack for the whole idle time (a soak client
// waited for the rest of a body the server had already sent).
func TestAStreamLeavesItsConnectionAloneOnceHandedBack(t *testing.T) {
	const idle = 100 * time.Millisecond
	secondStarted := make(chan struct{})
	var hold sync.Once
	var ln atomic.Pointer[Listener]
	hook := func(s *Stream) {
		if s.back == ln.Load() { // not a stream of an earlier test
			hold.Do(func() { <-secondStarted })
		}
	}
	testHookEnded.Store(&hook)
	t.Cleanup(func() { testHookEnded.Store(nil) })
	var streams atomic.Int32
	hungUp := make(chan bool, 1)
	addr, l := server(t, idle, func(s *Stream) {
		if streams.Add(1) == 2 {
			close(secondStarted)
			select { // a hang-up, if one comes, comes one idle time after the first End
			case <-s.Hangup():
				hungUp <- true
			case <-time.After(3 * idle):
				hungUp <- false
			}
		}
		_, _ = s.Write([]byte("body"))
		s.End(true, true)
	})
	ln.Store(l)
	c, br := rawRequest(t, addr, "")
	for i := range 2 {
		if i == 1 {
			if _, err := io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
		}
		if got := readStream(t, br); got != "body" {
			t.Fatalf("stream %d: body %q", i+1, got)
		}
	}
	if <-hungUp {
		t.Fatal("the second stream on the connection saw a hang-up the client did not make: the first stream's End set a deadline on the connection after handing it back")
	}
}
