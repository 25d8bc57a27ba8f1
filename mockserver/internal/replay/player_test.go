package replay

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Each test here drives one way a replay ends, on a small turn built in the
// test, so a failure names the exit path that broke.

const (
	pConv = "c0c0c0c0-1111-4222-8333-444444444444"
	pMsg  = "d0d0d0d0-1111-4222-8333-444444444444"
	pTask = "e0e0e0e0-1111-4222-8333-444444444444"
)

func pFrame(fields string) []byte {
	return []byte(`data: {"event":` + fields + `,"conversation_id":"` + pConv + `","message_id":"` + pMsg + `","created_at":1764471600,"task_id":"` + pTask + `"}` + "\n\n")
}

var (
	pAnswer1    = pFrame(`"agent_message","id":"` + pMsg + `","answer":"Hel"`)
	pAnswer2    = pFrame(`"agent_message","id":"` + pMsg + `","answer":"lo"`)
	pClosing    = pFrame(`"message","id":"` + pMsg + `","answer":"Hello","from_variable_selector":null`)
	pMessageEnd = pFrame(`"message_end","id":"` + pMsg + `","metadata":{"usage":{"total_tokens":3,"currency":"USD"}},"files":null`)
	pTTSEnd     = pFrame(`"tts_message_end","audio":""`)
	pError      = pFrame(`"error","code":"completion_request_error","status":400,"message":"model failed"`)
)

// playerTurn compiles one turn of the given frames, 10 ms apart.
func playerTurn(t *testing.T, frames ...[]byte) *CompiledTurn {
	t.Helper()
	ct := &cassette.RecordedTurn{Status: 200, Request: dify.ChatRequest{Query: "hi"}}
	for i, raw := range frames {
		ct.Frames = append(ct.Frames, cassette.RecordedFrame{Offset: time.Duration(i) * 10 * time.Millisecond, Raw: raw})
	}
	sc, err := Compile(&cassette.Cassette{Name: "player", Turns: []*cassette.RecordedTurn{ct}})
	if err != nil {
		t.Fatal(err)
	}
	return sc.Turns[0]
}

func fullTurn(t *testing.T) *CompiledTurn {
	return playerTurn(t, pAnswer1, pAnswer2, pClosing, pMessageEnd, pTTSEnd)
}

// scriptedSink calls onWrite after each write (n counts writes from 1) and
// fails writes from failAt on (0 = never).
type scriptedSink struct {
	sink
	writes   int
	failAt   int
	onWrite  func(n int)
	flushErr error
}

func (s *scriptedSink) Write(p []byte) (int, error) {
	s.writes++
	if s.failAt > 0 && s.writes >= s.failAt {
		return 0, errors.New("client gone")
	}
	n, err := s.sink.Write(p)
	if s.onWrite != nil {
		s.onWrite(s.writes)
	}
	return n, err
}

func (s *scriptedSink) Flush() error {
	if s.flushErr != nil {
		return s.flushErr
	}
	return s.sink.Flush()
}

// played is one replay's report, output and what settle saw.
type played struct {
	rep         *Report
	out         string
	settles     int
	atSettle    string // the output when settle ran
	observed    []SentFrame
	settledWith Outcome
}

func playTurn(t *testing.T, tr *CompiledTurn, ctx context.Context, s *scriptedSink, opt Options, in *Interrupter) played {
	t.Helper()
	var p played
	opt.Observe = func(f SentFrame) { p.observed = append(p.observed, f) }
	p.rep = bind(tr).Play(ctx, s, opt, in, func(r *Report) {
		p.settles++
		p.atSettle = s.String()
		p.settledWith = r.Outcome
	})
	p.out = s.String()
	if p.settles != 1 {
		t.Errorf("settle ran %d times, want once", p.settles)
	}
	return p
}

func TestPlayCompletes(t *testing.T) {
	tr := fullTurn(t)
	p := playTurn(t, tr, context.Background(), &scriptedSink{}, Options{}, nil)
	if p.rep.Outcome != Completed || p.rep.Sent != 5 || p.rep.Result.Answer != "Hello" || !p.rep.Result.Ended {
		t.Fatalf("outcome %v sent %d answer %q ended %v", p.rep.Outcome, p.rep.Sent, p.rep.Result.Answer, p.rep.Result.Ended)
	}
	// Settled before the client sees message_end; the frames after it
	// (tts_message_end) still go out.
	if strings.Contains(p.atSettle, `"message_end"`) || !strings.Contains(p.atSettle, `"answer":"Hello"`) {
		t.Errorf("settled at the wrong moment; output then:\n%s", p.atSettle)
	}
	if last := p.out[strings.LastIndex(p.out, "data: "):]; !strings.HasPrefix(last, `data: {"event":"tts_message_end"`) {
		t.Errorf("tts_message_end not sent:\n%s", p.out)
	}
	wantEvents := []string{dify.EventAgentMessage, dify.EventAgentMessage, dify.EventMessage, dify.EventMessageEnd, "tts_message_end"}
	if len(p.observed) != len(wantEvents) {
		t.Fatalf("observed %d frames, want %d: %+v", len(p.observed), len(wantEvents), p.observed)
	}
	for i, f := range p.observed {
		if f.Index != i || f.Event != wantEvents[i] || f.Offset != tr.Frames[i].Offset || f.At.IsZero() {
			t.Errorf("observed frame %d: %+v", i, f)
		}
		if i > 0 && f.At.Before(p.observed[i-1].At) {
			t.Errorf("frame %d observed before frame %d", i, i-1)
		}
	}
}

func TestPlayRecordedErrorFails(t *testing.T) {
	p := playTurn(t, playerTurn(t, pAnswer1, pError), context.Background(), &scriptedSink{}, Options{}, nil)
	if p.rep.Outcome != Failed || p.rep.Sent != 2 || p.rep.Result.ErrorCode != "completion_request_error" {
		t.Fatalf("outcome %v sent %d error %q", p.rep.Outcome, p.rep.Sent, p.rep.Result.ErrorCode)
	}
	if strings.Contains(p.atSettle, `"event":"error"`) {
		t.Error("settled after the client saw the error")
	}
}

func TestPlayTruncatedRecording(t *testing.T) {
	p := playTurn(t, playerTurn(t, pAnswer1, pAnswer2), context.Background(), &scriptedSink{}, Options{}, nil)
	if p.rep.Outcome != Truncated || p.rep.Sent != 2 || p.rep.Result.Answer != "Hello" || p.rep.Result.Ended {
		t.Fatalf("outcome %v sent %d answer %q ended %v", p.rep.Outcome, p.rep.Sent, p.rep.Result.Answer, p.rep.Result.Ended)
	}
	if p.atSettle != p.out {
		t.Error("a truncated turn is settled after its last write")
	}
}

func TestPlayRunLimitCut(t *testing.T) {
	// Frames are 10 ms apart in recorded time: a 15 ms deadline cuts
	// before frame 2.
	p := playTurn(t, fullTurn(t), context.Background(), &scriptedSink{}, Options{RunTimeout: 15 * time.Millisecond}, nil)
	if p.rep.Outcome != LimitExceeded || p.rep.Sent != 2 || p.rep.Result.ErrorCode != RunLimitCode {
		t.Fatalf("outcome %v sent %d error %q", p.rep.Outcome, p.rep.Sent, p.rep.Result.ErrorCode)
	}
	if !strings.HasSuffix(p.out, "\n\n") || !strings.Contains(p.out, `"code":"agent_run_limit_exceeded","status":400`) || strings.Contains(p.out, `"message_end"`) {
		t.Errorf("output:\n%s", p.out)
	}
	last := p.observed[len(p.observed)-1]
	if last.Index != -1 || last.Event != dify.EventError || last.Offset != 15*time.Millisecond {
		t.Errorf("the cut's error frame observed as %+v", last)
	}
}

func TestPlayStopped(t *testing.T) {
	stop := NewInterrupter()
	// Stop once the second agent_message is out: the turn ends with the
	// recorded message_end only (EasyUIBasedGenerateTaskPipeline answers
	// QueueStopEvent without a message carrying the partial answer).
	s := &scriptedSink{onWrite: func(n int) {
		if n == 2 {
			stop.Interrupt(Stopped)
		}
	}}
	p := playTurn(t, fullTurn(t), context.Background(), s, Options{}, stop)
	if p.rep.Outcome != Stopped || p.rep.Sent != 2 || p.rep.Result.Answer != "Hello" || !p.rep.Result.Ended || p.rep.Result.Usage == nil {
		t.Fatalf("outcome %v sent %d answer %q ended %v usage %v", p.rep.Outcome, p.rep.Sent, p.rep.Result.Answer, p.rep.Result.Ended, p.rep.Result.Usage)
	}
	tail := p.out[len(p.atSettle):]
	if strings.Contains(tail, `"event":"message"`) || !strings.Contains(tail, `"event":"message_end"`) {
		t.Errorf("after settle: %q", tail)
	}
	n := len(p.observed)
	if n != 3 || p.observed[2].Index != -1 || p.observed[2].Event != dify.EventMessageEnd {
		t.Errorf("observed %+v", p.observed)
	}
}

func TestPlayShuttingDown(t *testing.T) {
	shutdown := NewInterrupter()
	shutdown.Interrupt(ShuttingDown)
	p := playTurn(t, fullTurn(t), context.Background(), &scriptedSink{}, Options{}, shutdown)
	if p.rep.Outcome != ShuttingDown || p.rep.Sent != 0 || p.rep.Result.ErrorMessage != ShutdownMessage {
		t.Fatalf("outcome %v sent %d error %q", p.rep.Outcome, p.rep.Sent, p.rep.Result.ErrorMessage)
	}
	if !strings.Contains(p.out, `"code":"internal_server_error","status":500`) || p.atSettle != "" {
		t.Errorf("output %q, at settle %q", p.out, p.atSettle)
	}
}

// The first interruption wins: a stop after a shutdown (or a hang-up after
// a stop) does not change why the replay ended.
func TestInterrupterFirstCauseWins(t *testing.T) {
	in := NewInterrupter()
	select {
	case <-in.Done():
		t.Fatal("a new interrupter has fired")
	default:
	}
	if !in.Interrupt(ShuttingDown) || in.Interrupt(Stopped) || in.Interrupt(Disconnected) {
		t.Fatal("only the first Interrupt is the first")
	}
	<-in.Done()
	if in.Cause() != ShuttingDown {
		t.Fatalf("cause %v", in.Cause())
	}
	p := playTurn(t, fullTurn(t), context.Background(), &scriptedSink{}, Options{}, in)
	if p.rep.Outcome != ShuttingDown {
		t.Fatalf("outcome %v", p.rep.Outcome)
	}
}

func TestPlayClientGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &scriptedSink{onWrite: func(n int) {
		if n == 1 {
			cancel()
		}
	}}
	p := playTurn(t, fullTurn(t), ctx, s, Options{}, nil)
	if p.rep.Outcome != Disconnected || p.rep.Sent != 1 || p.rep.Result.Answer != "Hel" || p.out != p.atSettle {
		t.Fatalf("outcome %v sent %d answer %q; written after settle: %q", p.rep.Outcome, p.rep.Sent, p.rep.Result.Answer, p.out[len(p.atSettle):])
	}
}

func TestPlayWriteFails(t *testing.T) {
	p := playTurn(t, fullTurn(t), context.Background(), &scriptedSink{failAt: 3}, Options{}, nil)
	if p.rep.Outcome != Disconnected || p.rep.Sent != 2 || p.rep.Result.Answer != "Hello" {
		t.Fatalf("outcome %v sent %d answer %q", p.rep.Outcome, p.rep.Sent, p.rep.Result.Answer)
	}
	if len(p.observed) != 2 {
		t.Errorf("a failed write was observed: %+v", p.observed)
	}
}

func TestPlayFlushFails(t *testing.T) {
	// At speed 1 the player flushes before it waits for frame 1; a failed
	// flush is a client that went away.
	p := playTurn(t, fullTurn(t), context.Background(), &scriptedSink{flushErr: errors.New("broken pipe")}, Options{Speed: 1}, nil)
	if p.rep.Outcome != Disconnected || p.rep.Sent != 1 {
		t.Fatalf("outcome %v sent %d", p.rep.Outcome, p.rep.Sent)
	}
}

func TestPlayInterruptedAfterTheEnd(t *testing.T) {
	// A stop after message_end (while tts frames remain) changes nothing:
	// the turn was settled as completed and nothing more is written.
	stop := NewInterrupter()
	s := &scriptedSink{onWrite: func(n int) {
		if n == 4 {
			stop.Interrupt(Stopped)
		}
	}}
	p := playTurn(t, fullTurn(t), context.Background(), s, Options{}, stop)
	if p.rep.Outcome != Completed || p.settledWith != Completed || p.rep.Sent != 4 || strings.Contains(p.out, "tts_message_end") {
		t.Fatalf("outcome %v sent %d:\n%s", p.rep.Outcome, p.rep.Sent, p.out)
	}
}

// TestPlayObserverKeepsTheSchedule: at speed 1 no frame is written before
// its planned time (a lower bound only: a busy machine may send late).
func TestPlayObserverKeepsTheSchedule(t *testing.T) {
	tr := fullTurn(t)
	start := time.Now()
	p := playTurn(t, tr, context.Background(), &scriptedSink{}, Options{Speed: 1}, nil)
	if p.rep.Outcome != Completed || len(p.observed) != len(tr.Frames) {
		t.Fatalf("outcome %v, %d observed", p.rep.Outcome, len(p.observed))
	}
	for _, f := range p.observed {
		if early := start.Add(f.Offset).Sub(f.At); early > time.Millisecond {
			t.Errorf("frame %d written %s before its time", f.Index, early)
		}
	}
}

// With CallerEndsBody the frames after the last wait are written and left
// unflushed for the caller; without it Play's last act is a flush.
func TestPlayLeavesTheLastFlushToTheCaller(t *testing.T) {
	tr := fullTurn(t)
	for _, callerEnds := range []bool{false, true} {
		s := &opSink{}
		rep := bind(tr).Play(context.Background(), s, Options{Speed: 1, CallerEndsBody: callerEnds}, nil, func(*Report) {})
		if rep.Outcome != Completed || !strings.Contains(s.String(), `"tts_message_end"`) {
			t.Fatalf("CallerEndsBody=%v: outcome %v, output:\n%s", callerEnds, rep.Outcome, s.String())
		}
		last := s.ops[len(s.ops)-1]
		if callerEnds && last != 'w' || !callerEnds && last != 'f' {
			t.Errorf("CallerEndsBody=%v: writes and flushes %q: want the last frames %s", callerEnds, s.ops, map[bool]string{true: "left unflushed", false: "flushed"}[callerEnds])
		}
	}
}

// opSink records its writes ('w') and flushes ('f') in order.
type opSink struct {
	strings.Builder
	ops []byte
}

func (s *opSink) Write(p []byte) (int, error) {
	s.ops = append(s.ops, 'w')
	return s.Builder.Write(p)
}

func (s *opSink) Flush() error {
	s.ops = append(s.ops, 'f')
	return nil
}

// A precise wait (Options.Precise) sleeps most of the way and yields the
// CPU for the rest, and still never writes a frame before its time: the
// spin ends at the due time, not at the timer's.
func TestPlayPreciseNeverWritesEarly(t *testing.T) {
	tr := fullTurn(t)
	asked := 0
	start := time.Now()
	p := playTurn(t, tr, context.Background(), &scriptedSink{}, Options{Speed: 1, Precise: func() bool { asked++; return true }}, nil)
	if p.rep.Outcome != Completed || len(p.observed) != len(tr.Frames) {
		t.Fatalf("outcome %v, %d observed", p.rep.Outcome, len(p.observed))
	}
	for _, f := range p.observed {
		if due := start.Add(f.Offset); f.At.Before(due) {
			t.Errorf("frame %d written %s before its time", f.Index, due.Sub(f.At))
		}
	}
	// Asked before each wait: at most once per frame after the first
	// (offset 0), and not at all for a frame already due when its wait
	// began (a slow moment of a shared machine).
	if asked == 0 || asked > len(tr.Frames)-1 {
		t.Errorf("Precise asked %d times, want 1 to %d", asked, len(tr.Frames)-1)
	}
}

// A stop that comes while a precise wait sleeps ends the replay then, as
// it does an ordinary wait.
func TestPlayPreciseWaitIsInterrupted(t *testing.T) {
	stop := NewInterrupter()
	s := &scriptedSink{onWrite: func(n int) {
		if n == 1 {
			stop.Interrupt(Stopped)
		}
	}}
	start := time.Now()
	// At speed 0.001 the frames are 10 s apart: only the stop ends the wait.
	p := playTurn(t, fullTurn(t), context.Background(), s, Options{Speed: 0.001, Precise: func() bool { return true }}, stop)
	if p.rep.Outcome != Stopped || p.rep.Sent != 1 {
		t.Fatalf("outcome %v, sent %d", p.rep.Outcome, p.rep.Sent)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the stop took %s to end the wait", took)
	}
}

// A precise wait shorter than its spin (frames 1 ms apart at speed 10)
// still sees a stop that already came, as a sleeping one does.
func TestPlayPreciseShortWaitSeesAStop(t *testing.T) {
	stop := NewInterrupter()
	s := &scriptedSink{onWrite: func(n int) {
		if n == 1 {
			stop.Interrupt(Stopped)
		}
	}}
	p := playTurn(t, fullTurn(t), context.Background(), s, Options{Speed: 10, Precise: func() bool { return true }}, stop)
	if p.rep.Outcome != Stopped || p.rep.Sent != 1 {
		t.Fatalf("outcome %v, sent %d", p.rep.Outcome, p.rep.Sent)
	}
}
