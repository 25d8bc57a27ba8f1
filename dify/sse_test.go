package dify

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// wantFrame is a frame without Raw; nil data means "no data line".
type wantFrame struct {
	event string
	data  *string
}

func d(s string) *string { return &s }

// readFrames reads all frames and returns them with the terminal error.
func readFrames(r io.Reader) ([]SSEFrame, error) {
	fr := NewFrameReader(r)
	var frames []SSEFrame
	for {
		f, err := fr.Next()
		if err != nil {
			if len(f.Raw) > 0 {
				frames = append(frames, f)
			}
			return frames, err
		}
		frames = append(frames, f)
	}
}

func joinRaw(frames []SSEFrame) []byte {
	var b bytes.Buffer
	for _, f := range frames {
		b.Write(f.Raw)
	}
	return b.Bytes()
}

// readers returns ways of delivering input: whole, one byte per read, and
// in odd-sized chunks, so frames and even CRLF pairs are split across reads.
func readers(input string) map[string]io.Reader {
	return map[string]io.Reader{
		"whole":    strings.NewReader(input),
		"one byte": iotest.OneByteReader(strings.NewReader(input)),
		"chunks":   &chunkReader{data: []byte(input), sizes: []int{3, 1, 7, 2, 13}},
		"data+EOF": iotest.DataErrReader(strings.NewReader(input)),
	}
}

type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(p), len(c.data))
	c.i++
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestFrameReader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		want  []wantFrame
		err   error // terminal error
	}{
		{"dify data frames", "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n",
			[]wantFrame{{"", d(`{"a":1}`)}, {"", d(`{"b":2}`)}}, io.EOF},
		{"bare ping", "event: ping\n\ndata: x\n\n",
			[]wantFrame{{"ping", nil}, {"", d("x")}}, io.EOF},
		{"CRLF", "event: ping\r\n\r\ndata: {\"a\":1}\r\n\r\n",
			[]wantFrame{{"ping", nil}, {"", d(`{"a":1}`)}}, io.EOF},
		{"mixed line ends", "data: a\r\n\ndata: b\n\r\n",
			[]wantFrame{{"", d("a")}, {"", d("b")}}, io.EOF},
		{"multi-line data", "data: line1\ndata: line2\ndata:\ndata:  indented\n\n",
			[]wantFrame{{"", d("line1\nline2\n\n indented")}}, io.EOF},
		{"comments", ": keep-alive\ndata: x\n: another\n\n:only a comment\n\n",
			[]wantFrame{{"", d("x")}, {"", nil}}, io.EOF},
		{"event and data", "event: custom\ndata: {\"k\":\"v\"}\nid: 7\nretry: 100\n\n",
			[]wantFrame{{"custom", d(`{"k":"v"}`)}}, io.EOF},
		{"no space after colon, colon in value", "data:{\"url\":\"http://x\"}\n\n",
			[]wantFrame{{"", d(`{"url":"http://x"}`)}}, io.EOF},
		{"field without colon", "data\n\nevent\n\n",
			[]wantFrame{{"", d("")}, {"", nil}}, io.EOF},
		{"unknown field is ignored", "foo: bar\ndata: x\n\n",
			[]wantFrame{{"", d("x")}}, io.EOF},
		{"stray blank lines are empty frames", "\n\ndata: x\n\n\n",
			[]wantFrame{{"", nil}, {"", nil}, {"", d("x")}, {"", nil}}, io.EOF},
		{"BOM at start", "\ufeffdata: x\n\n",
			[]wantFrame{{"", d("x")}}, io.EOF},
		{"lone CR is not a line end", "data: a\rb\n\n",
			[]wantFrame{{"", d("a\rb")}}, io.EOF},
		{"empty input", "", nil, io.EOF},
		{"partial final frame", "data: x\n\ndata: {\"cut\":",
			[]wantFrame{{"", d("x")}, {"", d(`{"cut":`)}}, io.ErrUnexpectedEOF},
		{"final frame missing blank line", "data: x\n",
			[]wantFrame{{"", d("x")}}, io.ErrUnexpectedEOF},
		{"final frame missing one newline", "event: ping\r\n\r",
			[]wantFrame{{"ping", nil}}, io.ErrUnexpectedEOF},
	} {
		for how, r := range readers(tc.input) {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				frames, err := readFrames(r)
				if err != tc.err {
					t.Errorf("terminal error = %v, want %v", err, tc.err)
				}
				var got []wantFrame
				for _, f := range frames {
					w := wantFrame{event: f.Event}
					if f.Data != nil {
						w.data = d(string(f.Data))
					}
					got = append(got, w)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("frames = %s, want %s", show(got), show(tc.want))
				}
				if raw := joinRaw(frames); string(raw) != tc.input {
					t.Errorf("Raw concatenation = %q, want the input %q", raw, tc.input)
				}
			})
		}
	}
}

func show(fs []wantFrame) string {
	var parts []string
	for _, f := range fs {
		data := "<nil>"
		if f.data != nil {
			data = *f.data
		}
		parts = append(parts, "{"+f.event+" "+data+"}")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestFrameReaderRawPerFrame(t *testing.T) {
	in := "data: a\r\n\r\nevent: ping\n\n: c\ndata: b\n\n"
	frames, _ := readFrames(strings.NewReader(in))
	want := []string{"data: a\r\n\r\n", "event: ping\n\n", ": c\ndata: b\n\n"}
	if len(frames) != len(want) {
		t.Fatalf("got %d frames", len(frames))
	}
	for i, f := range frames {
		if string(f.Raw) != want[i] {
			t.Errorf("frame %d Raw = %q, want %q", i, f.Raw, want[i])
		}
	}
	// Frames own their bytes: reading on does not overwrite them.
	if string(frames[0].Raw) != want[0] || string(frames[0].Data) != "a" {
		t.Error("frame bytes were overwritten")
	}
}

func TestFrameReaderErrors(t *testing.T) {
	boom := errors.New("connection reset")
	fr := NewFrameReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
	if f, err := fr.Next(); err != nil || string(f.Data) != "a" {
		t.Fatalf("first frame: %v %v", f, err)
	}
	f, err := fr.Next()
	if !errors.Is(err, boom) || string(f.Raw) != "data: b" {
		t.Errorf("second: %q %v", f.Raw, err)
	}
	if _, err := fr.Next(); !errors.Is(err, boom) {
		t.Errorf("error not sticky: %v", err)
	}

	// After ErrUnexpectedEOF comes io.EOF.
	fr = NewFrameReader(strings.NewReader("data: x"))
	if _, err := fr.Next(); err != io.ErrUnexpectedEOF {
		t.Errorf("partial: %v", err)
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Errorf("after partial: %v", err)
	}
}

type endlessReader struct{ b byte }

func (e endlessReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.b
	}
	return len(p), nil
}

func TestFrameReaderSizeLimit(t *testing.T) {
	// One endless line, and endless lines within one frame: both stop at
	// the default limit instead of exhausting memory.
	for _, tc := range []struct {
		name string
		r    io.Reader
	}{
		{"one long line", io.MultiReader(strings.NewReader("data: "), endlessReader{'a'})},
		{"many short lines", &repeatReader{line: []byte("data: aaaaaaaaaaaaaaaaaaaaaaaaaaaa\n")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewFrameReader(tc.r).Next()
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("err = %v", err)
			}
			if !strings.Contains(err.Error(), "16777216") {
				t.Errorf("error does not state the limit: %v", err)
			}
		})
	}
	// A frame just under a small limit passes; one byte more fails.
	frame := "data: " + strings.Repeat("x", 100) + "\n\n"
	fr := NewFrameReader(strings.NewReader(frame + frame))
	fr.max = len(frame)
	if _, err := fr.Next(); err != nil {
		t.Fatalf("frame at the limit: %v", err)
	}
	fr = NewFrameReader(strings.NewReader(frame))
	fr.max = len(frame) - 1
	if _, err := fr.Next(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("frame over the limit: %v", err)
	}
}

type repeatReader struct {
	line []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.line[r.off:])
		n += c
		r.off = (r.off + c) % len(r.line)
	}
	return n, nil
}

func TestDecodeEvent(t *testing.T) {
	frame := func(s string) SSEFrame {
		f, err := NewFrameReader(strings.NewReader(s)).Next()
		if err != nil && err != io.ErrUnexpectedEOF {
			t.Fatal(err)
		}
		return f
	}
	base := `"conversation_id":"c","message_id":"m","created_at":5,"task_id":"t"`
	eb := EventBase{ConversationID: "c", MessageID: "m", CreatedAt: 5, TaskID: "t"}
	withName := func(name string) EventBase { b := eb; b.Event = name; return b }
	for _, tc := range []struct {
		in   string
		want Event
	}{
		{`data: {"event":"agent_message",` + base + `,"id":"m","answer":"\u9898"}`,
			&AgentMessageEvent{EventBase: withName("agent_message"), ID: "m", Answer: "题"}},
		{`data: {"event":"agent_thought",` + base + `,"id":"a","position":2,"thought":null,"observation":"o","tool":"x;y","tool_labels":{},"tool_input":"{}","message_files":null}`,
			&AgentThoughtEvent{EventBase: withName("agent_thought"), ID: "a", Position: 2, Observation: ptr("o"), Tool: ptr("x;y"), ToolLabels: map[string]any{}, ToolInput: ptr("{}")}},
		{`data: {"event":"message",` + base + `,"id":"m","answer":"full","from_variable_selector":null}`,
			&MessageEvent{EventBase: withName("message"), ID: "m", Answer: "full", FromVariableSelector: []byte("null")}},
		{`data: {"event":"message_file",` + base + `,"id":"f","type":"image","belongs_to":"assistant","url":"/files/tools/f.png"}`,
			&MessageFileEvent{EventBase: withName("message_file"), ID: "f", Type: "image", BelongsTo: "assistant", URL: "/files/tools/f.png"}},
		{`data: {"event":"message_end",` + base + `,"id":"m","metadata":{"usage":{"total_tokens":9}},"files":null}`,
			&MessageEndEvent{EventBase: withName("message_end"), ID: "m", Metadata: MessageEndMetadata{Usage: &Usage{TotalTokens: 9}}, Files: []byte("null")}},
		{`data: {"event":"message_replace",` + base + `,"answer":"[redacted]","reason":"moderation"}`,
			&MessageReplaceEvent{EventBase: withName("message_replace"), Answer: "[redacted]", Reason: "moderation"}},
		{`data: {"event":"tts_message",` + base + `,"audio":"SUQz"}`,
			&TTSMessageEvent{EventBase: withName("tts_message"), Audio: "SUQz"}},
		{`data: {"event":"tts_message_end",` + base + `,"audio":""}`,
			&TTSMessageEndEvent{EventBase: withName("tts_message_end")}},
		{`data: {"event":"error","conversation_id":"c","message_id":"m","created_at":5,"code":"completion_request_error","status":400,"message":"boom"}`,
			&ErrorEvent{EventBase: EventBase{Event: "error", ConversationID: "c", MessageID: "m", CreatedAt: 5}, Status: 400, Code: "completion_request_error", Message: "boom"}},
		{"event: ping\n\n", &PingEvent{}},
		{`data: {"event":"ping"}`, &PingEvent{}},
		{`data: {"event":"human_input_required","form":{"id":1}}`,
			&UnknownEvent{Name: "human_input_required", Data: []byte(`{"event":"human_input_required","form":{"id":1}}`)}},
		{"event: workflow_started\n\n", &UnknownEvent{Name: "workflow_started"}},
		// The JSON name wins; the event: line names frames whose JSON does not.
		{"event: agent_message\ndata: {\"answer\":\"x\"}", &AgentMessageEvent{Answer: "x"}},
		{"event: other\ndata: {\"event\":\"tts_message\",\"audio\":\"A\"}", &TTSMessageEvent{EventBase: EventBase{Event: "tts_message"}, Audio: "A"}},
		{`data: {"no_event":true}`, &UnknownEvent{Name: "", Data: []byte(`{"no_event":true}`)}},
	} {
		got, err := DecodeEvent(frame(tc.in))
		if err != nil {
			t.Errorf("DecodeEvent(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("DecodeEvent(%q)\n got %#v\nwant %#v", tc.in, got, tc.want)
		}
		if got.EventName() != tc.want.EventName() {
			t.Errorf("EventName = %q", got.EventName())
		}
	}

	for _, in := range []string{"\n", ": comment\n\n", "data:\n\n", "data:   \n\n"} {
		if ev, err := DecodeEvent(frame(in)); ev != nil || err != nil {
			t.Errorf("DecodeEvent(%q) = %v, %v; want nil, nil", in, ev, err)
		}
	}

	for _, tc := range []struct{ in, event string }{
		{"data: not json\n\n", ""},
		{"data: [1,2]\n\n", ""},
		{`data: {"event":"agent_message","answer":`, ""},
		{`data: {"event":"agent_thought","position":"first"}`, "agent_thought"},
		{"event: message_end\ndata: {\"metadata\":[]}\n\n", "message_end"},
	} {
		f := frame(tc.in)
		_, err := DecodeEvent(f)
		var fe *FrameError
		if !errors.As(err, &fe) {
			t.Errorf("DecodeEvent(%q) err = %v, want *FrameError", tc.in, err)
			continue
		}
		if fe.Event != tc.event || !bytes.Equal(fe.Raw, f.Raw) || fe.Unwrap() == nil {
			t.Errorf("FrameError = %+v", fe)
		}
	}
}

func TestIsEventStream(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/event-stream":                     true,
		"text/event-stream; charset=utf-8":      true,
		" Text/Event-Stream ;charset=utf-8":     true,
		"text/event-stream; =broken":            true, // the media type stands; a bad parameter does not change it
		"application/json":                      false,
		"text/event-streamx":                    false,
		"text/event":                            false,
		"":                                      false,
		"application/json; x=text/event-stream": false,
	} {
		h := http.Header{}
		if ct != "" {
			h.Set("Content-Type", ct)
		}
		if got := IsEventStream(h); got != want {
			t.Errorf("IsEventStream(%q) = %v, want %v", ct, got, want)
		}
	}
}
