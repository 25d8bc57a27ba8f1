package replay

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// identity binds every slot to its recorded value.
func identity(t *CompiledTurn) *Bound {
	b := &Bound{Turn: t, vals: make([][]byte, len(t.Slots))}
	for i, s := range t.Slots {
		b.vals[i] = []byte(s.Recorded)
	}
	return b
}

func builtin(t testing.TB) *cassette.Set {
	t.Helper()
	set, err := cassette.LoadFS(cassettes.FS(), "built-in")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// compiledBuiltins is the built-in set and each of its cassettes compiled,
// by name.
func compiledBuiltins(t testing.TB) (set *cassette.Set, scripts map[string]*Script) {
	t.Helper()
	set = builtin(t)
	scripts = map[string]*Script{}
	for _, name := range set.Names {
		c, _ := set.Get(name)
		sc, err := Compile(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		scripts[name] = sc
	}
	return set, scripts
}

// eachStreamedTurn calls f with every streamed (status 200) turn of the
// built-in cassettes: the cassette, the turn's index and its compiled form.
func eachStreamedTurn(t *testing.T, f func(name string, c *cassette.Cassette, ti int, tr *CompiledTurn)) {
	t.Helper()
	set, scripts := compiledBuiltins(t)
	for _, name := range set.Names {
		c, _ := set.Get(name)
		for ti, tr := range scripts[name].Turns {
			if tr.Status == 200 {
				f(name, c, ti, tr)
			}
		}
	}
}

// TestBuiltinCassettesRoundTrip: every built-in turn compiles, and rendering
// with the recorded values reproduces the recorded bytes exactly, so the
// only differences a replay makes are the substituted values.
func TestBuiltinCassettesRoundTrip(t *testing.T) {
	eachStreamedTurn(t, func(name string, c *cassette.Cassette, ti int, tr *CompiledTurn) {
		if len(tr.Slots) == 0 {
			t.Errorf("%s turn %d: no ids found to rewrite", name, ti)
		}
		b := identity(tr)
		for i := range tr.Frames {
			if got := b.Render(nil, i); !bytes.Equal(got, c.Turns[ti].Frames[i].Raw) {
				t.Errorf("%s turn %d frame %d:\n got %q\nwant %q", name, ti, i, got, c.Turns[ti].Frames[i].Raw)
			}
		}
		if tr.terminal < 0 {
			t.Errorf("%s turn %d: no message_end or error frame", name, ti)
		}
	})
}

type sink struct {
	bytes.Buffer
	flushes int
}

func (s *sink) Flush() error { s.flushes++; return nil }

// TestBindRewritesEverything: a bound replay carries none of the recorded
// per-turn ids and all of the binding's.
func TestBindRewritesEverything(t *testing.T) {
	set, scripts := compiledBuiltins(t)
	for _, name := range set.Names {
		tr := scripts[name].Turns[0]
		if tr.Status != 200 {
			continue
		}
		now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		b := tr.Bind(Binding{ConversationID: NewUUID(), MessageID: NewUUID(), TaskID: NewUUID(), Now: now})
		var out sink
		var settled *Report
		rep := b.Play(context.Background(), &out, Options{}, nil, func(r *Report) { settled = r })
		if settled != rep || rep.Sent != len(tr.Frames) {
			t.Errorf("%s: settle %p report %p sent %d/%d", name, settled, rep, rep.Sent, len(tr.Frames))
		}
		text := out.String()
		for _, s := range tr.Slots {
			if s.Kind != slotCreatedAt && strings.Contains(text, s.Recorded) {
				t.Errorf("%s: recorded id %s survived the replay", name, s.Recorded)
			}
		}
		for _, id := range []string{b.Binding.ConversationID, b.Binding.MessageID} {
			if !strings.Contains(text, id) {
				t.Errorf("%s: bound id %s missing", name, id)
			}
		}
		if strings.Contains(text, `"event":"message_end"`) && rep.Outcome != Completed {
			t.Errorf("%s: outcome %v", name, rep.Outcome)
		}
		if rep.Outcome == Completed && rep.Result.Usage == nil {
			t.Errorf("%s: no usage in a completed turn", name)
		}
		if out.flushes != 1 {
			t.Errorf("%s: speed 0 should flush once, flushed %d times", name, out.flushes)
		}
	}
}

func TestFoldAccumulation(t *testing.T) {
	raw := func(s string) cassette.RecordedFrame {
		return cassette.RecordedFrame{Raw: []byte("data: " + s + "\n\n")}
	}
	c := &cassette.Cassette{Name: "x", Meta: cassette.Meta{Mode: "agent"}, Turns: []*cassette.RecordedTurn{{Status: 200, Frames: []cassette.RecordedFrame{
		raw(`{"event":"agent_thought","conversation_id":"conv-0001","message_id":"msg-00001","task_id":"task-0001","id":"thought-01","position":1,"thought":"a","tool":"","tool_input":"","observation":"","tool_labels":{},"message_files":[]}`),
		raw(`{"event":"agent_message","conversation_id":"conv-0001","message_id":"msg-00001","task_id":"task-0001","id":"msg-00001","answer":"Hel"}`),
		raw(`{"event":"agent_message","conversation_id":"conv-0001","message_id":"msg-00001","task_id":"task-0001","id":"msg-00001","answer":"lo"}`),
		raw(`{"event":"agent_thought","conversation_id":"conv-0001","message_id":"msg-00001","task_id":"task-0001","id":"thought-01","position":1,"thought":"b","tool":null,"tool_input":null,"observation":null,"tool_labels":null,"message_files":null}`),
		raw(`{"event":"message_replace","conversation_id":"conv-0001","message_id":"msg-00001","task_id":"task-0001","answer":"Moderated","reason":"x"}`),
		raw(`{"event":"agent_message","conversation_id":"conv-0001","message_id":"msg-00001","task_id":"task-0001","id":"msg-00001","answer":"!"}`),
		raw(`{"event":"message","conversation_id":"conv-0001","message_id":"msg-00001","task_id":"task-0001","id":"msg-00001","answer":"Final"}`),
		raw(`{"event":"message_end","conversation_id":"conv-0001","message_id":"msg-00001","task_id":"task-0001","id":"msg-00001","metadata":{"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"total_price":"0.1","currency":"USD","latency":0.5}}}`),
	}}}}
	sc, err := Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	b := sc.Turns[0].Bind(Binding{ConversationID: "C", MessageID: "M", TaskID: "T", Now: time.Unix(100, 0)})
	for n, want := range map[int]string{0: "", 3: "Hello", 5: "Moderated", 6: "Moderated!", 7: "Final"} {
		if got := b.Fold(n).Answer; got != want {
			t.Errorf("Fold(%d) answer %q, want %q", n, got, want)
		}
	}
	r := b.Fold(8)
	if len(r.Thoughts) != 1 || r.Thoughts[0].Thought != "b" || r.Thoughts[0].Tool != "" || r.Thoughts[0].MessageID != "M" ||
		r.Thoughts[0].ID == "thought-01" || r.Thoughts[0].Files == nil || !r.Ended || r.Usage.TotalTokens != 3 {
		t.Errorf("fold: %+v", r)
	}
}

func TestRunLimitCuts(t *testing.T) {
	set := builtin(t)
	c, ok := set.Get("tool-use")
	if !ok {
		t.Skip("built-in tool-use cassette not present")
	}
	sc, _ := Compile(c)
	tr := sc.Turns[0]
	if len(tr.modelRequestFrames) < 2 {
		t.Skip("tool-use has a single model request")
	}
	b := tr.Bind(Binding{ConversationID: NewUUID(), MessageID: NewUUID(), TaskID: NewUUID(), Now: time.Now()})
	var out sink
	rep := b.Play(context.Background(), &out, Options{MaxModelRequests: 1}, nil, func(*Report) {})
	if rep.Outcome != LimitExceeded || rep.Sent != tr.modelRequestFrames[1] || !strings.Contains(out.String(), `"code":"agent_run_limit_exceeded"`) {
		t.Fatalf("outcome %v sent %d (cut at %d): %s", rep.Outcome, rep.Sent, tr.modelRequestFrames[1], out.String())
	}
	if strings.Contains(out.String(), dify.EventMessageEnd) {
		t.Error("message_end after the cut")
	}
}

// FuzzCompileFrame: any frame bytes compile without panicking, and an
// identity render gives the bytes back.
func FuzzCompileFrame(f *testing.F) {
	f.Add([]byte("data: {\"event\":\"agent_message\",\"conversation_id\":\"c0000000-0000\",\"created_at\":17,\"answer\":\"x\"}\n\n"))
	f.Add([]byte("event: ping\n\n"))
	f.Add([]byte("data: {\"event\":\"error\",\"message\":\"x (agent_run_id=12345678-aaaa)\",\"created_at\": 1}\r\n\r\n"))
	f.Add([]byte("data: not json\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		c := &cassette.Cassette{Name: "f", Turns: []*cassette.RecordedTurn{{Status: 200, Frames: []cassette.RecordedFrame{{Raw: data}}}}}
		sc, err := Compile(c)
		if err != nil {
			return
		}
		tr := sc.Turns[0]
		if got := identity(tr).Render(nil, 0); !bytes.Equal(got, data) {
			t.Fatalf("round trip: %q → %q", data, got)
		}
		b := tr.Bind(Binding{ConversationID: "C", MessageID: "M", TaskID: "T", Now: time.Unix(1, 0)})
		_ = b.Fold(1)
		_ = b.Play(context.Background(), &sink{}, Options{MaxModelRequests: 1, RunTimeout: time.Millisecond}, nil, func(*Report) {})
	})
}

// BenchmarkReplay measures one whole replay of the built-in tool-use turn at
// speed 0 (binding, rendering every frame, folding the result).
func BenchmarkReplay(b *testing.B) {
	set := builtin(b)
	c, ok := set.Get("tool-use")
	if !ok {
		b.Skip("no tool-use cassette")
	}
	sc, _ := Compile(c)
	tr := sc.Turns[0]
	w := discardSink{}
	b.ReportAllocs()
	for b.Loop() {
		bd := tr.Bind(Binding{ConversationID: "c", MessageID: "m", TaskID: "t", Now: time.Unix(1, 0)})
		bd.Play(context.Background(), w, Options{}, nil, func(*Report) {})
	}
}

// BenchmarkRenderFrame is the per-frame hot path: it must not allocate.
func BenchmarkRenderFrame(b *testing.B) {
	set := builtin(b)
	c, _ := set.Get(set.Default)
	sc, _ := Compile(c)
	bd := sc.Turns[0].Bind(Binding{ConversationID: NewUUID(), MessageID: NewUUID(), TaskID: NewUUID(), Now: time.Now()})
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		buf = bd.Render(buf[:0], i%len(sc.Turns[0].Frames))
		i++
	}
	if testing.AllocsPerRun(100, func() { buf = bd.Render(buf[:0], 0) }) != 0 {
		b.Fatal("Render allocates")
	}
}

type discardSink struct{}

func (discardSink) Write(p []byte) (int, error) { return io.Discard.Write(p) }
func (discardSink) Flush() error                { return nil }

// The fold up to a turn's end is made once, when the turn is compiled: a
// replay's Fold from it is what folding the frames afresh gives, with the
// replay's own ids, and what one replay does to its Result does not reach
// another's.
func TestFoldAtTheEndIsTheFreshFold(t *testing.T) {
	set, scripts := compiledBuiltins(t)
	for _, name := range set.Names {
		for ti, tr := range scripts[name].Turns {
			if tr.Status != 200 || tr.terminal < 0 {
				continue
			}
			if tr.final == nil {
				t.Fatalf("%s turn %d: no fold made at compile time", name, ti)
			}
			bind := func() *Bound {
				return tr.Bind(Binding{ConversationID: NewUUID(), MessageID: NewUUID(), TaskID: NewUUID(), Now: time.Unix(1764547200, 0)})
			}
			a, b := bind(), bind()
			got, fresh := a.Fold(tr.terminal+1), a.bind(tr.fold(tr.terminal+1))
			if !reflect.DeepEqual(got, fresh) {
				t.Errorf("%s turn %d: Fold at the end\n got %+v\nwant %+v", name, ti, got, fresh)
			}
			other := b.Fold(tr.terminal + 1)
			if len(got.Thoughts) > 0 && got.Thoughts[0].MessageID == other.Thoughts[0].MessageID {
				t.Errorf("%s turn %d: two replays' thoughts carry the same message id %s", name, ti, got.Thoughts[0].MessageID)
			}
			for i := range got.Thoughts {
				got.Thoughts[i].Thought = "changed"
				for j := range got.Thoughts[i].Files {
					got.Thoughts[i].Files[j] = "changed"
				}
			}
			for i := range got.Files {
				got.Files[i].ID = "changed"
			}
			again := b.Fold(tr.terminal + 1)
			if !reflect.DeepEqual(again, other) {
				t.Errorf("%s turn %d: one replay's changes to its Result reached another's", name, ti)
			}
		}
	}
}

// A live turn compiled frame by frame folds to what compiling the whole
// turn gives, at every length (a stream cut anywhere is stored as far as
// it went), with the same ids kept.
func TestLiveTurnFoldsAsACompiledTurn(t *testing.T) {
	eachStreamedTurn(t, func(name string, c *cassette.Cassette, ti int, tr *CompiledTurn) {
		frames := c.Turns[ti].Frames
		for _, n := range []int{1, len(frames) / 2, len(frames)} {
			live := NewLiveTurn(c.Meta.Mode, tr.Query)
			for _, f := range frames[:n] {
				live.Add(f)
			}
			if live.Len() != n {
				t.Fatalf("%s turn %d: Len = %d after %d frames", name, ti, live.Len(), n)
			}
			b := Binding{ConversationID: NewUUID(), MessageID: NewUUID(), TaskID: NewUUID(), Now: time.Unix(1764547200, 0), Keep: true}
			got := live.Bind(b).Fold(n)
			want := tr.Bind(b).Fold(n)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s turn %d, %d frames: live fold\n got %+v\nwant %+v", name, ti, n, got, want)
			}
		}
	})
}

// BenchmarkLiveTurnAdd is a live turn's compile cost per frame (hybrid
// mode pays it for every frame it relays): tool-use's frames, one op each.
func BenchmarkLiveTurnAdd(b *testing.B) {
	c, _ := builtin(b).Get("tool-use")
	frames := c.Turns[0].Frames
	b.ReportAllocs()
	var live *LiveTurn
	for i := 0; b.Loop(); i++ {
		if i%len(frames) == 0 {
			live = NewLiveTurn(c.Meta.Mode, "q")
		}
		live.Add(frames[i%len(frames)])
	}
}
