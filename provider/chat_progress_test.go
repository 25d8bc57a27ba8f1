package provider

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/difyops/terraform-provider-dify/dify"
)

func strp(s string) *string { return &s }

// TestChatProgress_thoughtsAndTools feeds the re-emitted thought rows of one
// agent turn: every thought, call and result is reported once, a thought
// only once it stops growing.
func TestChatProgress_thoughtsAndTools(t *testing.T) {
	var got []string
	p := newChatProgress(func(s string) { got = append(got, s) })
	row := func(id, thought, tool, in, obs string) *dify.AgentThoughtEvent {
		return &dify.AgentThoughtEvent{ID: id, Thought: strp(thought), Tool: strp(tool), ToolInput: strp(in), Observation: strp(obs)}
	}
	for _, ev := range []dify.Event{
		row("a", "", "", "", ""),
		row("a", "Need ", "", "", ""),
		row("a", "Need prices.", "", "", ""),
		row("a", "Need prices.", "web_search", `{"query": "x"}`, ""),
		row("a", "Need prices.", "web_search", `{"query": "x"}`, "found 3"),
		row("a", "Need prices.", "web_search", `{"query": "x"}`, "found 3"), // repeated
		row("b", "Add up.", "", "", ""),
		&dify.AgentMessageEvent{Answer: "750 EUR"},
		&dify.MessageEndEvent{Metadata: dify.MessageEndMetadata{Usage: &dify.Usage{TotalTokens: 42, TotalPrice: "0.01", Currency: "USD", Latency: 1.25}}},
	} {
		p.Event(ev)
	}
	p.Finish()
	want := []string{
		"thought: Need prices.",
		`tool call: web_search {"query":"x"}`,
		"tool result: web_search -> found 3",
		"thought: Add up.",
		"answer: 750 EUR",
		"reply finished: 42 tokens, 0.01 USD, 1.2s model latency",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("progress:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestChatProgress_answerLines streams an answer in pieces: whole lines go
// out as they complete (empty thought rows in between do not cut them), long
// text without a break is cut, and a New Agent
// closing `message` (the whole answer again) is not repeated.
func TestChatProgress_answerLines(t *testing.T) {
	var got []string
	clock := time.Unix(0, 0)
	p := newChatProgress(func(s string) { got = append(got, s) })
	p.now = func() time.Time { return clock }
	long := strings.Repeat("x", answerLineMax)
	for _, d := range []string{"Day 1: ", "Alfama\n", "\n", "Day 2: Belém\nDay", " 3", long} {
		p.Event(&dify.AgentMessageEvent{Answer: d})
		// New Agent re-emits an empty thought row between deltas; it must
		// not cut the answer into pieces.
		p.Event(&dify.AgentThoughtEvent{ID: "final", Position: 3, Thought: strp(""), Tool: strp("")})
	}
	p.Event(&dify.MessageEvent{Answer: "the whole answer again"})
	p.Event(&dify.AgentMessageEvent{Answer: "tail"})
	clock = clock.Add(answerFlushPeriod) // old enough: the next piece flushes
	p.Event(&dify.AgentMessageEvent{Answer: "."})
	p.Finish()
	want := []string{"answer: Day 1: Alfama", "answer: Day 2: Belém", "answer: Day 3" + long, "answer: tail."}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("progress:\n%q\nwant:\n%q", got, want)
	}
}

// TestChatProgress_annotationAnswer: a turn an annotation answered has one
// `message` event with the whole answer and annotation_reply in message_end
// (docs/api §29.2); both show up.
func TestChatProgress_annotationAnswer(t *testing.T) {
	var got []string
	p := newChatProgress(func(s string) { got = append(got, s) })
	p.Event(&dify.MessageEvent{Answer: "Open 9 to 5."})
	p.Event(&dify.MessageEndEvent{Metadata: dify.MessageEndMetadata{
		AnnotationReply: json.RawMessage(`{"id":"ann-1","account":{"id":"u","name":"Owner"}}`),
		Usage:           &dify.Usage{Latency: 0.01}}})
	want := []string{"answer: Open 9 to 5.", "reply finished: answered from annotation ann-1, 0 tokens, 0.0s model latency"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("progress:\n%q\nwant:\n%q", got, want)
	}
	got = nil
	p.Event(&dify.MessageEndEvent{Metadata: dify.MessageEndMetadata{AnnotationReply: json.RawMessage(`null`)}})
	if len(got) != 1 || got[0] != "reply finished" {
		t.Errorf("a null annotation_reply reported %q", got)
	}
}

func TestClip(t *testing.T) {
	if got := clip("a  b\n c", 10); got != "a b c" {
		t.Errorf("clip collapsed whitespace to %q", got)
	}
	if got := clip("ééééé", 3); got != "ééé…" {
		t.Errorf("clip cut runes to %q", got)
	}
}

// hostile is what a model or another user can put into an answer, a
// thought or a tool result: an OSC window title ending in BEL, clear
// screen, a colour, a C1 CSI, a carriage return that overwrites the line,
// a bidirectional override, and an invalid byte.
const hostile = "ok\x1b]0;pwned\x07 \x1b[2J\x1b[31mred\u009b0m\rfake line\u202etxt\xff"

func assertTerminalSafe(t *testing.T, where, s string, newlinesOK bool) {
	t.Helper()
	for _, r := range s {
		if (r < 0x20 && r != '\t' && !(r == '\n' && newlinesOK)) || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x202e || r == utf8.RuneError {
			t.Errorf("%s keeps a raw control character %U: %q", where, r, s)
			return
		}
	}
}

// TestChatProgress_escapesControlCharacters: progress lines show the
// server's control characters as visible escapes (they reached the
// terminal raw, even with -no-color).
func TestChatProgress_escapesControlCharacters(t *testing.T) {
	var got []string
	p := newChatProgress(func(s string) { got = append(got, s) })
	p.Event(&dify.AgentThoughtEvent{ID: "a", Thought: strp("think " + hostile), Tool: strp("t\x1b[1m"), ToolInput: strp(hostile), Observation: strp(hostile)})
	p.Event(&dify.AgentMessageEvent{Answer: hostile + "\nsecond " + hostile + "\n"})
	p.Event(&dify.MessageFileEvent{Type: "image", URL: "http://x/\x1b[2Jf.png"})
	p.Finish()
	if len(got) < 5 {
		t.Fatalf("progress: %q", got)
	}
	for _, line := range got {
		assertTerminalSafe(t, "progress line", line, false)
	}
	all := strings.Join(got, "\n")
	if !strings.Contains(all, `\x1b]0;pwned\x07`) || !strings.Contains(all, `\u009b`) || !strings.Contains(all, `\x0dfake line`) || !strings.Contains(all, `\u202e`) || !strings.Contains(all, `\xff`) {
		t.Errorf("the escapes are not visible: %s", all)
	}
}

// TestCleanIsTerminalSafeAndKeepsNewlines: every diagnostic detail built
// from server text (the expect_answer_matches answer, API error messages,
// warnings) escapes control characters but keeps the answer's lines.
func TestCleanIsTerminalSafeAndKeepsNewlines(t *testing.T) {
	r := redactor("app-secretkey")
	got := r.clean("Answer:\r\nline one " + hostile + "\nline two\tapp-secretkey")
	assertTerminalSafe(t, "diagnostic", got, true)
	if !strings.Contains(got, "Answer:\nline one ok") || !strings.Contains(got, "\nline two\t[redacted api key]") {
		t.Errorf("lines or tab lost, or key kept: %q", got)
	}
	if plain := "Día 1: Alfama\n"; r.clean(plain) != plain {
		t.Errorf("clean changed plain text: %q", r.clean(plain))
	}
}

// FuzzTerminalSafe: whatever a server sends, the escaped text holds no
// control character but tab (and newline when kept), and escaping again
// changes nothing.
func FuzzTerminalSafe(f *testing.F) {
	for _, s := range []string{hostile, "plain\ntext", "\r\n", "\xff\xfe", "a\u202eb", ""} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, keepNewlines bool) {
		got := terminalSafe(s, keepNewlines)
		assertTerminalSafe(t, "terminalSafe", got, keepNewlines)
		if again := terminalSafe(got, keepNewlines); again != got {
			t.Fatalf("not stable: %q then %q", got, again)
		}
	})
}
