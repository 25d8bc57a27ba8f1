package dify

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func collectString(t *testing.T, in string) (*ChatReply, error) {
	t.Helper()
	return Collect(NewChatStream(strings.NewReader(in)))
}

type thoughtSummary struct {
	ID                           string
	Position                     int
	Thought, Tool, Input, Output string
	Files                        []string
}

func summarize(ts []AgentThoughtEvent) []thoughtSummary {
	s := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	var out []thoughtSummary
	for _, t := range ts {
		out = append(out, thoughtSummary{t.ID, t.Position, s(t.Thought), s(t.Tool), s(t.ToolInput), s(t.Observation), t.MessageFiles})
	}
	return out
}

// Legacy agent-chat sequence (docs/api §2.6, §19): deltas make the answer, the
// thought rows are replaced by id, usage comes from message_end.
func TestCollectLegacyAgentChat(t *testing.T) {
	turn, err := collectString(t, string(readTestdata(t, "legacy-agent-chat.sse")))
	if err != nil {
		t.Fatal(err)
	}
	if turn.Answer != "Let me search. It is sunny in Paris, 21°C." {
		t.Errorf("answer = %q", turn.Answer)
	}
	if turn.ConversationID != "a5233957-0d4c-4a3e-9c1b-6a1f2e8d9c01" || turn.MessageID != "47d025d4-5b1e-4f7a-8c2d-3e4f5a6b7c8d" ||
		turn.TaskID != "1ae6620c-2b3d-4e5f-8a9b-0c1d2e3f4a5b" || turn.CreatedAt != 1719915570 || !turn.Completed {
		t.Errorf("ids = %+v", turn)
	}
	want := []thoughtSummary{
		{"d01ba9c8-1111-4a2b-9c3d-4e5f6a7b8c9d", 1, "Let me search. ", "search", `{"search": {"q": "weather in Paris"}}`,
			`{"search": "Sunny, 21°C"}`, []string{"5e1f9a2b-2222-4c3d-8e4f-5a6b7c8d9e0f"}},
		{"e12cb0d9-3333-4d4e-9f5a-6b7c8d9e0f1a", 2, "It is sunny in Paris, 21°C.", "", "", "", []string{}},
	}
	if got := summarize(turn.Thoughts); !reflect.DeepEqual(got, want) {
		t.Errorf("thoughts =\n%+v\nwant\n%+v", got, want)
	}
	if turn.Thoughts[0].ToolLabels["search"].(map[string]any)["zh_Hans"] != "搜索" {
		t.Errorf("tool labels = %v", turn.Thoughts[0].ToolLabels)
	}
	if len(turn.Files) != 1 || turn.Files[0].Type != "image" || !strings.HasPrefix(turn.Files[0].URL, "/files/tools/") {
		t.Errorf("files = %+v", turn.Files)
	}
	u := turn.Usage
	if u == nil || u.TotalTokens != 447 || u.TotalPrice != "0.0004820" || u.Currency != "USD" || u.Latency != 2.734 || u.TimeToFirstToken != nil {
		t.Errorf("usage = %+v", u)
	}
	if turn.Metadata.RetrieverResources == nil || len(turn.Metadata.RetrieverResources) != 0 {
		t.Errorf("retriever_resources = %#v", turn.Metadata.RetrieverResources)
	}
}

// New Agent sequence (docs/api §2.6): the closing message is the answer and is
// not appended to the deltas; empty answer-text rows are kept.
func TestCollectNewAgent(t *testing.T) {
	turn, err := collectString(t, string(readTestdata(t, "new-agent.sse")))
	if err != nil {
		t.Fatal(err)
	}
	if turn.Answer != "It is sunny in Paris at 21°C." {
		t.Errorf("answer = %q (closing message appended to the deltas?)", turn.Answer)
	}
	want := []thoughtSummary{
		{"11111111-aaaa-4bbb-8ccc-000000000001", 1, "The user wants the weather; I will run a command.", "<nil>", "<nil>", "<nil>", []string{}},
		{"11111111-aaaa-4bbb-8ccc-000000000002", 2, "<nil>", "shell_run", `{"command":"curl -s wttr.in/Paris?format=3"}`, "Paris: ☀️ +21°C", []string{}},
		{"11111111-aaaa-4bbb-8ccc-000000000003", 3, "<nil>", "<nil>", "<nil>", "<nil>", []string{}},
	}
	if got := summarize(turn.Thoughts); !reflect.DeepEqual(got, want) {
		t.Errorf("thoughts =\n%+v\nwant\n%+v", got, want)
	}
	if turn.Usage == nil || *turn.Usage.TimeToFirstToken != 0.812 || turn.Usage.PromptTokens != 1320 || turn.Metadata.RetrieverResources != nil {
		t.Errorf("usage/metadata = %+v %+v", turn.Usage, turn.Metadata)
	}
	if len(turn.Files) != 1 || turn.Files[0].Type != "document" || turn.TaskID != "9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d" {
		t.Errorf("files/task = %+v %q", turn.Files, turn.TaskID)
	}
}

func ev(t *testing.T, lines ...string) []Event {
	t.Helper()
	var out []Event
	for _, l := range lines {
		e, err := DecodeEvent(SSEFrame{Data: []byte(l)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func fold(t *testing.T, events []Event) ChatReply {
	t.Helper()
	var a Accumulator
	for _, e := range events {
		if err := a.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	return a.Reply()
}

func TestAccumulatorAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string
		want   string
	}{
		{"deltas", []string{`{"event":"agent_message","answer":"a"}`, `{"event":"agent_message","answer":"b"}`}, "ab"},
		{"closing message wins over deltas", []string{
			`{"event":"agent_message","answer":"draft "}`, `{"event":"agent_message","answer":"text"}`,
			`{"event":"message","answer":"Final text."}`}, "Final text."},
		{"replace resets, later deltas append", []string{
			`{"event":"agent_message","answer":"bad words"}`, `{"event":"message_replace","answer":"[filtered]","reason":"output_moderation"}`,
			`{"event":"agent_message","answer":" more"}`}, "[filtered] more"},
		{"replace after the closing message wins", []string{
			`{"event":"agent_message","answer":"x"}`, `{"event":"message","answer":"x"}`,
			`{"event":"message_replace","answer":"[filtered]"}`}, "[filtered]"},
		{"closing message after a replace wins", []string{
			`{"event":"agent_message","answer":"x"}`, `{"event":"message_replace","answer":"[filtered]"}`,
			`{"event":"message","answer":"server final"}`}, "server final"},
		{"message-only stream (no agent deltas) concatenates", []string{
			`{"event":"message","answer":"Hel"}`, `{"event":"message","answer":"lo"}`}, "Hello"},
		{"single closing message without deltas", []string{`{"event":"message","answer":"All at once."}`}, "All at once."},
		{"pings, tts and unknown events are ignored", []string{
			`{"event":"agent_message","answer":"a"}`, `{"event":"ping"}`, `{"event":"tts_message","audio":"QQ=="}`,
			`{"event":"node_started","data":{}}`}, "a"},
		{"nothing", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fold(t, ev(t, tc.events...)).Answer; got != tc.want {
				t.Errorf("answer = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAccumulatorThoughtOrder(t *testing.T) {
	turn := fold(t, ev(t,
		`{"event":"agent_thought","id":"c","position":3,"thought":"c1"}`,
		`{"event":"agent_thought","id":"a","position":1,"thought":"a1"}`,
		`{"event":"agent_thought","id":"x","position":2,"thought":"x1"}`,
		`{"event":"agent_thought","id":"y","position":2,"thought":"y1"}`,
		`{"event":"agent_thought","id":"c","position":3,"thought":"c2"}`,
		`{"event":"agent_thought","id":"x","position":2,"thought":"x2"}`, // replaced in place: stays before y
		`{"event":"agent_thought","position":9,"thought":"noid-1"}`,
		`{"event":"agent_thought","position":9,"thought":"noid-2"}`, // no id: keyed by position
	))
	var got []string
	for _, th := range turn.Thoughts {
		got = append(got, th.ID+":"+*th.Thought)
	}
	if want := []string{"a:a1", "x:x2", "y:y1", "c:c2", ":noid-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("thoughts = %v, want %v", got, want)
	}
}

func TestAccumulatorIDsAndFiles(t *testing.T) {
	var a Accumulator
	for _, e := range ev(t,
		`{"event":"agent_thought","conversation_id":"c","message_id":"m","created_at":100,"task_id":"t","id":"th","position":1}`,
		`{"event":"message_file","conversation_id":"c","message_id":"m","created_at":200,"task_id":"t","id":"f1","type":"image","url":"u1"}`,
		`{"event":"message_file","id":"f2","type":"document","url":"u2"}`,
		`{"event":"message_file","id":"f1","type":"image","url":"u1-resigned"}`,
	) {
		if err := a.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	turn := a.Reply()
	if turn.ConversationID != "c" || turn.MessageID != "m" || turn.TaskID != "t" || turn.CreatedAt != 100 || turn.Completed {
		t.Errorf("ids = %+v", turn)
	}
	if len(turn.Files) != 2 || turn.Files[0].URL != "u1-resigned" || turn.Files[1].ID != "f2" {
		t.Errorf("files = %+v", turn.Files)
	}
	// Turn returns copies.
	turn.Thoughts[0].ID = "mutated"
	turn.Files[0].ID = "mutated"
	again := a.Reply()
	if again.Thoughts[0].ID != "th" || again.Files[0].ID != "f1" {
		t.Error("Turn shares slices with the accumulator")
	}
}

func TestAccumulatorErrorEvent(t *testing.T) {
	var a Accumulator
	events := ev(t, `{"event":"agent_message","conversation_id":"c","answer":"partial"}`,
		`{"event":"error","conversation_id":"c","message_id":"m","created_at":1,"code":"agent_run_limit_exceeded","status":400,"message":"Run limit reached (agent_run_id=r1)"}`)
	if err := a.Add(events[0]); err != nil {
		t.Fatal(err)
	}
	err := a.Add(events[1])
	want := &APIError{Status: 400, Code: "agent_run_limit_exceeded", Message: "Run limit reached (agent_run_id=r1)", Stream: true}
	if apiErr, ok := AsAPIError(err); !ok || *apiErr != *want {
		t.Errorf("err = %#v", err)
	}
	if a.Reply().Answer != "partial" || a.Reply().MessageID != "m" {
		t.Errorf("partial turn = %+v", a.Reply())
	}
}

type closeSpy struct {
	io.Reader
	closed bool
}

func (c *closeSpy) Close() error { c.closed = true; return nil }

func TestCollectEndings(t *testing.T) {
	msg := `data: {"event":"agent_message","conversation_id":"c1","task_id":"t1","answer":"par"}` + "\n\n"
	t.Run("truncated returns the partial turn", func(t *testing.T) {
		spy := &closeSpy{Reader: strings.NewReader(msg + msg)}
		turn, err := Collect(NewChatStream(spy))
		if !errors.Is(err, ErrTruncatedStream) || turn == nil || turn.Answer != "parpar" || turn.ConversationID != "c1" || turn.Completed {
			t.Errorf("turn=%+v err=%v", turn, err)
		}
		if !spy.closed {
			t.Error("Collect did not close the stream")
		}
	})
	t.Run("error event", func(t *testing.T) {
		turn, err := collectString(t, msg+`data: {"event":"error","status":500,"code":"internal_server_error","message":"Internal Server Error, please contact support."}`+"\n\n")
		if apiErr, ok := AsAPIError(err); !ok || apiErr.Status != 500 || !apiErr.Stream || turn.Answer != "par" || turn.TaskID != "t1" {
			t.Errorf("turn=%+v err=%v", turn, err)
		}
	})
	t.Run("malformed frame: full turn and the frame error", func(t *testing.T) {
		turn, err := collectString(t, msg+"data: {oops\n\n"+msg+`data: {"event":"message_end","metadata":{"usage":{"total_tokens":3}}}`+"\n\n")
		var fe *FrameError
		if !errors.As(err, &fe) || !turn.Completed || turn.Answer != "parpar" || turn.Usage.TotalTokens != 3 {
			t.Errorf("turn=%+v err=%v", turn, err)
		}
	})
	t.Run("malformed frame then a cut: both errors", func(t *testing.T) {
		turn, err := collectString(t, msg+"data: {oops\n\n"+msg)
		var fe *FrameError
		if !errors.As(err, &fe) || !errors.Is(err, ErrTruncatedStream) || turn.Answer != "parpar" {
			t.Errorf("turn=%+v err=%v", turn, err)
		}
	})
	t.Run("stops at message_end", func(t *testing.T) {
		body := &blockingBody{r: strings.NewReader(msg + `data: {"event":"message_end","metadata":{}}` + "\n\n"), closed: make(chan struct{})}
		turn, err := Collect(NewChatStream(body)) // would block forever if it read past message_end
		if err != nil || !turn.Completed {
			t.Errorf("turn=%+v err=%v", turn, err)
		}
	})
	t.Run("already finished stream", func(t *testing.T) {
		s := NewChatStream(strings.NewReader(`data: {"event":"message_end","metadata":{}}` + "\n\n"))
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
		turn, err := Collect(s)
		if err != nil || turn == nil {
			t.Errorf("turn=%v err=%v", turn, err)
		}
	})
}
