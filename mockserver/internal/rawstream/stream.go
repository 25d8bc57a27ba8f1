// Package rawstream writes a streamed HTTP/1.1 response straight to its
// connection, off net/http's connection goroutine, and gives the
// connection back to the http.Server for the client's next request.
//
// Why: net/http serves each connection on a goroutine that owns a 4 KiB
// read buffer, a 4 KiB write buffer, a 2 KiB response buffer and a second
// goroutine watching for the client going away, for as long as the
// response lasts. A chat stream lasts seconds to minutes and does nothing
// but wait between frames: at 10,000 streams those buffers and stacks were
// more than half of the mock's memory (bench/README.md). A Stream holds
// none of them: a frame's bytes are held only from Write to Flush (pooled).
// While the stream lasts, its socket waits in the hang-up watcher's epoll
// set (Linux; elsewhere a small goroutine reads it); when the client hangs
// up or sends a byte, or the stream ends, a small goroutine reads the
// connection, then waits there for the client's next request (keep-alive)
// and hands the connection back (Listener).
package rawstream

import (
	"bufio"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/difyops/terraform-provider-dify/internal/bufpool"
)

// Stream is a response body in chunked transfer coding on a connection
// taken from net/http (http.ResponseController.Hijack) after the response
// header, which announced the chunked coding, went out. Write and Flush are
// called from one goroutine; End once, last.
type Stream struct {
	conn    net.Conn
	back    *Listener // where the connection goes after End; nil: it is closed
	idle    time.Duration
	pending *[]byte // Write's bytes since the last Flush, after chunkRoom bytes of room; nil when none

	hangup   chan struct{} // closed, under mu, when the client hung up before End
	onHangup func()        // OnHangup's; guarded by mu

	mu     sync.Mutex
	early  []byte // bytes the client sent after its request (the next request's start)
	ended  bool   // End was called
	keep   bool   // End asked to keep the connection
	exited bool   // the reader has returned
	// watched: the socket is in the hang-up watcher's set and the reader
	// has not started (the watcher or End starts it).
	watched bool
	token   uint64          // the watcher's registration
	rc      syscall.RawConn // the watched socket
}

// chunkRoom is the room kept in front of a chunk's data for its size line
// (16 hex digits and CRLF at most), so a flush is one write(2) of the
// chunk as it goes on the wire.
const chunkRoom = 18

// Take starts a Stream on conn; buffered is what Hijack returned (bytes the
// client already sent past its request: a pipelined next request). back,
// if not nil, gets the connection after End for the client's next request,
// when End keeps it and the client sends one within idle.
func Take(conn net.Conn, buffered *bufio.Reader, back *Listener, idle time.Duration) *Stream {
	s := &Stream{conn: conn, back: back, idle: idle, hangup: make(chan struct{})}
	if n := buffered.Buffered(); n > 0 {
		s.early, _ = buffered.Peek(n)
		s.early = append([]byte(nil), s.early...)
		s.exited = true // the client is there: nothing to watch for
		return s
	}
	if !watchHangup(s) {
		go s.read()
	}
	return s
}

// wake starts the reader of a watched stream whose client hung up or sent
// a byte (the watcher's one event for it).
func (s *Stream) wake() {
	s.mu.Lock()
	start := s.unwatchLocked()
	s.mu.Unlock()
	if start {
		go s.read()
	}
}

// unwatchLocked takes s out of the watched state, under s.mu, and reports
// whether it was in it: the watcher's wake, End and Reset race for it, and
// only the first may start (or skip) the reader.
func (s *Stream) unwatchLocked() bool {
	w := s.watched
	s.watched = false
	return w
}

// Hangup is closed when the client closed or reset the connection before
// End.
func (s *Stream) Hangup() <-chan struct{} { return s.hangup }

// OnHangup has f called once, on another goroutine, when the client closes
// or resets the connection before End, or at once if it already has: for
// a caller that would rather fold the hang-up into a signal of its own than
// wait on one more channel (replay.Interrupter).
func (s *Stream) OnHangup(f func()) {
	s.mu.Lock()
	s.onHangup = f
	var hung bool
	select {
	case <-s.hangup:
		hung = true
	default:
	}
	s.mu.Unlock()
	if hung {
		f()
	}
}

// read waits for the client's next bytes. Before End they can only be a
// hang-up (an SSE client sends nothing while it reads the stream) or a
// pipelined next request; after End they are the client's next request on
// the kept connection, or the idle deadline End set.
func (s *Stream) read() {
	var b [1]byte
	n, err := s.conn.Read(b[:])
	s.mu.Lock()
	if n > 0 {
		s.early = append(s.early, b[0])
		err = nil
	}
	s.exited = true
	ended := s.ended
	var notify func()
	if !ended && err != nil {
		close(s.hangup)
		notify = s.onHangup
	}
	s.mu.Unlock()
	if ended {
		s.release()
		return
	}
	if notify != nil {
		notify()
	}
}

// Write queues p for the next Flush.
func (s *Stream) Write(p []byte) (int, error) {
	if s.pending == nil {
		s.pending = bufpool.Get(chunkRoom + len(p) + 2)
		*s.pending = (*s.pending)[:chunkRoom]
	}
	*s.pending = append(*s.pending, p...)
	return len(p), nil
}

// Flush writes what was written since the last Flush as one chunk.
func (s *Stream) Flush() error { return s.send(false) }

// send writes the pending chunk, and the last (empty) chunk when last is
// set, in one write.
func (s *Stream) send(last bool) error {
	var out []byte
	if s.pending != nil {
		buf := *s.pending
		var digits [16]byte // on the stack: no allocation per frame
		size := strconv.AppendInt(digits[:0], int64(len(buf)-chunkRoom), 16)
		start := chunkRoom - len(size) - 2
		copy(buf[start:], size)
		buf[chunkRoom-2], buf[chunkRoom-1] = '\r', '\n'
		buf = append(buf, '\r', '\n')
		if last {
			buf = append(buf, lastChunk...)
		}
		*s.pending = buf
		out = buf[start:]
	} else if last {
		out = []byte(lastChunk)
	} else {
		return nil
	}
	_, err := s.conn.Write(out)
	if s.pending != nil {
		bufpool.Put(s.pending)
		s.pending = nil
	}
	return err
}

// testHookEnded, when set, runs in End once the reader may see that the
// stream ended (and so may hand the connection back at any moment).
// (Atomic: a stream of an earlier test may still be ending.)
var testHookEnded atomic.Pointer[func(*Stream)]

// closeWait is how long a connection that ends with its stream waits for
// the client to close its side after ours (net/http's rstAvoidanceDelay).
const closeWait = 500 * time.Millisecond

// lastChunk ends a chunked body (no trailers).
const lastChunk = "0\r\n\r\n"

// End finishes the stream. complete writes the last chunk (with anything
// not yet flushed); without it the body stays cut where it is, as after a
// fault. keep keeps the connection for the client's next request (when the
// Stream has a Listener); otherwise, or when a write fails, it is closed.
// End returns at once: the wait for a next request is the reader's.
func (s *Stream) End(complete, keep bool) {
	if complete {
		if s.send(true) != nil {
			keep = false
		}
	} else if s.pending != nil {
		bufpool.Put(s.pending)
		s.pending = nil
	}
	keep = keep && s.back != nil
	if keep {
		// The reader's wait for the next request is bounded (the idle time,
		// or now when the listener is closed) before the reader can see
		// that the stream ended: from then on it may hand the connection
		// back at any moment, and a deadline set later would land on the
		// next request's connection (a Hijack stalled for the idle time, a
		// hang-up the client never made).
		s.back.wait(s)
	}
	s.mu.Lock()
	s.ended, s.keep = true, keep
	exited := s.exited
	watched := s.unwatchLocked()
	s.mu.Unlock()
	if watched {
		// The client sent nothing yet: the reader starts now, to wait for
		// its next request or its close, as below.
		forgetHangup(s)
		go s.read()
	}
	if hook := testHookEnded.Load(); hook != nil {
		(*hook)(s)
	}
	if exited {
		s.release()
		return
	}
	if !keep { // the connection is closed, never handed back
		// As net/http closes a connection: the write side first (FIN), then
		// the reader waits a moment for the client's own close before it
		// closes the descriptor. Closing at once was the most expensive
		// moment of a 10,000-stream run (bench/results.md, "Issue 21,
		// third round": lateness p99 712 ms against 156 ms), and a Close
		// here would also wait for the reader to let go of the descriptor.
		wait := time.Duration(0)
		if cw, ok := s.conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			wait = closeWait
		}
		_ = s.conn.SetReadDeadline(time.Now().Add(wait))
	}
}

// Reset ends the stream with a TCP reset (SO_LINGER 0) after what was
// written: the client reads those bytes, then "connection reset by peer"
// (a fault asked for it).
func (s *Stream) Reset() {
	_ = s.Flush()
	s.mu.Lock()
	s.ended, s.keep = true, false
	watched := s.unwatchLocked()
	s.mu.Unlock()
	if watched { // no reader is needed: the connection is closed here
		forgetHangup(s)
	}
	ResetConn(s.conn) // now, not after a half-close: the reset is the point
}

// ResetConn closes conn with SO_LINGER 0, which sends a TCP RST: the peer
// reads "connection reset by peer".
func ResetConn(conn net.Conn) {
	if l, ok := conn.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
	_ = conn.Close()
}

// Close closes the connection at once (the server is stopping and the
// stream did not end in time).
func (s *Stream) Close() error { return s.conn.Close() }

// release runs once both End was called and the reader returned: the
// connection goes back to the Listener when End kept it and the client
// sent its next request, and is closed otherwise.
func (s *Stream) release() {
	s.mu.Lock()
	keep, early := s.keep, s.early
	s.mu.Unlock()
	if keep {
		s.back.done(s)
	}
	if !keep || len(early) == 0 { // not kept, hung up, or idle too long
		_ = s.conn.Close()
		return
	}
	_ = s.conn.SetReadDeadline(time.Time{})
	// A connection already returned once is reused: its earlier bytes were
	// read, and wrapping it again would nest a wrapper per request.
	pc, ok := s.conn.(*prefixConn)
	if !ok {
		pc = &prefixConn{Conn: s.conn}
	}
	pc.early = early
	s.back.give(pc)
}
