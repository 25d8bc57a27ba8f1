//go:build linux

package main

import (
	"context"
	"net"
	"testing"
	"time"
)

// loopedPair starts reading a server-side connection's body on l and
// returns the other end (what a server writes) and the times frames were
// read.
func loopedPair(t *testing.T, ln net.Listener, l *loop) (net.Conn, <-chan arrival) {
	t.Helper()
	server, client := acceptedPair(t, ln)
	read := make(chan arrival, 8)
	body := &streamBody{frame: func(at arrival, _ int) { read <- at }}
	tc := newTimedConn(client) // before anything is written to it
	go func() { _ = l.read(context.Background(), tc, body) }()
	return server, read
}

// The paced loop reads what arrives within the pace after it woke in one
// batch, after the pace; the unpaced loop reads each arrival as it comes.
func TestLoopPaceGathersArrivalsIntoOneWakeUp(t *testing.T) {
	rxTimesOn(t)
	const pace = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	frame := []byte("f\r\ndata: {\"a\":1}\n\n\r\n")
	for _, tc := range []struct {
		name string
		pace time.Duration
	}{{"paced", pace}, {"unpaced", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := newLoop(tc.pace)
			if err != nil {
				t.Fatal(err)
			}
			a, readA := loopedPair(t, ln, l)
			b, readB := loopedPair(t, ln, l)
			if _, err := a.Write(frame); err != nil { // wakes the loop
				t.Fatal(err)
			}
			woke := (<-readA).read
			sent := time.Now()
			for _, c := range []net.Conn{b, a} { // arrive while the paced loop gathers
				if _, err := c.Write(frame); err != nil {
					t.Fatal(err)
				}
			}
			written := time.Now()
			atB, atA := <-readB, <-readA
			for name, at := range map[string]arrival{"b": atB, "a's second": atA} {
				if tc.pace > 0 && at.read.Sub(woke) < tc.pace {
					t.Errorf("%s frame read %v after the wake-up; a paced loop looks again only after %v", name, at.read.Sub(woke), tc.pace)
				}
				if tc.pace == 0 && at.read.Sub(sent) >= pace {
					t.Errorf("%s frame read %v after it was sent; an unpaced loop reads it as it comes", name, at.read.Sub(sent))
				}
				// Its arrival is when it reached the socket, however long
				// the loop let it wait there: the kernel's receive time.
				if at.socket.Before(sent.Add(-time.Millisecond)) || at.socket.After(written.Add(pace/3)) {
					t.Errorf("%s frame arrived %v after it was sent (written by %v, read after %v): want its time at the socket",
						name, at.socket.Sub(sent), written.Sub(sent), at.read.Sub(sent))
				}
			}
		})
	}
}
