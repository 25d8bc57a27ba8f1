// Package detach lets a response outlive its handler. A chat stream is
// taken off net/http's connection goroutine once its header is out (the
// handler hijacks the connection, starts the stream on a goroutine of its
// own and returns), so the middleware around the handler, which finishes
// its work when the handler returns (the journal entry, the access log
// line), must instead finish it when the stream ends. The handler calls
// Detach with the rest of the response before it returns; each middleware
// asks Later to run its work at the end; once the whole chain has returned,
// the server calls Writer.Continue, which runs the rest of the response on
// a goroutine of its own, and that calls End when it is over.
//
// A Tail travels down the middleware chain inside a Writer (the outermost
// http.ResponseWriter of the request); Of finds it through the wrappers'
// Unwrap methods, as http.ResponseController does.
package detach

import (
	"net/http"
	"sync"

	"github.com/difyops/terraform-provider-dify/internal/unwrap"
)

// Tail is what runs after a detached response has ended.
type Tail struct {
	mu       sync.Mutex
	detached bool
	ended    bool
	later    []func()
	rest     func()
}

// Detach marks the response as going on after its handler returns: rest
// runs once every middleware has returned (Writer.Continue), and must call
// End exactly once when the response is over.
func (t *Tail) Detach(rest func()) {
	t.mu.Lock()
	t.detached, t.rest = true, rest
	t.mu.Unlock()
}

// Later runs fn once the detached response has ended (at once if it already
// has). It reports false, and does nothing, when the response was not
// detached (or t is nil): the caller then does its work itself, as usual.
func (t *Tail) Later(fn func()) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	if !t.detached {
		t.mu.Unlock()
		return false
	}
	if t.ended {
		t.mu.Unlock()
		fn()
		return true
	}
	t.later = append(t.later, fn)
	t.mu.Unlock()
	return true
}

// End runs the work the middleware left for the end, in the order it was
// registered: innermost first, as it would have run when the handler
// returned.
func (t *Tail) End() {
	t.mu.Lock()
	t.ended = true
	fns := t.later
	t.later = nil
	t.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Writer carries a request's Tail. The Tail is a separate object: a
// detached stream keeps it, and must not keep the ResponseWriter, which
// holds net/http's connection and its buffers.
type Writer struct {
	http.ResponseWriter
	tail *Tail
}

// Wrap gives w a Tail.
func Wrap(w http.ResponseWriter) *Writer { return &Writer{ResponseWriter: w, tail: &Tail{}} }

// Continue starts the rest of a detached response on a goroutine of its
// own. The server calls it after the handler chain has returned, so that
// every middleware's Later is registered before the response can end (a
// replay at speed 0 ends at once). It does nothing for a response that was
// not detached.
func (w *Writer) Continue() {
	t := w.tail
	t.mu.Lock()
	rest := t.rest
	t.rest = nil
	t.mu.Unlock()
	if rest != nil {
		go rest()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Of finds the Tail of w: w's own, or that of a writer it wraps. nil when
// the chain has none (the response cannot be detached).
func Of(w http.ResponseWriter) *Tail {
	if d, ok := unwrap.Find[*Writer](w); ok {
		return d.tail
	}
	return nil
}
