package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/internal/bufpool"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
)

// Outcome says how a replay ended.
type Outcome int

const (
	Completed     Outcome = iota // the recorded turn played to its end (message_end)
	Failed                       // the recording itself ends with an error event
	LimitExceeded                // a run limit cut the turn: agent_run_limit_exceeded
	Stopped                      // POST /chat-messages/:task_id/stop
	Disconnected                 // the client went away (or a write failed)
	ShuttingDown                 // the server is shutting down
	Truncated                    // the recording has no terminal frame
	Faulted                      // Options.Fault ended the stream
)

func (o Outcome) String() string {
	return [...]string{"completed", "failed", "limit_exceeded", "stopped", "disconnected", "shutting_down", "truncated", "faulted"}[o]
}

// Options are the per-replay knobs.
type Options struct {
	// Speed divides recorded offsets; 0 (or less) sends every frame at once.
	Speed float64
	// RunTimeout cuts the turn at this much recorded (agent) time; 0 = none.
	RunTimeout time.Duration
	// MaxModelRequests cuts the turn when it would start request n+1; 0 = none.
	MaxModelRequests int
	// Observe, when set, is called after each frame is written (before it
	// is flushed), recorded or made up; it runs on the replay's goroutine,
	// so it must be quick. Unset, it costs nothing.
	Observe func(SentFrame)
	// Fault, when set, breaks the stream on purpose (docs/mock/faults.md).
	// It fires after Fault.After frames, in place of the next frame and at
	// that frame's scheduled time; a count past the frames before the
	// turn's end (message_end, a recorded error, a run-limit cut) fires
	// there instead, so the fault always happens.
	Fault *fault.Stream
	// CallerEndsBody leaves the flush after the stream's last frame to the
	// caller, which sends those bytes with the end of the body in one write
	// (a detached stream's rawstream.Stream.End): one system call fewer per
	// stream end, which counts when a thousand streams end together.
	CallerEndsBody bool
	// Precise, when set, is asked before each wait whether to spend the
	// wait's last stretch (spinLead) yielding the CPU until the frame's
	// exact time instead of trusting the timer for all of it. A Go timer
	// wakes up to a millisecond late on an idle machine (the runtime's
	// poller rounds its wait to whole milliseconds), later where an idle
	// virtual CPU must first be woken, and one late frame is a lone
	// stream's p99. The stretch costs up to spinLead of CPU per frame, so
	// the server asks for it only while few streams are live.
	Precise func() bool
}

// spinLead is how long before a frame is due a precise wait stops
// sleeping and yields until the due time: the timer's usual lateness on an
// idle machine (up to 1 ms) plus room for waking an idle CPU.
const spinLead = 2 * time.Millisecond

// Interrupter ends a replay before its time: a stop, a shutdown or a
// client gone, whichever comes first. It is one channel for the three, not
// a channel each, because a replay waits on it (beside its timer and its
// context) before every frame, and a select costs more with every channel
// it waits on, the more so for a channel every live stream waits on at
// once, like a server-wide shutdown: in a wake-up loop of 10,000
// goroutines, 2.3–2.6 µs of CPU per wake on two channels against 3.9–4.4 µs
// on four own and one shared (bench/results.md, "Issue 21, ninth round").
type Interrupter struct {
	ch    chan struct{}
	once  sync.Once
	cause Outcome // written before ch is closed, read after
}

// NewInterrupter returns an Interrupter that has not fired.
func NewInterrupter() *Interrupter { return &Interrupter{ch: make(chan struct{})} }

// Interrupt ends the replay with outcome o (Stopped, ShuttingDown or
// Disconnected) at its next wait; the first call wins, and it reports
// whether it was this one.
func (i *Interrupter) Interrupt(o Outcome) bool {
	first := false
	i.once.Do(func() {
		i.cause, first = o, true
		close(i.ch)
	})
	return first
}

// Done is closed once Interrupt has been called; a nil Interrupter's is
// nil, which never fires.
func (i *Interrupter) Done() <-chan struct{} {
	if i == nil {
		return nil
	}
	return i.ch
}

// Cause is the outcome Interrupt was called with; only valid once Done is
// closed.
func (i *Interrupter) Cause() Outcome { return i.cause }

// Sink is where frames go: an http.ResponseWriter plus its flusher.
type Sink interface {
	io.Writer
	Flush() error
}

// Report describes a finished replay.
type Report struct {
	Outcome Outcome
	Result  Result
	// Sent is how many recorded frames were written.
	Sent int
	// Reset asks the caller to reset the connection (TCP RST) instead of
	// ending the response: a fault wants the stream to die that way.
	Reset bool
}

// ShutdownMessage is the error text a stream ends with when the server stops.
const ShutdownMessage = "dify-mock is shutting down; the stream was ended early."

// RunLimitCode is the in-stream error code for run limits (docs/api §18).
const RunLimitCode = "agent_run_limit_exceeded"

type cut struct {
	at      int           // frames [0, at) are sent
	offset  time.Duration // when the error frame is due
	message string
}

// planCut finds where a run limit ends the turn, if one does (docs/api §18).
func (b *Bound) planCut(opt Options) *cut {
	t := b.Turn
	end := t.terminal
	if end < 0 {
		end = len(t.Frames)
	}
	var best *cut
	if opt.MaxModelRequests > 0 {
		if t.ModelRequests > 0 {
			if t.ModelRequests > opt.MaxModelRequests {
				at := end
				if t.closing >= 0 && t.closing < at {
					at = t.closing
				}
				best = &cut{at: at, offset: frameOffset(t, at), message: modelLimitMessage(opt.MaxModelRequests)}
			}
		} else if len(t.modelRequestFrames) > opt.MaxModelRequests {
			at := t.modelRequestFrames[opt.MaxModelRequests]
			if at < end {
				best = &cut{at: at, offset: t.Frames[at].Offset, message: modelLimitMessage(opt.MaxModelRequests)}
			}
		}
	}
	if opt.RunTimeout > 0 {
		for i := 0; i < end; i++ {
			if t.Frames[i].Offset > opt.RunTimeout {
				if best == nil || i < best.at || (i == best.at && opt.RunTimeout < best.offset) {
					best = &cut{at: i, offset: opt.RunTimeout, message: fmt.Sprintf("Agent run exceeded its wall-clock deadline of %s", fmtDuration(opt.RunTimeout))}
				}
				break
			}
		}
	}
	return best
}

func frameOffset(t *CompiledTurn, i int) time.Duration {
	if i < len(t.Frames) {
		return t.Frames[i].Offset
	}
	if len(t.Frames) == 0 {
		return 0
	}
	return t.Frames[len(t.Frames)-1].Offset
}

func modelLimitMessage(n int) string {
	return fmt.Sprintf("Agent run exceeded its limit of %d model requests", n)
}

func fmtDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d seconds", int64(d/time.Second))
	}
	return d.String()
}

// Play writes the turn to sink on schedule: frame i is written at
// start + Offset_i/Speed (absolute deadlines on one timer, so lateness never
// accumulates), and frames that are due together are flushed together.
// settle is called exactly once with the final report before the frame that
// ends the stream is written (after the last write for disconnects and
// truncated recordings), so state is recorded before a client sees the end.
// With opt.Fault the stream breaks on purpose; a fault that ends it
// settles what was sent (plus the error for error-after) and, for a reset,
// sets Report.Reset for the caller, which owns the connection.
//
// ctx ending (a handler's client gone) or in firing (nil: nothing does)
// ends the replay early.
func (b *Bound) Play(ctx context.Context, sink Sink, opt Options, in *Interrupter, settle func(*Report)) *Report {
	var p player // on the stack: a replay costs no allocation for it
	p.init(b, ctx, sink, opt, in, settle)
	defer p.stopTimer()
	return p.play()
}

// SentFrame describes one frame a replay handed to its sink (Options.Observe).
type SentFrame struct {
	// Index is the recorded frame's index in the turn, or -1 for a frame the
	// mock made up: a run-limit or fault error, the message_end
	// that closes a stopped turn, a malformed frame, a shutdown error.
	Index int
	// Event is the frame's event name ("ping" for keep-alives, "" for a
	// frame that is not a JSON data frame).
	Event string
	// Offset is when the frame was planned, in recorded time from the start
	// of the turn (sent at Offset/Speed after the start). A made-up frame
	// has the offset of the place it takes.
	Offset time.Duration
	// At is when the frame was written.
	At time.Time
	// Data is the frame's bytes as written. It is only valid during the
	// Observe call (the replay reuses the buffer): copy what is kept.
	Data []byte
	// Bound, for a recorded frame, is the bound turn whose Render(nil,
	// Index) gives Data again, at any later time; nil for a made-up frame.
	Bound *Bound
}

// player is one replay in progress. Its methods share the schedule (start,
// timer), what the sink holds unflushed (dirty) and the report being built,
// so each way a replay can end reads as one method:
//
//   - play: the recorded frames in order, ending Completed/Failed at the
//     recorded terminal frame or Truncated without one;
//   - cutRun: a run limit (planCut) ends the turn with agent_run_limit_exceeded;
//   - fire: Options.Fault breaks the stream at its frame;
//   - interrupted: stop, shutdown or a gone client cut it between frames.
type player struct {
	b      *Bound
	t      *CompiledTurn
	ctx    context.Context
	sink   Sink
	opt    Options
	in     *Interrupter // nil: none
	settle func(*Report)

	cut     *cut // the run-limit cut, nil when the turn runs its course
	end     int  // frames [0, end) are the recorded frames to send
	faultAt int  // frames [0, faultAt) are sent before the fault fires; -1 = no fault

	start   time.Time   // the schedule's zero; a stall moves it later
	timer   *time.Timer // one timer for every wait, created on first use
	dirty   bool        // written and not yet flushed
	settled bool        // settle has been called (frames after the terminal one follow)
	rep     *Report
}

func (p *player) init(b *Bound, ctx context.Context, sink Sink, opt Options, in *Interrupter, settle func(*Report)) {
	t := b.Turn
	*p = player{b: b, t: t, ctx: ctx, sink: sink, opt: opt, in: in, settle: settle,
		cut: b.planCut(opt), end: len(t.Frames), faultAt: -1, rep: &Report{}}
	if p.cut != nil {
		p.end = p.cut.at
	}
	if opt.Fault != nil {
		limit := len(t.Frames)
		if t.terminal >= 0 {
			limit = t.terminal
		}
		if p.cut != nil && p.cut.at < limit {
			limit = p.cut.at
		}
		p.faultAt = min(opt.Fault.After, limit)
	}
	p.start = time.Now()
}

func (p *player) stopTimer() {
	if p.timer != nil {
		p.timer.Stop()
	}
}

// play sends the recorded frames [0, end) on schedule, then ends the turn:
// with the fault if it is due at end, the run-limit cut, or as recorded.
func (p *player) play() *Report {
	t, rep := p.t, p.rep
	for i := 0; i < p.end; i++ {
		if i == p.faultAt {
			if r, done := p.fire(i); done {
				return r
			}
		}
		if o := p.wait(t.Frames[i].Offset); o >= 0 {
			if p.settled {
				// The turn already ended (frames after message_end, e.g.
				// tts_message_end, are the rest): nothing to record.
				p.flush()
				return rep
			}
			return p.interrupted(o, i)
		}
		if i == t.terminal && !p.settled {
			p.settleTerminal(i)
		}
		if !p.writeRecorded(i) {
			if !p.settled {
				rep.Sent = i
				rep.Result = p.b.Fold(i)
				rep.Outcome = Disconnected
				p.settle(rep)
			}
			return rep
		}
		rep.Sent = i + 1
	}
	if p.faultAt == p.end {
		if r, done := p.fire(p.end); done {
			return r
		}
	}
	if p.cut != nil {
		return p.cutRun()
	}
	if !p.settled {
		rep.Result = p.b.Fold(p.end)
		rep.Outcome = Truncated
		p.settle(rep)
	}
	p.flush()
	return rep
}

// settleTerminal records the turn at its recorded end (message_end or
// error, frame i) before the client sees that frame.
func (p *player) settleTerminal(i int) {
	rep := p.rep
	rep.Result = p.b.Fold(i + 1)
	rep.Outcome = Completed
	if p.t.Frames[i].Event == dify.EventError {
		rep.Outcome = Failed
	}
	rep.Sent = i + 1
	p.settle(rep)
	p.settled = true
}

// writeRecorded renders recorded frame i into a pooled buffer and writes it.
func (p *player) writeRecorded(i int) bool {
	buf := bufpool.Get(p.t.maxFrame + 256)
	*buf = p.b.Render((*buf)[:0], i)
	ok := p.write(*buf)
	if ok && p.opt.Observe != nil {
		f := &p.t.Frames[i]
		p.opt.Observe(SentFrame{Index: i, Event: f.Event, Offset: f.Offset, At: time.Now(), Data: *buf, Bound: p.b})
	}
	bufpool.Put(buf)
	return ok
}

// cutRun waits for the cut's offset and ends the turn with the run-limit
// error (docs/api §18).
func (p *player) cutRun() *Report {
	c, rep := p.cut, p.rep
	if o := p.wait(c.offset); o >= 0 {
		return p.interrupted(o, p.end)
	}
	rep.Sent = p.end
	rep.Result = p.b.Fold(p.end)
	msg := fmt.Sprintf("%s (agent_run_id=%s)", c.message, NewUUID())
	rep.Result.ErrorCode, rep.Result.ErrorMessage = RunLimitCode, msg
	return p.finish(LimitExceeded, c.offset, madeUp{dify.EventError, p.b.errorFrame(RunLimitCode, 400, msg)})
}

// fire runs the fault at frame i (i == end: in place of the turn's end);
// done reports that the stream is over.
func (p *player) fire(i int) (r *Report, done bool) {
	f, rep := p.opt.Fault, p.rep
	off := frameOffset(p.t, i)
	if p.cut != nil && i == p.cut.at {
		off = p.cut.offset
	}
	if f.Kind == fault.StallAfter {
		// Frame i and everything after it go out f.For late.
		if o := p.waitUntil(p.due(off).Add(f.For)); o >= 0 {
			return p.interrupted(o, i), true
		}
		p.start = p.start.Add(f.For)
		if f.Then == fault.ThenContinue {
			return nil, false
		}
	} else if o := p.wait(off); o >= 0 {
		return p.interrupted(o, i), true
	}
	rep.Sent = i
	switch f.Kind {
	case fault.ErrorAfter:
		code, status, msg := f.ErrorEvent(NewUUID)
		rep.Result = p.b.Fold(i)
		rep.Result.ErrorCode, rep.Result.ErrorMessage = code, msg
		return p.finish(Faulted, off, madeUp{dify.EventError, p.b.errorFrame(code, status, msg)}), true
	case fault.MalformedAfter:
		broken := p.b.brokenFrame()
		if !p.write(broken) {
			rep.Result = p.b.Fold(i)
			rep.Outcome = Disconnected
			p.settle(rep)
			return rep, true
		}
		p.observeMadeUp(dify.EventAgentMessage, off, broken)
		if f.Then == fault.ThenContinue {
			return nil, false
		}
	}
	// The stream ends here without its terminal frame: what was sent
	// is the turn (as for a client that disconnects).
	rep.Result = p.b.Fold(i)
	rep.Reset = f.Kind == fault.ResetAfter || f.Then == fault.ThenReset
	return p.finish(Faulted, off), true
}

// interrupted ends a replay that a signal cut before frame i.
func (p *player) interrupted(o Outcome, i int) *Report {
	b, rep := p.b, p.rep
	rep.Sent = i
	rep.Result = b.Fold(i)
	off := frameOffset(p.t, i)
	switch o {
	case Stopped:
		// Dify's EasyUIBasedGenerateTaskPipeline._process_stream_response
		// (both app modes: New Agent runs on the same pipeline) answers a
		// QueueStopEvent with message_end only: no `message` repeats the
		// partial answer, which _save_message stores as streamed.
		t := b.Turn
		end := madeUp{dify.EventMessageEnd, nil}
		if t.messageEnd >= 0 {
			end.data = b.Render(nil, t.messageEnd)
			rep.Result.Usage = t.Frames[t.messageEnd].effect.usage
		} else {
			end.data = b.messageEndFrame()
		}
		rep.Result.Ended = true
		return p.finish(Stopped, off, end)
	case ShuttingDown:
		rep.Result.ErrorCode, rep.Result.ErrorMessage = "internal_server_error", ShutdownMessage
		return p.finish(ShuttingDown, off, madeUp{dify.EventError, b.errorFrame("internal_server_error", 500, ShutdownMessage)})
	default:
		rep.Outcome = Disconnected
		p.settle(rep)
		return rep
	}
}

// madeUp is a frame the mock writes that is not in the recording.
type madeUp struct {
	event string
	data  []byte
}

// finish settles the report with outcome o, then writes the frames that
// end the stream (planned at recorded offset off) and flushes.
func (p *player) finish(o Outcome, off time.Duration, extra ...madeUp) *Report {
	p.rep.Outcome = o
	p.settle(p.rep)
	for _, f := range extra {
		if !p.write(f.data) {
			break
		}
		p.observeMadeUp(f.event, off, f.data)
	}
	p.flush()
	return p.rep
}

func (p *player) observeMadeUp(event string, off time.Duration, data []byte) {
	if p.opt.Observe != nil {
		p.opt.Observe(SentFrame{Index: -1, Event: event, Offset: off, At: time.Now(), Data: data})
	}
}

func (p *player) write(b []byte) bool {
	if _, err := p.sink.Write(b); err != nil {
		return false
	}
	p.dirty = true
	return true
}

// flush flushes what was written since the last flush, if anything, at
// the end of the stream (unless the caller ends the body itself).
func (p *player) flush() {
	if p.dirty && !p.opt.CallerEndsBody {
		_ = p.sink.Flush()
	}
}

// due is when a frame at recorded offset off is sent (now at speed 0).
func (p *player) due(off time.Duration) time.Time {
	if p.opt.Speed > 0 {
		return p.start.Add(time.Duration(float64(off) / p.opt.Speed))
	}
	return time.Now()
}

// wait waits for the frame at recorded offset off (only for signals at
// speed 0).
func (p *player) wait(off time.Duration) Outcome {
	if p.opt.Speed > 0 {
		return p.waitUntil(p.due(off))
	}
	return p.waitUntil(time.Time{})
}

// waitUntil blocks until due or a signal; it returns the outcome that
// interrupted it, or -1 when the deadline passed. Before it sleeps it
// flushes what was written, so frames due together go out together.
func (p *player) waitUntil(due time.Time) Outcome {
	if d := time.Until(due); d > 0 {
		if p.dirty {
			if p.sink.Flush() != nil {
				return Disconnected
			}
			p.dirty = false
		}
		precise := p.opt.Precise != nil && p.opt.Precise()
		if precise {
			d -= spinLead
		}
		if d > 0 {
			if o := p.sleep(d); o >= 0 {
				return o
			}
		} else if o := p.signalled(); o >= 0 { // a wait too short to sleep still sees a stop
			return o
		}
		if precise {
			// Never before due: frames go out at their time, not early.
			for time.Now().Before(due) {
				runtime.Gosched()
			}
		}
		return -1
	}
	return p.signalled()
}

// signalled returns the outcome of a signal that has already fired, or -1.
func (p *player) signalled() Outcome {
	select {
	case <-p.ctx.Done():
		return Disconnected
	case <-p.in.Done():
		return p.in.Cause()
	default:
		return -1
	}
}

// sleep waits d on the replay's timer; it returns the outcome that
// interrupted it, or -1 when d passed.
func (p *player) sleep(d time.Duration) Outcome {
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
		return -1
	case <-p.ctx.Done():
		return Disconnected
	case <-p.in.Done():
		return p.in.Cause()
	}
}

// Synthetic frames use the compact (orjson) style and Dify's key order:
// event, conversation_id, message_id, created_at, task_id, then the event's
// own fields (docs/api §1.5).

type errorPayload struct {
	Event          string `json:"event"`
	ConversationID string `json:"conversation_id"`
	MessageID      string `json:"message_id"`
	CreatedAt      int64  `json:"created_at"`
	Code           string `json:"code"`
	Status         int    `json:"status"`
	Message        string `json:"message"`
}

func (b *Bound) errorFrame(code string, status int, msg string) []byte {
	return b.Binding.ErrorFrame(code, status, msg)
}

// ErrorFrame is a Dify in-stream `error` event (docs/api §2.5) with the
// binding's conversation and message ids.
func (b Binding) ErrorFrame(code string, status int, msg string) []byte {
	return dataFrame(errorPayload{
		Event: dify.EventError, ConversationID: b.ConversationID, MessageID: b.MessageID,
		CreatedAt: b.Now.Unix(), Code: code, Status: status, Message: msg,
	})
}

func (b *Bound) base(event string) dify.EventBase {
	return dify.EventBase{
		Event: event, ConversationID: b.Binding.ConversationID, MessageID: b.Binding.MessageID,
		CreatedAt: b.Binding.Now.Unix(), TaskID: b.Binding.TaskID,
	}
}

// brokenFrame is an agent_message data frame cut off inside its JSON, as a
// proxy or a crashing writer might leave it (fault malformed-after).
func (b *Bound) brokenFrame() []byte {
	full := dataFrame(dify.AgentMessageEvent{EventBase: b.base(dify.EventAgentMessage), ID: b.Binding.MessageID, Answer: "cut"})
	cut := bytes.Index(full, []byte(`"answer":"`)) + len(`"answer":"`)
	return append(full[:cut:cut], '\n', '\n')
}

// ZeroUsage is the usage a synthetic message_end reports.
func ZeroUsage() *dify.Usage {
	return &dify.Usage{
		PromptUnitPrice: "0", PromptPriceUnit: "0", PromptPrice: "0",
		CompletionUnitPrice: "0", CompletionPriceUnit: "0", CompletionPrice: "0",
		TotalPrice: "0", Currency: "USD",
	}
}

func (b *Bound) messageEndFrame() []byte { return b.Binding.MessageEndFrame() }

// MessageEndFrame is a message_end with zero usage and the binding's ids,
// as a stopped turn without a recorded message_end ends.
func (b Binding) MessageEndFrame() []byte {
	return dataFrame(dify.MessageEndEvent{
		EventBase: dify.EventBase{Event: dify.EventMessageEnd, ConversationID: b.ConversationID, MessageID: b.MessageID, CreatedAt: b.Now.Unix(), TaskID: b.TaskID},
		ID:        b.MessageID, Metadata: dify.MessageEndMetadata{Usage: ZeroUsage()}, Files: json.RawMessage("null"),
	})
}

func dataFrame(v any) []byte {
	j, err := json.Marshal(v)
	if err != nil { // cannot happen for these fixed shapes
		panic(err)
	}
	out := make([]byte, 0, len(j)+8)
	out = append(out, "data: "...)
	out = append(out, j...)
	return append(out, '\n', '\n')
}
