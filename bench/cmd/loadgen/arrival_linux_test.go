//go:build linux

package main

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
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

// A frame's way through the client, as the event loop takes it (a
// recvmsg(2) with its receive time, then the chunked and SSE decoders and
// the stream's callback), allocates nothing: at 10,000 streams it runs
// about 20,000 times a second, and garbage there would be collections in
// the process that shares the two CPUs with the server under test.
func TestAFramesWayThroughTheClientDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	server, client := acceptedPair(t, ln)
	defer client.Close()
	tc := newTimedConn(client) // SO_TIMESTAMPNS on, as for every stream
	raw, err := tc.Conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	if err := raw.Control(func(f uintptr) { fd = int(f) }); err != nil {
		t.Fatal(err)
	}
	data := `data: {"event":"agent_message","answer":"Lisbon"}` + "\n\n"
	chunk := []byte(strconv.FormatInt(int64(len(data)), 16) + "\r\n" + data + "\r\n")
	frames := 0
	var last arrival
	body := &streamBody{frame: func(at arrival, _ int) { frames++; last = at }}
	buf, oob := make([]byte, 64<<10), make([]byte, 64)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := server.Write(chunk); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(chunk); {
			n, at, err := recvArrival(fd, buf, oob)
			if errors.Is(err, syscall.EAGAIN) {
				continue // the segment is on its way
			}
			if err != nil || n == 0 {
				t.Fatalf("recv: %d, %v", n, err)
			}
			if _, err := body.push(buf[:n], at); err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if frames != 101 || last.socket.IsZero() {
		t.Fatalf("%d frames decoded, the last at %v; want 101 with a receive time", frames, last.socket)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per frame", allocs)
	}
}
