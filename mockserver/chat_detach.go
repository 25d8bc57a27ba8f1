package mockserver

// Detached streams: a chat stream taken off net/http's connection
// goroutine once its header is out (package rawstream says why), with the
// middleware's end-of-request work deferred to the stream's end (package
// detach).

import (
	"io"
	"net"
	"net/http"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/detach"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/rawstream"
)

// IdleTimeout is how long a connection may wait for the client's next
// request after a stream, as after any other response (`dify-mock serve`
// gives its http.Server the same IdleTimeout).
const IdleTimeout = 2 * time.Minute

// Listener wraps the listener an http.Server serves this Server on. Chat
// streams on its connections are then taken off net/http's connection
// goroutine (about 20 KB less per live stream: net/http's buffers go, and
// two small goroutines replace the connection's and its reader), and their
// connections come back through it for the client's next request. Without
// it a stream stays on its connection goroutine, as for any handler.
func (s *appServer) Listener(ln net.Listener) net.Listener {
	l := rawstream.Listen(ln)
	s.back.Store(l)
	return l
}

// detachedStream is a chat stream playing on a goroutine of its own.
type detachedStream struct {
	cs   *chatStream
	raw  *rawstream.Stream
	tail *detach.Tail
	// keep: the connection may serve the client's next request (the body
	// was read to its end and neither side asked to close).
	keep   bool
	method string
	path   string
}

// detachStream sends the response header and takes the connection from
// net/http; the caller leaves the stream to play once the middleware has
// returned (detach.Tail.Detach). It returns nil when the stream stays on
// the connection goroutine: no Listener, not HTTP/1.1, or a writer that
// cannot be detached or hijacked.
func (s *appServer) detachStream(w http.ResponseWriter, r *http.Request, cs *chatStream) *detachedStream {
	back, tail := s.back.Load(), detach.Of(w)
	if back == nil || tail == nil || !r.ProtoAtLeast(1, 1) || r.ProtoMajor != 1 {
		return nil
	}
	// Whatever is left of the body would be read as the next request.
	n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, maxDrain+1))
	keep := n <= maxDrain && !r.Close && w.Header().Get("Connection") != "close"
	rc := http.NewResponseController(w)
	if rc.Flush() != nil { // the client is gone: the usual path notices
		return nil
	}
	conn, buf, err := rc.Hijack()
	if err != nil {
		return nil
	}
	d := &detachedStream{cs: cs, tail: tail, keep: keep, method: r.Method, path: r.URL.Path,
		raw: rawstream.Take(conn, buf.Reader, back, IdleTimeout)}
	if t, ok := s.tasks.Load(cs.bound.Binding.TaskID); ok {
		t.(*task).conn.Store(d.raw)
	}
	return d
}

// maxDrain is how much of an unread request body is read past before a
// detached stream's connection is kept for keep-alive (net/http's own
// limit when a handler leaves a body unread).
const maxDrain = 256 << 10
