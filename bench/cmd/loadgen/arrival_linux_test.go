//go:build linux

package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// acceptedPair dials ln and returns both ends: the server's (closed when
// the test ends) and the client's.
func acceptedPair(t *testing.T, ln net.Listener) (server, client net.Conn) {
	t.Helper()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = server.Close() })
	return server, client
}

// timedPair is a loopback connection: the server's end, and the client's
// as a timedConn.
func timedPair(t *testing.T) (net.Conn, *timedConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	server, client := acceptedPair(t, ln)
	t.Cleanup(func() { _ = client.Close() })
	tc := newTimedConn(client)
	if tc.rx == nil {
		t.Fatal("SO_TIMESTAMPNS could not be set on a TCP socket")
	}
	return server, tc
}

// rxTimesOn returns once the kernel dates received data. It turns receive
// times on for the machine a moment after the first socket asks (a
// deferred static key), and off again when the last such socket closes:
// the pair it exchanges on stays open until the test ends.
func rxTimesOn(t *testing.T) (net.Conn, *timedConn) {
	t.Helper()
	server, tc := timedPair(t)
	buf := make([]byte, 8)
	for i := 0; ; i++ {
		if _, err := server.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if i >= 100 {
			// Read late on purpose: data read microseconds after it came
			// is not dated before its read when the kernel's clock and
			// the process's disagree by a few microseconds (seen once
			// on the bench's VM); a millisecond later it is.
			time.Sleep(time.Millisecond)
		}
		if _, err := tc.Read(buf); err != nil {
			t.Fatal(err)
		}
		if tc.last.socket.Before(tc.last.read) {
			return server, tc
		}
		if i == 1000 {
			t.Fatal("no read came back with the kernel's receive time")
		}
	}
}

// A read that comes late still dates its bytes when they reached the
// socket: the kernel's receive time, not the read's. The reader here is
// late on purpose (the sleep is the late reader under test, not a wait for
// something to happen).
func TestTimedConnDatesBytesByTheirArrival(t *testing.T) {
	server, tc := rxTimesOn(t)
	const late = 150 * time.Millisecond
	sent := time.Now()
	if _, err := server.Write([]byte("data: 1\n\n")); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	time.Sleep(late)
	buf := make([]byte, 64)
	n, err := tc.Read(buf)
	if err != nil || string(buf[:n]) != "data: 1\n\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	at := tc.last
	if at.read.Sub(sent) < late {
		t.Fatalf("read %v after the write, before the reader even looked (%v)", at.read.Sub(sent), late)
	}
	if at.socket.Before(sent.Add(-time.Millisecond)) || at.socket.After(written.Add(late/3)) {
		t.Fatalf("the bytes arrived %v after the write (written within %v, read after %v): want the time they reached the socket",
			at.socket.Sub(sent), written.Sub(sent), at.read.Sub(sent))
	}
	// On the monotonic clock, as the read's time is: a step of the wall
	// clock during a run does not move it.
	if !strings.Contains(at.socket.String(), " m=") {
		t.Fatalf("the arrival %v has no monotonic clock reading", at.socket)
	}
	// The end of the stream is io.EOF, as from net.Conn.
	_ = server.Close()
	if n, err := tc.Read(buf); n != 0 || err == nil || err.Error() != "EOF" {
		t.Fatalf("after the peer closed: %d bytes, %v; want io.EOF", n, err)
	}
}
