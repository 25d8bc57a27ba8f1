package dify

import (
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
)

// ChatReply is the reply to one chat message, folded from its stream by
// Accumulator (docs/api §2.5–2.6).
type ChatReply struct {
	ConversationID string
	MessageID      string
	TaskID         string // for StopChatMessage
	CreatedAt      int64
	// Answer is the final answer: the closing `message` event when the
	// server sent one (New Agent, docs/api §2.6), otherwise the agent_message
	// deltas with message_replace applied.
	Answer string
	// Thoughts holds one row per agent_thought id, in its latest version,
	// ordered by Position (ties keep the order rows first appeared in).
	Thoughts []AgentThoughtEvent
	// Files are the message_file events, one per id, in arrival order.
	Files []MessageFileEvent
	// Usage and Metadata come from message_end.
	Usage    *Usage
	Metadata MessageEndMetadata
	// Completed reports that message_end was seen.
	Completed bool
}

// Accumulator folds stream events into a ChatReply the way a careful client
// should (docs/api §2.5–2.6). The zero value is ready to use.
type Accumulator struct {
	turn       ChatReply
	deltas     strings.Builder // the answer built from deltas
	closing    *string         // the closing `message`, once seen
	sawDelta   bool            // an agent_message arrived
	thoughtIdx map[string]int  // thought key -> index in turn.Thoughts
	fileIdx    map[string]int  // file id -> index in turn.Files
}

// Add folds one event. An *ErrorEvent is returned as an *APIError (with
// Stream set); every other event, known or not, returns nil.
func (a *Accumulator) Add(ev Event) error {
	switch e := ev.(type) {
	case *AgentMessageEvent:
		a.base(e.EventBase)
		a.sawDelta = true
		a.deltas.WriteString(e.Answer)
	case *MessageEvent:
		a.base(e.EventBase)
		if a.sawDelta {
			// New Agent's closing message repeats the whole answer; it
			// replaces the deltas and is never appended to them.
			answer := e.Answer
			a.closing = &answer
		} else {
			// Without agent_message deltas, `message` events are the
			// answer's pieces (plain chat apps, docs/api §2.5); a single
			// closing message makes the same answer either way.
			a.deltas.WriteString(e.Answer)
		}
	case *MessageReplaceEvent:
		// Output moderation replaces everything so far; later deltas
		// append to the replacement (docs/api §2.5).
		a.base(e.EventBase)
		a.deltas.Reset()
		a.deltas.WriteString(e.Answer)
		a.closing = nil
	case *AgentThoughtEvent:
		a.base(e.EventBase)
		a.thought(*e)
	case *MessageFileEvent:
		a.base(e.EventBase)
		if a.fileIdx == nil {
			a.fileIdx = map[string]int{}
		}
		if i, ok := a.fileIdx[e.ID]; ok && e.ID != "" {
			a.turn.Files[i] = *e
		} else {
			a.fileIdx[e.ID] = len(a.turn.Files)
			a.turn.Files = append(a.turn.Files, *e)
		}
	case *MessageEndEvent:
		a.base(e.EventBase)
		a.turn.Metadata = e.Metadata
		a.turn.Usage = e.Metadata.Usage
		a.turn.Completed = true
	case *ErrorEvent:
		a.base(e.EventBase)
		return &APIError{Status: e.Status, Code: e.Code, Message: e.Message, Stream: true}
	}
	return nil
}

// base keeps the ids: the latest non-empty value wins, and created_at is
// the first one seen (it is the message's creation time on every event).
func (a *Accumulator) base(b EventBase) {
	if b.ConversationID != "" {
		a.turn.ConversationID = b.ConversationID
	}
	if b.MessageID != "" {
		a.turn.MessageID = b.MessageID
	}
	if b.TaskID != "" {
		a.turn.TaskID = b.TaskID
	}
	if a.turn.CreatedAt == 0 {
		a.turn.CreatedAt = b.CreatedAt
	}
}

// thought replaces the row with the same id (Dify re-emits a row whenever it
// changes, docs/api §2.5); rows without an id are keyed by position.
func (a *Accumulator) thought(t AgentThoughtEvent) {
	key := "id:" + t.ID
	if t.ID == "" {
		key = "position:" + strconv.Itoa(t.Position)
	}
	if a.thoughtIdx == nil {
		a.thoughtIdx = map[string]int{}
	}
	if i, ok := a.thoughtIdx[key]; ok {
		a.turn.Thoughts[i] = t
		return
	}
	a.thoughtIdx[key] = len(a.turn.Thoughts)
	a.turn.Thoughts = append(a.turn.Thoughts, t)
}

// Reply returns the result so far. The returned slices are copies.
func (a *Accumulator) Reply() ChatReply {
	t := a.turn
	t.Answer = a.deltas.String()
	if a.closing != nil {
		t.Answer = *a.closing
	}
	t.Thoughts = slices.Clone(a.turn.Thoughts)
	slices.SortStableFunc(t.Thoughts, func(x, y AgentThoughtEvent) int { return x.Position - y.Position })
	t.Files = slices.Clone(a.turn.Files)
	return t
}

// Collect reads s to the end of the turn and closes it. It stops at
// message_end (events that trail it, such as TTS audio, are not needed for
// a Turn) or at an error event, which it returns as *APIError. A stream
// that ends early returns the partial Turn and an error matching
// ErrTruncatedStream. A malformed frame does not stop collection: the rest
// of the turn is still read and the first *FrameError is returned with the
// otherwise complete Turn. The Turn is never nil.
func Collect(s *ChatStream) (*ChatReply, error) {
	defer s.Close()
	var (
		acc      Accumulator
		frameErr error
	)
	for {
		ev, err := s.Next()
		if _, ok := err.(*FrameError); ok { // Next returns it unwrapped, and only for a frame it skipped
			if frameErr == nil {
				frameErr = err
			}
			continue
		}
		switch {
		case err == io.EOF:
			// The caller consumed the terminal event before calling Collect.
			t := acc.Reply()
			return &t, frameErr
		case err != nil:
			// Keep the earlier malformed frame visible: a broken frame followed
			// by a cut is two problems, and callers match either with errors.Is/As.
			t := acc.Reply()
			if frameErr != nil {
				return &t, errors.Join(err, frameErr)
			}
			return &t, err
		}
		if err := acc.Add(ev); err != nil {
			t := acc.Reply()
			return &t, err
		}
		if _, ok := ev.(*MessageEndEvent); ok {
			t := acc.Reply()
			return &t, frameErr
		}
	}
}
