package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/difyops/terraform-provider-dify/dify"
)

// chatProgress turns a chat stream's events into short progress lines for
// the Terraform CLI: each new thought, each tool call and its result once,
// the answer in lines as it streams, and a closing summary. It never sends
// the same information twice even though Dify re-emits a thought row every
// time it changes (docs/api §2.5).
type chatProgress struct {
	send func(string)
	now  func() time.Time

	// seen holds, per thought row, what was already reported.
	seen    map[string]*thoughtSeen
	current string // key of the thought row that changed last
	// pending is answer text not yet sent; sawDelta is set once an
	// agent_message arrived (then a closing `message` repeats the whole
	// answer and is not streamed again, docs/api §2.6).
	pending   strings.Builder
	sawDelta  bool
	lastFlush time.Time
}

type thoughtSeen struct {
	latest, reported       string // thought text: newest, and last sent
	toolInput, observation string // last sent
	toolReported           bool
}

// Limits keep one progress line readable in a terminal.
const (
	progressFieldMax  = 300             // characters of a thought, tool input or result
	answerLineMax     = 200             // an answer piece is sent once it is this long...
	answerFlushPeriod = 2 * time.Second // ...or this old, or at a line break
)

// newChatProgress reports through send, one line per call, with control
// characters from the server escaped (terminalSafe).
func newChatProgress(send func(string)) *chatProgress {
	safe := func(s string) { send(terminalSafe(s, false)) }
	return &chatProgress{send: safe, now: time.Now, seen: map[string]*thoughtSeen{}}
}

// Event reports one stream event.
func (p *chatProgress) Event(ev dify.Event) {
	switch e := ev.(type) {
	case *dify.AgentThoughtEvent:
		// New Agent interleaves empty thought rows with the answer deltas;
		// only a row with something to report interrupts the answer.
		p.thought(e)
	case *dify.AgentMessageEvent:
		p.flushThought()
		p.sawDelta = true
		p.answer(e.Answer)
	case *dify.MessageEvent:
		p.flushThought()
		if !p.sawDelta {
			p.answer(e.Answer)
		}
	case *dify.MessageReplaceEvent:
		p.flushThought()
		p.pending.Reset()
		p.send("answer replaced by output moderation: " + clip(e.Answer, progressFieldMax))
	case *dify.MessageFileEvent:
		p.flushThought()
		p.flush()
		p.send(fmt.Sprintf("file from the %s: %s %s", orDefault(e.BelongsTo, "assistant"), e.Type, e.URL))
	case *dify.MessageEndEvent:
		p.flushThought()
		p.flush()
		p.send(endSummary(e))
	}
}

// Finish sends whatever thought or answer text is still pending.
func (p *chatProgress) Finish() {
	p.flushThought()
	p.flush()
}

func (p *chatProgress) thought(e *dify.AgentThoughtEvent) {
	key := e.ID
	if key == "" {
		key = fmt.Sprintf("position %d", e.Position)
	}
	if key != p.current {
		p.flushThought()
		p.current = key
	}
	s, ok := p.seen[key]
	if !ok {
		s = &thoughtSeen{}
		p.seen[key] = s
	}
	// The thought text grows over several events; it is reported once it
	// stops changing: when the row turns to a tool, or anything else follows.
	s.latest = strings.TrimSpace(deref(e.Thought))
	tool := strings.TrimSpace(deref(e.Tool))
	if tool == "" {
		return
	}
	p.flushThought()
	if in := strings.TrimSpace(deref(e.ToolInput)); !s.toolReported || in != s.toolInput {
		s.toolReported, s.toolInput = true, in
		p.note(strings.TrimSpace(fmt.Sprintf("tool call: %s %s", tool, clip(compactJSON(in), progressFieldMax))))
	}
	if obs := strings.TrimSpace(deref(e.Observation)); obs != "" && obs != s.observation {
		s.observation = obs
		p.note(fmt.Sprintf("tool result: %s -> %s", tool, clip(compactJSON(obs), progressFieldMax)))
	}
}

// flushThought reports the current row's thought text if it is new.
func (p *chatProgress) flushThought() {
	s := p.seen[p.current]
	if s == nil || s.latest == "" || s.latest == s.reported {
		return
	}
	s.reported = s.latest
	p.note("thought: " + clip(s.latest, progressFieldMax))
}

// note sends a thought or tool line, after the answer text before it.
func (p *chatProgress) note(msg string) {
	p.flush()
	p.send(msg)
}

// answer buffers streamed text and sends it in whole lines, or in pieces
// of answerLineMax characters, or when the oldest unsent text is
// answerFlushPeriod old, so a long answer shows up while it streams without
// a line per token.
func (p *chatProgress) answer(delta string) {
	if delta == "" {
		return
	}
	if p.pending.Len() == 0 {
		p.lastFlush = p.now()
	}
	p.pending.WriteString(delta)
	for {
		text := p.pending.String()
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			break
		}
		p.pending.Reset()
		p.pending.WriteString(text[i+1:])
		if line := strings.TrimRight(text[:i], "\r"); strings.TrimSpace(line) != "" {
			p.send("answer: " + line)
		}
		p.lastFlush = p.now()
	}
	if utf8.RuneCountInString(p.pending.String()) >= answerLineMax || p.now().Sub(p.lastFlush) >= answerFlushPeriod {
		p.flush()
	}
}

func (p *chatProgress) flush() {
	text := p.pending.String()
	p.pending.Reset()
	p.lastFlush = p.now()
	if strings.TrimSpace(text) != "" {
		p.send("answer: " + text)
	}
}

func endSummary(e *dify.MessageEndEvent) string {
	var parts []string
	// Set when an annotation answered instead of the agent (docs/api §29.2).
	if a, err := e.Metadata.Annotation(); err == nil && a != nil {
		parts = append(parts, "answered from annotation "+a.ID)
	}
	if u := e.Metadata.Usage; u != nil {
		parts = append(parts, fmt.Sprintf("%d tokens", u.TotalTokens))
		if u.TotalPrice != "" && u.Currency != "" {
			parts = append(parts, u.TotalPrice+" "+u.Currency)
		}
		parts = append(parts, fmt.Sprintf("%.1fs model latency", u.Latency))
	}
	if len(parts) == 0 {
		return "reply finished"
	}
	return "reply finished: " + strings.Join(parts, ", ")
}

// compactJSON removes insignificant whitespace from JSON text (tool inputs
// and observations are JSON keyed by tool name); other text is kept.
func compactJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err == nil {
		return buf.String()
	}
	return strings.Join(strings.Fields(s), " ")
}

// clip shortens s to max characters, marking the cut.
func clip(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
