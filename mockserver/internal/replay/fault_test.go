package replay

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
)

func toolUse(t *testing.T) *CompiledTurn {
	t.Helper()
	c, ok := builtin(t).Get("tool-use")
	if !ok {
		t.Skip("built-in tool-use cassette not present")
	}
	sc, err := Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	return sc.Turns[0]
}

func bind(tr *CompiledTurn) *Bound {
	return tr.Bind(Binding{ConversationID: NewUUID(), MessageID: NewUUID(), TaskID: NewUUID(), Now: time.Now()})
}

// TestStreamFaults plays every stream fault at speed 0 and checks where the
// stream ends, what it ends with, and that the turn is settled once.
func TestStreamFaults(t *testing.T) {
	tr := toolUse(t)
	n := len(tr.Frames)
	cases := []struct {
		f         fault.Stream
		outcome   Outcome
		sent      int
		reset     bool
		tail      string // the output ends with this
		errorCode string // stored
		ended     bool   // message_end folded
	}{
		{fault.Stream{Kind: fault.ErrorAfter, After: 2}, Faulted, 2, false, `"message":"Internal Server Error, please contact support."}` + "\n\n", "internal_server_error", false},
		{fault.Stream{Kind: fault.CloseAfter, After: 3}, Faulted, 3, false, "", "", false},
		{fault.Stream{Kind: fault.ResetAfter, After: 0}, Faulted, 0, true, "", "", false},
		{fault.Stream{Kind: fault.Truncate, After: math.MaxInt}, Faulted, tr.terminal, false, "", "", false},
		{fault.Stream{Kind: fault.StallAfter, After: 1, For: time.Millisecond}, Completed, n, false, "", "", true},
		{fault.Stream{Kind: fault.StallAfter, After: 1, For: time.Millisecond, Then: fault.ThenReset}, Faulted, 1, true, "", "", false},
		{fault.Stream{Kind: fault.MalformedAfter, After: 1}, Completed, n, false, "", "", true},
		{fault.Stream{Kind: fault.MalformedAfter, After: 1, Then: fault.ThenClose}, Faulted, 1, false, `"answer":"` + "\n\n", "", false},
	}
	for _, c := range cases {
		b := bind(tr)
		var out sink
		settles := 0
		f := c.f
		rep := b.Play(context.Background(), &out, Options{Fault: &f}, nil, func(*Report) { settles++ })
		name := f.String()
		if settles != 1 || rep.Outcome != c.outcome || rep.Sent != c.sent || rep.Reset != c.reset || rep.Result.ErrorCode != c.errorCode || rep.Result.Ended != c.ended {
			t.Errorf("%s: settles %d outcome %v sent %d reset %v error %q ended %v", name, settles, rep.Outcome, rep.Sent, rep.Reset, rep.Result.ErrorCode, rep.Result.Ended)
		}
		if !strings.HasSuffix(out.String(), c.tail) {
			t.Errorf("%s: output ends %q", name, out.String()[max(0, out.Len()-80):])
		}
		var want strings.Builder
		for i := 0; i < min(c.sent, n); i++ {
			want.Write(b.Render(nil, i))
		}
		if f.Kind != fault.MalformedAfter && !strings.HasPrefix(out.String(), want.String()) {
			t.Errorf("%s: the first %d frames are not the recorded ones", name, c.sent)
		}
		if broken := strings.Count(out.String(), `"answer":"`+"\n\n"); (f.Kind == fault.MalformedAfter) != (broken == 1) {
			t.Errorf("%s: %d broken frames", name, broken)
		}
	}
}

// TestFaultReplacesRunLimit: a fault counted past a run-limit cut fires at
// the cut instead of the agent_run_limit_exceeded error.
func TestFaultReplacesRunLimit(t *testing.T) {
	tr := toolUse(t)
	if len(tr.modelRequestFrames) < 2 {
		t.Skip("tool-use has a single model request")
	}
	var out sink
	rep := bind(tr).Play(context.Background(), &out, Options{MaxModelRequests: 1, Fault: &fault.Stream{Kind: fault.ErrorAfter, After: 999, Code: "completion_request_error"}}, nil, func(*Report) {})
	if rep.Outcome != Faulted || rep.Sent != tr.modelRequestFrames[1] || strings.Contains(out.String(), RunLimitCode) ||
		!strings.Contains(out.String(), `"code":"completion_request_error","status":400`) {
		t.Errorf("outcome %v sent %d: %s", rep.Outcome, rep.Sent, out.String())
	}
	if strings.Contains(out.String(), dify.EventMessageEnd) {
		t.Error("message_end after the fault")
	}
}

// TestStallKeepsTheSchedule: at speed 1, frames after a stall keep their
// recorded spacing, shifted by the stall.
func TestStallKeepsTheSchedule(t *testing.T) {
	tr := toolUse(t)
	// Pick the first frame with a recorded offset of at least 100ms, so the
	// test measures the schedule and not just the stall.
	k := -1
	for i, f := range tr.Frames {
		if i > 0 && f.Offset-tr.Frames[i-1].Offset >= 50*time.Millisecond && f.Offset <= 3*time.Second {
			k = i
			break
		}
	}
	if k < 0 {
		t.Skip("no suitable frame")
	}
	const stall = 150 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The sink ends the replay once frame k is in.
	ts := &timedSink{start: time.Now(), stopAt: k + 1, stop: cancel}
	bind(tr).Play(ctx, ts, Options{Speed: 1, Fault: &fault.Stream{Kind: fault.StallAfter, After: k, For: stall}}, nil, func(*Report) {})
	// The sink sees writes; frame k is written at offset_k + stall.
	want := tr.Frames[k].Offset + stall
	if d := ts.at[k] - want; d < -5*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("frame %d written at %v, want %v", k, ts.at[k], want)
	}
	if d := ts.at[k-1] - tr.Frames[k-1].Offset; d < -5*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("frame %d before the stall written at %v, want %v", k-1, ts.at[k-1], tr.Frames[k-1].Offset)
	}
}

type timedSink struct {
	start  time.Time
	at     []time.Duration
	stopAt int
	stop   func()
}

func (s *timedSink) Write(p []byte) (int, error) {
	s.at = append(s.at, time.Since(s.start))
	if len(s.at) == s.stopAt {
		s.stop()
	}
	return len(p), nil
}
func (s *timedSink) Flush() error { return nil }

// FuzzStreamFault: any recorded stream with any stream fault plays without
// panicking and settles exactly once.
func FuzzStreamFault(f *testing.F) {
	f.Add([]byte("data: {\"event\":\"agent_message\",\"conversation_id\":\"c0000000-0000\",\"answer\":\"x\"}\n\nevent: ping\n\ndata: {\"event\":\"message_end\",\"message_id\":\"m0000000-1\"}\n\n"), uint8(0), uint16(1))
	f.Add([]byte("data: {\"event\":\"error\",\"code\":\"x\",\"status\":400,\"message\":\"m\"}\n\n"), uint8(3), uint16(9))
	f.Add([]byte(""), uint8(5), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, kind uint8, after uint16) {
		var frames []cassette.RecordedFrame
		for i, raw := range bytes.SplitAfter(data, []byte("\n\n")) {
			if len(raw) > 0 && i < 50 {
				frames = append(frames, cassette.RecordedFrame{Offset: time.Duration(i) * time.Microsecond, Raw: raw})
			}
		}
		c := &cassette.Cassette{Name: "f", Turns: []*cassette.RecordedTurn{{Status: 200, Frames: frames}}}
		sc, err := Compile(c)
		if err != nil {
			return
		}
		kinds := []fault.StreamKind{fault.ErrorAfter, fault.CloseAfter, fault.ResetAfter, fault.StallAfter, fault.Truncate, fault.MalformedAfter}
		st := &fault.Stream{Kind: kinds[int(kind)%len(kinds)], After: int(after), For: time.Microsecond, Then: fault.Then(int(kind/8) % 3)}
		settles := 0
		rep := bind(sc.Turns[0]).Play(context.Background(), &sink{}, Options{Speed: 1, Fault: st}, nil, func(*Report) { settles++ })
		if settles != 1 || rep.Sent > len(frames) {
			t.Fatalf("settled %d times, sent %d of %d", settles, rep.Sent, len(frames))
		}
	})
}
