package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// JSON kinds a field may be required to have.
type kind int

const (
	kString kind = 1 << iota
	kInt
	kNumber
	kObject
	kArray
	kBool
	kNull
)

func (k kind) String() string {
	var names []string
	for _, n := range []struct {
		k    kind
		name string
	}{{kString, "a string"}, {kInt, "an integer"}, {kNumber, "a number"}, {kObject, "an object"}, {kArray, "an array"}, {kBool, "a boolean"}, {kNull, "null"}} {
		if k&n.k != 0 {
			names = append(names, n.name)
		}
	}
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	out := names[0]
	for _, n := range names[1 : len(names)-1] {
		out += ", " + n
	}
	return out + " or " + names[len(names)-1]
}

func kindOf(raw json.RawMessage) kind {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch raw[0] {
	case '"':
		return kString
	case '{':
		return kObject
	case '[':
		return kArray
	case 't', 'f':
		return kBool
	case 'n':
		return kNull
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0
	}
	if _, err := n.Int64(); err == nil {
		return kInt | kNumber
	}
	return kNumber
}

// field is a required field and the kinds it may take.
type field struct {
	name string
	kind kind
}

// Required fields per event beyond the envelope (docs/api §2.5).
var eventFields = map[string][]field{
	dify.EventAgentMessage: {{"id", kString}, {"answer", kString}},
	dify.EventAgentThought: {
		{"id", kString}, {"position", kInt},
		{"thought", kString | kNull}, {"observation", kString | kNull},
		{"tool", kString | kNull}, {"tool_labels", kObject | kNull},
		{"tool_input", kString | kNull}, {"message_files", kArray | kNull},
	},
	dify.EventMessage:        {{"id", kString}, {"answer", kString}},
	dify.EventMessageFile:    {{"id", kString}, {"type", kString}, {"belongs_to", kString | kNull}, {"url", kString}},
	dify.EventMessageEnd:     {{"id", kString}, {"metadata", kObject}},
	dify.EventMessageReplace: {{"answer", kString}},
	dify.EventTTSMessage:     {{"audio", kString}},
	dify.EventTTSMessageEnd:  {{"audio", kString}},
	dify.EventError:          {{"status", kInt}, {"code", kString}, {"message", kString}},
}

// usageFields are message_end.metadata.usage's fields (docs/api §2.5); the two
// timing fields only newer servers send are optional.
var usageFields = []field{
	{"prompt_tokens", kInt}, {"prompt_unit_price", kString}, {"prompt_price_unit", kString}, {"prompt_price", kString},
	{"completion_tokens", kInt}, {"completion_unit_price", kString}, {"completion_price_unit", kString}, {"completion_price", kString},
	{"total_tokens", kInt}, {"total_price", kString}, {"currency", kString}, {"latency", kNumber},
}

var optionalUsageFields = []field{{"time_to_first_token", kNumber | kNull}, {"time_to_generate", kNumber | kNull}}

// streamCheck checks one recorded chat stream.
type streamCheck struct {
	l           *linter
	interaction int
	mode        string

	conversationID, messageID, taskID string
	idFrame                           [3]int // where each id was first seen

	terminal      string // event that ended the stream
	terminalFrame int
	messageFrame  int // frame of the closing `message`, -1 before one
	thoughtIDs    map[int]string
	thoughtPos    map[string]int
	secrets       int
}

func (s *streamCheck) add(frame int, format string, args ...any) {
	s.l.add(s.interaction, frame, format, args...)
}

// run checks every frame and returns how many secrets it reported.
func (s *streamCheck) run(frames []cassette.RecordedFrame) int {
	s.messageFrame = -1
	s.thoughtIDs = map[int]string{}
	s.thoughtPos = map[string]int{}
	for k, fr := range frames {
		for _, f := range scanSecrets(fr.Raw) {
			s.add(k, "holds a %s (remove it; secrets never belong in a cassette)", f.Pattern)
			s.secrets++
		}
		s.frame(k, fr.Raw)
	}
	if s.terminal == "" {
		s.add(-1, "stream ends without message_end or error (a stream ends with exactly one of them, docs/api §2.6)")
	}
	return s.secrets
}

func (s *streamCheck) frame(k int, raw []byte) {
	rd := dify.NewFrameReader(bytes.NewReader(raw))
	f, err := rd.Next()
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		s.add(k, `frame does not end with a blank line (SSE frames end with "\n\n", docs/api §2.4)`)
		return
	case err != nil:
		s.add(k, "frame is not an SSE frame: %v", err)
		return
	}
	if _, err := rd.Next(); !errors.Is(err, io.EOF) {
		s.add(k, "frame holds more than one SSE frame; each recorded frame must be exactly one")
		return
	}
	if f.Empty() {
		s.add(k, "frame carries no event (no data: or event: line)")
		return
	}
	if f.Data == nil {
		if f.Event == dify.EventPing {
			s.order(k, dify.EventPing)
			return
		}
		s.add(k, "bare `event: %s` frame without data; Dify sends only `event: ping` that way (docs/api §2.4)", f.Event)
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(f.Data, &m); err != nil || m == nil {
		s.add(k, "data is not a JSON object")
		return
	}
	var name string
	if raw, ok := m["event"]; !ok || json.Unmarshal(raw, &name) != nil || name == "" {
		s.add(k, `data has no "event" string; Dify names the event inside the JSON (docs/api §2.4)`)
		return
	}
	want, known := eventFields[name]
	if !known {
		// A newer server's event: tolerated, as clients must be (docs/api §21).
		s.order(k, name)
		return
	}
	before := len(s.l.probs)
	s.fields(k, name, m, envelope(name))
	s.fields(k, name, m, want)
	if len(s.l.probs) == before {
		// The field checks passed; make sure the client decodes it too.
		if _, err := dify.DecodeEvent(f); err != nil {
			s.add(k, "malformed event: %v", err)
		}
	}
	s.ids(k, name, m)
	s.order(k, name)
	switch name {
	case dify.EventAgentThought:
		s.thought(k, m)
	case dify.EventMessageEnd:
		s.messageEnd(k, m)
	}
}

// envelope lists the fields every chat event carries (docs/api §2.5); error
// events have no task_id.
func envelope(name string) []field {
	fs := []field{{"conversation_id", kString}, {"message_id", kString}, {"created_at", kInt}}
	if name != dify.EventError {
		fs = append(fs, field{"task_id", kString})
	}
	return fs
}

func (s *streamCheck) fields(k int, name string, m map[string]json.RawMessage, want []field) {
	for _, f := range want {
		raw, ok := m[f.name]
		if !ok {
			s.add(k, "%s lacks %q (docs/api §2.5)", name, f.name)
			continue
		}
		if got := kindOf(raw); got&f.kind == 0 {
			s.add(k, "%s field %q is %s, want %s", name, f.name, kindName(got), f.kind)
		}
	}
}

func kindName(k kind) string {
	switch {
	case k&kInt != 0:
		return "an integer"
	case k == 0:
		return "not JSON"
	}
	return k.String()
}

func str(m map[string]json.RawMessage, key string) (string, bool) {
	var v string
	raw, ok := m[key]
	if !ok || json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

// ids checks that a turn keeps one conversation, message and task id, and
// that the events whose id is the message id use it (docs/api §2.5).
func (s *streamCheck) ids(k int, name string, m map[string]json.RawMessage) {
	check := func(slot int, key string, cur *string) {
		v, ok := str(m, key)
		if !ok || v == "" {
			return
		}
		if *cur == "" {
			*cur, s.idFrame[slot] = v, k
			return
		}
		if v != *cur {
			s.add(k, "%s %q differs from %q (frame %d); one turn keeps one %s", key, v, *cur, s.idFrame[slot], key)
		}
	}
	check(0, "conversation_id", &s.conversationID)
	check(1, "message_id", &s.messageID)
	if name != dify.EventError {
		check(2, "task_id", &s.taskID)
	}
	switch name {
	case dify.EventAgentMessage, dify.EventMessage, dify.EventMessageEnd:
		id, _ := str(m, "id")
		mid, _ := str(m, "message_id")
		if id != "" && mid != "" && id != mid {
			s.add(k, "%s id %q is not its message_id %q (docs/api §2.5)", name, id, mid)
		}
	}
}

// order checks where event name may appear: a stream ends with exactly one
// message_end or error; only TTS audio and pings follow message_end; the
// closing message comes once, before message_end (docs/api §2.4–§2.6).
func (s *streamCheck) order(k int, name string) {
	if s.terminal != "" {
		switch {
		case name == dify.EventMessageEnd || name == dify.EventError:
			s.add(k, "second terminal event %s (frame %d already ended the stream with %s)", name, s.terminalFrame, s.terminal)
		case s.terminal == dify.EventError:
			s.add(k, "%s after the terminal error event (frame %d); nothing follows an error", name, s.terminalFrame)
		case name != dify.EventTTSMessage && name != dify.EventTTSMessageEnd && name != dify.EventPing:
			s.add(k, "%s after message_end (frame %d); only tts_message, tts_message_end and ping may follow it", name, s.terminalFrame)
		}
		return
	}
	switch name {
	case dify.EventMessageEnd, dify.EventError:
		s.terminal, s.terminalFrame = name, k
	case dify.EventMessage:
		if s.messageFrame >= 0 {
			s.add(k, "second message event (frame %d already sent the full answer; New Agent sends it once, docs/api §2.6)", s.messageFrame)
		} else {
			s.messageFrame = k
		}
	}
}

// thought checks that a thought row keeps its id across re-emissions and
// that positions count from 1 (docs/api §2.5).
func (s *streamCheck) thought(k int, m map[string]json.RawMessage) {
	id, _ := str(m, "id")
	var pos int
	if raw, ok := m["position"]; !ok || json.Unmarshal(raw, &pos) != nil || id == "" {
		return // reported by the field checks
	}
	if pos < 1 {
		s.add(k, "agent_thought position %d; positions count from 1", pos)
		return
	}
	if first, ok := s.thoughtIDs[pos]; ok && first != id {
		s.add(k, "agent_thought position %d has id %q, but earlier frames gave it %q; a row keeps its id when re-emitted", pos, id, first)
	} else if !ok {
		s.thoughtIDs[pos] = id
	}
	if old, ok := s.thoughtPos[id]; ok && old != pos {
		s.add(k, "agent_thought id %q moved from position %d to %d", id, old, pos)
	} else if !ok {
		s.thoughtPos[id] = pos
	}
}

func (s *streamCheck) messageEnd(k int, m map[string]json.RawMessage) {
	var meta map[string]json.RawMessage
	if json.Unmarshal(m["metadata"], &meta) != nil {
		return
	}
	raw, ok := meta["usage"]
	if !ok {
		s.add(k, `message_end metadata lacks "usage" (always sent, docs/api §2.5)`)
	} else {
		var usage map[string]json.RawMessage
		if json.Unmarshal(raw, &usage) != nil {
			s.add(k, "message_end metadata.usage is %s, want an object", kindName(kindOf(raw)))
		} else {
			s.fields(k, "message_end metadata.usage", usage, usageFields)
			for _, f := range optionalUsageFields {
				if v, ok := usage[f.name]; ok && kindOf(v)&f.kind == 0 {
					s.add(k, "message_end metadata.usage field %q is %s, want %s", f.name, kindName(kindOf(v)), f.kind)
				}
			}
		}
	}
	// Newer servers dump the whole TaskStateMetadata, so New Agent's
	// message_end carries "retriever_resources": [] (docs/api §29.4); a
	// New Agent turn never has entries in it.
	if raw, ok := meta["retriever_resources"]; ok && s.mode == dify.ModeAgent {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil || len(list) > 0 {
			s.add(k, "message_end carries retriever_resources entries, which New Agent (mode agent) never has (docs/api §2.5, §29.4)")
		}
	}
}
