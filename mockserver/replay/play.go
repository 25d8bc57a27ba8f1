package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/fault"
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
	// Fault, when set, breaks the stream on purpose (docs/mock/faults.md).
	// It fires after Fault.After frames, in place of the next frame and at
	// that frame's scheduled time; a count past the frames before the
	// turn's end (message_end, a recorded error, a run-limit cut) fires
	// there instead, so the fault always happens.
	Fault *fault.Stream
}

// Signals end a replay early; nil channels never fire.
type Signals struct {
	Stop     <-chan struct{}
	Shutdown <-chan struct{}
}

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

// RunLimitCode is the in-stream error code for run limits (API §18).
const RunLimitCode = "agent_run_limit_exceeded"

type cut struct {
	at      int           // frames [0, at) are sent
	offset  time.Duration // when the error frame is due
	message string
}

// planCut finds where a run limit ends the turn, if one does (API §18).
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

func frameOffset(t *Turn, i int) time.Duration {
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
func (b *Bound) Play(ctx context.Context, sink Sink, opt Options, sig Signals, settle func(*Report)) *Report {
	t := b.Turn
	c := b.planCut(opt)
	end := len(t.Frames)
	if c != nil {
		end = c.at
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	start := time.Now()
	dirty := false
	rep := &Report{}

	// waitUntil blocks until due or a signal; it returns the outcome that
	// interrupted it, or -1 when the deadline passed.
	waitUntil := func(due time.Time) Outcome {
		if d := time.Until(due); d > 0 {
			if dirty {
				if sink.Flush() != nil {
					return Disconnected
				}
				dirty = false
			}
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-timer.C:
				return -1
			case <-ctx.Done():
				return Disconnected
			case <-sig.Stop:
				return Stopped
			case <-sig.Shutdown:
				return ShuttingDown
			}
		}
		select {
		case <-ctx.Done():
			return Disconnected
		case <-sig.Stop:
			return Stopped
		case <-sig.Shutdown:
			return ShuttingDown
		default:
			return -1
		}
	}
	// due is when a frame at recorded offset off is sent (now at speed 0).
	due := func(off time.Duration) time.Time {
		if opt.Speed > 0 {
			return start.Add(time.Duration(float64(off) / opt.Speed))
		}
		return time.Now()
	}
	wait := func(off time.Duration) Outcome {
		if opt.Speed > 0 {
			return waitUntil(due(off))
		}
		return waitUntil(time.Time{})
	}

	write := func(p []byte) bool {
		if _, err := sink.Write(p); err != nil {
			return false
		}
		dirty = true
		return true
	}

	finish := func(o Outcome, extra [][]byte) *Report {
		rep.Outcome = o
		settle(rep)
		for _, p := range extra {
			if !write(p) {
				break
			}
		}
		if dirty {
			_ = sink.Flush()
		}
		return rep
	}

	// The fault point: frames [0, fp) are sent before the fault fires.
	fp := -1
	if opt.Fault != nil {
		limit := len(t.Frames)
		if t.terminal >= 0 {
			limit = t.terminal
		}
		if c != nil && c.at < limit {
			limit = c.at
		}
		fp = min(opt.Fault.After, limit)
	}
	// fire runs the fault at frame p; done reports that the stream is over.
	fire := func(p int) (r *Report, done bool) {
		f := opt.Fault
		off := frameOffset(t, p)
		if c != nil && p == c.at {
			off = c.offset
		}
		if f.Kind == fault.StallAfter {
			// Frame p and everything after it go out f.For late.
			if o := waitUntil(due(off).Add(f.For)); o >= 0 {
				return b.interrupted(o, p, rep, finish, settle), true
			}
			start = start.Add(f.For)
			if f.Then == fault.ThenContinue {
				return nil, false
			}
		} else if o := wait(off); o >= 0 {
			return b.interrupted(o, p, rep, finish, settle), true
		}
		rep.Sent = p
		switch f.Kind {
		case fault.ErrorAfter:
			code, status, msg := f.ErrorEvent(NewUUID)
			rep.Result = b.Fold(p)
			rep.Result.ErrorCode, rep.Result.ErrorMessage = code, msg
			return finish(Faulted, [][]byte{b.errorFrame(code, status, msg)}), true
		case fault.MalformedAfter:
			if !write(b.brokenFrame()) {
				rep.Result = b.Fold(p)
				rep.Outcome = Disconnected
				settle(rep)
				return rep, true
			}
			if f.Then == fault.ThenContinue {
				return nil, false
			}
		}
		// The stream ends here without its terminal frame: what was sent
		// is the turn (as for a client that disconnects).
		rep.Result = b.Fold(p)
		rep.Reset = f.Kind == fault.ResetAfter || f.Then == fault.ThenReset
		return finish(Faulted, nil), true
	}

	settled := false
	for i := 0; i < end; i++ {
		if i == fp {
			if r, done := fire(i); done {
				return r
			}
		}
		if o := wait(t.Frames[i].Offset); o >= 0 {
			if settled {
				// The turn already ended (frames after message_end, e.g.
				// tts_message_end, are the rest): nothing to record.
				if dirty {
					_ = sink.Flush()
				}
				return rep
			}
			return b.interrupted(o, i, rep, finish, settle)
		}
		if i == t.terminal && !settled {
			// The recorded end: record the turn, then let the client see it.
			rep.Result = b.Fold(i + 1)
			rep.Outcome = Completed
			if t.Frames[i].Event == dify.EventError {
				rep.Outcome = Failed
			}
			rep.Sent = i + 1
			settle(rep)
			settled = true
		}
		buf := getFrameBuf(t.maxFrame + 256)
		*buf = b.Render((*buf)[:0], i)
		ok := write(*buf)
		putFrameBuf(buf)
		if !ok {
			if !settled {
				rep.Sent = i
				rep.Result = b.Fold(i)
				rep.Outcome = Disconnected
				settle(rep)
			}
			return rep
		}
		rep.Sent = i + 1
	}
	if fp == end {
		if r, done := fire(end); done {
			return r
		}
	}
	if c != nil {
		if o := wait(c.offset); o >= 0 {
			return b.interrupted(o, end, rep, finish, settle)
		}
		rep.Sent = end
		rep.Result = b.Fold(end)
		msg := fmt.Sprintf("%s (agent_run_id=%s)", c.message, NewUUID())
		rep.Result.ErrorCode, rep.Result.ErrorMessage = RunLimitCode, msg
		return finish(LimitExceeded, [][]byte{b.errorFrame(RunLimitCode, 400, msg)})
	}
	if !settled {
		rep.Result = b.Fold(end)
		rep.Outcome = Truncated
		settle(rep)
	}
	if dirty {
		_ = sink.Flush()
	}
	return rep
}

// Frames are rendered into pooled buffers that go back to the pool as soon
// as the sink has taken the bytes (an io.Writer does not keep them), so a
// replay holds no buffer while it waits for its next frame: at 10,000
// concurrent streams that is a few MB instead of one buffer per stream.
var framePool sync.Pool

// maxPooledFrame bounds the buffers kept for reuse; a larger one (a huge
// recorded frame) is left to the garbage collector.
const maxPooledFrame = 64 << 10

func getFrameBuf(size int) *[]byte {
	if p, ok := framePool.Get().(*[]byte); ok {
		if cap(*p) >= size {
			return p
		}
	}
	b := make([]byte, 0, max(size, 4<<10))
	return &b
}

func putFrameBuf(p *[]byte) {
	if cap(*p) <= maxPooledFrame {
		framePool.Put(p)
	}
}

// interrupted ends a replay that a signal cut before frame i.
func (b *Bound) interrupted(o Outcome, i int, rep *Report, finish func(Outcome, [][]byte) *Report, settle func(*Report)) *Report {
	rep.Sent = i
	rep.Result = b.Fold(i)
	switch o {
	case Stopped:
		// API §2.7: a stopped turn still finishes with message_end, and the
		// stored message keeps the partial answer (documented assumption).
		var extra [][]byte
		t := b.Turn
		if t.Mode == dify.ModeAgent && rep.Result.Answer != "" && (t.closing < 0 || t.closing >= i) {
			extra = append(extra, b.messageFrame(rep.Result.Answer))
		}
		if t.messageEnd >= 0 {
			extra = append(extra, b.Render(nil, t.messageEnd))
			rep.Result.Usage = t.Frames[t.messageEnd].effect.usage
		} else {
			extra = append(extra, b.messageEndFrame())
		}
		rep.Result.Ended = true
		return finish(Stopped, extra)
	case ShuttingDown:
		rep.Result.ErrorCode, rep.Result.ErrorMessage = "internal_server_error", ShutdownMessage
		return finish(ShuttingDown, [][]byte{b.errorFrame("internal_server_error", 500, ShutdownMessage)})
	default:
		rep.Outcome = Disconnected
		settle(rep)
		return rep
	}
}

// Synthetic frames use the compact (orjson) style and Dify's key order:
// event, conversation_id, message_id, created_at, task_id, then the event's
// own fields (API §1.5).

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
	return dataFrame(errorPayload{
		Event: dify.EventError, ConversationID: b.Binding.ConversationID, MessageID: b.Binding.MessageID,
		CreatedAt: b.Binding.Now.Unix(), Code: code, Status: status, Message: msg,
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

func (b *Bound) messageFrame(answer string) []byte {
	return dataFrame(dify.MessageEvent{
		EventBase: b.base(dify.EventMessage), ID: b.Binding.MessageID, Answer: answer,
		FromVariableSelector: json.RawMessage("null"),
	})
}

// ZeroUsage is the usage a synthetic message_end reports.
func ZeroUsage() *dify.Usage {
	return &dify.Usage{
		PromptUnitPrice: "0", PromptPriceUnit: "0", PromptPrice: "0",
		CompletionUnitPrice: "0", CompletionPriceUnit: "0", CompletionPrice: "0",
		TotalPrice: "0", Currency: "USD",
	}
}

func (b *Bound) messageEndFrame() []byte {
	return dataFrame(dify.MessageEndEvent{
		EventBase: b.base(dify.EventMessageEnd), ID: b.Binding.MessageID,
		Metadata: dify.MessageEndMetadata{Usage: ZeroUsage()}, Files: json.RawMessage("null"),
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
