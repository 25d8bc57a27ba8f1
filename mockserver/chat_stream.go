package mockserver

// The stream phase of a chat request (chat.go): the one player
// (replay.Play) streams every turn, whatever its source, and hands the
// outcome to the store phase before the frame that ends the stream.

import (
	"context"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/difyops/terraform-provider-dify/internal/freshstack"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
)

// playChat streams the turn admit prepared. It runs after prepareChat
// has returned, so that its frames are not on the stack below the replay,
// whose flushes reach deep into net/http (stack.go). When the server has a
// Listener the stream is taken off the connection goroutine instead
// (chat_detach.go): playChat returns at once, and the stream plays once
// the middleware has returned.
func (s *appServer) playChat(w http.ResponseWriter, r *http.Request, cs *chatStream) {
	if d := s.detachStream(w, r, cs); d != nil {
		d.tail.Detach(func() { s.playDetached(d) })
		return
	}
	defer s.endStream(cs.bound.Binding.TaskID)
	rep := s.replayTurn(r.Context(), &flushSink{w: w, rc: http.NewResponseController(w)}, cs, false)
	if rep.Reset {
		resetAfterStream(w)
	}
}

// playDetached plays the stream, then runs the middleware's deferred work
// and ends the response, in the order a handler's return would have.
func (s *appServer) playDetached(d *detachedStream) {
	defer s.endStream(d.cs.bound.Binding.TaskID)
	defer func() {
		// What the recoverer does for a handler: no panic takes the
		// process down. The response cannot be answered any more.
		if v := recover(); v != nil {
			s.log.Error("panic serving request", "method", d.method, "path", d.path, "panic", v, "stack", string(debug.Stack()))
			d.tail.End() // the journal entry and the access line still finish
			_ = d.raw.Close()
		}
	}()
	d.raw.OnHangup(func() { d.cs.tk.intr.Interrupt(replay.Disconnected) })
	rep := s.replayTurn(context.Background(), d.raw, d.cs, true)
	d.tail.End()
	if rep.Reset {
		d.raw.Reset()
		return
	}
	d.raw.End(true, d.keep && !s.isClosed())
}

// replayTurn is the one replay of a chat turn, whichever goroutine runs it:
// the journal's observer, the run limits and the fault, stop and shutdown
// (the task's Interrupter), and the store phase before the frame that ends
// the stream. ctx reports a handler's client gone; a detached stream's
// hang-up comes through the Interrupter (chat_detach.go). detached is a
// replay on a detached stream's own goroutine. That differs in two ways that
// matter when a thousand streams end together: it stores the turn on its
// own stack (it ends soon after, so its stack may grow; a goroutine handoff
// is a trip through the run queue behind every other stream), and it leaves
// the last flush to the end of the body (one write fewer).
func (s *appServer) replayTurn(ctx context.Context, sink replaySink, cs *chatStream, detached bool) *replay.Report {
	plan := cs.plan
	opts := replay.Options{Speed: plan.speed, RunTimeout: s.cfg.RunTimeout, MaxModelRequests: s.cfg.MaxModelRequests, Fault: plan.spec.Stream,
		CallerEndsBody: detached, Precise: s.precise}
	if cs.rec != nil {
		// The recorded frames, and room for one the mock makes up (a
		// fault's error, a stop's message_end).
		cs.rec.ExpectFrames(len(cs.bound.Turn.Frames) + 1)
		js := &journalSink{replaySink: sink, rec: cs.rec, speed: plan.speed, start: time.Now()}
		sink, opts.Observe = js, js.observe
	}
	rep := cs.bound.Play(ctx, sink, opts, cs.tk.intr, func(rep *replay.Report) {
		if detached {
			s.storeTurn(cs, rep)
		} else {
			freshstack.Run(func() { s.storeTurn(cs, rep) }) // stack.go: storing is deep
		}
	})
	cs.rec.Update(func(e *journal.Entry) { e.Outcome = rep.Outcome.String() })
	s.log.Debug("replay ended", "cassette", plan.ref.cassette, "turn", plan.ref.turn, "annotation", plan.annotation, "outcome", rep.Outcome.String(), "frames", rep.Sent)
	return rep
}

// preciseStreams is how many live streams may spend the last stretch
// before each frame yielding until its exact time (replay.Options.Precise):
// at about three frames a second each, 16 of them cost at most a tenth of
// a core, and with more streams live the machine is rarely idle, so timers
// wake on time anyway.
const preciseStreams = 16

// precise is replay.Options.Precise: while few streams are live.
func (s *appServer) precise() bool { return s.live.Load() <= preciseStreams }

// flushSink adapts a ResponseWriter to replay.Sink.
//
// The call that makes net/http write the response header (the first flush,
// or a write that overflows its 2 KiB response buffer first) runs on a
// worker goroutine (freshstack.Run): net/http writes the header in a function
// with a 2.8 KiB stack frame, which on top of the handler's deep stack would
// double the connection goroutine's stack from 8 to 16 KiB for the rest of
// the stream, the largest single item of a stream's memory
// (bench/README.md). Later calls take the direct path.
type flushSink struct {
	w          http.ResponseWriter
	rc         *http.ResponseController
	buffered   int // bytes written before the header was sent
	headerSent bool
}

// responseBuffer is net/http's per-response buffer: writes that still fit
// in it are only copied and do not reach the header-writing code.
const responseBuffer = 2048

func (f *flushSink) Write(p []byte) (int, error) {
	if f.headerSent || f.buffered+len(p) <= responseBuffer {
		f.buffered += len(p)
		return f.w.Write(p)
	}
	f.headerSent = true
	return f.writeFresh(p)
}

func (f *flushSink) writeFresh(p []byte) (n int, err error) {
	freshstack.Run(func() { n, err = f.w.Write(p) })
	return n, err
}

func (f *flushSink) Flush() error {
	if f.headerSent {
		return f.rc.Flush()
	}
	f.headerSent = true
	return f.flushFresh()
}

func (f *flushSink) flushFresh() (err error) {
	freshstack.Run(func() { err = f.rc.Flush() })
	return err
}

// journalSink records each frame a replay writes in the request's journal
// entry, with its planned and actual send time, when the replay's Observe
// hook reports it (with the frame's bytes: the sink keeps no copy, so a
// stream holds no frame buffer between frames).
type journalSink struct {
	replaySink
	rec   *journal.Record
	speed float64
	start time.Time
}

// replaySink is what replay.Play writes to.
type replaySink interface {
	Write(p []byte) (int, error)
	Flush() error
}

// observe is replay.Options.Observe.
func (j *journalSink) observe(f replay.SentFrame) {
	planned := time.Duration(0)
	if j.speed > 0 {
		planned = time.Duration(float64(f.Offset) / j.speed)
	}
	if f.Bound != nil {
		j.rec.RenderedFrame(f.Index, f.Event, planned, f.At.Sub(j.start), f.Data, f.Bound)
		return
	}
	j.rec.Frame(f.Index, f.Event, planned, f.At.Sub(j.start), f.Data)
}
