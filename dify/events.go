package dify

import "encoding/json"

// SSE event names for chat streams (docs/api §2.5).
const (
	EventAgentMessage   = "agent_message"
	EventAgentThought   = "agent_thought"
	EventMessage        = "message"
	EventMessageFile    = "message_file"
	EventMessageEnd     = "message_end"
	EventMessageReplace = "message_replace"
	EventTTSMessage     = "tts_message"
	EventTTSMessageEnd  = "tts_message_end"
	EventError          = "error"
	EventPing           = "ping"
)

// Event is one decoded chat stream event. The concrete types are the *XxxEvent
// structs below; events this package does not know arrive as *UnknownEvent so
// a newer server never breaks an older client.
type Event interface {
	// EventName is the wire name, e.g. "agent_message".
	EventName() string
}

// EventBase is the envelope every chat event except ping carries (docs/api §2.5).
// TaskID is empty on error events.
type EventBase struct {
	Event          string `json:"event"`
	ConversationID string `json:"conversation_id"`
	MessageID      string `json:"message_id"`
	CreatedAt      int64  `json:"created_at"`
	TaskID         string `json:"task_id,omitempty"`
}

// AgentMessageEvent carries an answer delta (docs/api §2.5).
type AgentMessageEvent struct {
	EventBase
	ID     string `json:"id"`
	Answer string `json:"answer"`
}

// AgentThoughtEvent is an agent thought row in its SSE form (docs/api §2.5). The
// same ID is re-emitted whenever the row changes: replace, never append.
type AgentThoughtEvent struct {
	EventBase
	ID           string         `json:"id"`
	Position     int            `json:"position"`
	Thought      *string        `json:"thought"`
	Observation  *string        `json:"observation"`
	Tool         *string        `json:"tool"`
	ToolLabels   map[string]any `json:"tool_labels"`
	ToolInput    *string        `json:"tool_input"`
	MessageFiles []string       `json:"message_files"`
}

// MessageEvent is the closing full answer New Agent sends once before
// message_end (docs/api §2.5, §2.6).
type MessageEvent struct {
	EventBase
	ID                   string          `json:"id"`
	Answer               string          `json:"answer"`
	FromVariableSelector json.RawMessage `json:"from_variable_selector,omitempty"`
}

// MessageFileEvent announces a file produced by a tool (docs/api §2.5).
type MessageFileEvent struct {
	EventBase
	ID        string `json:"id"`
	Type      string `json:"type"`
	BelongsTo string `json:"belongs_to"`
	URL       string `json:"url"`
}

// MessageEndMetadata is message_end.metadata (docs/api §2.5).
type MessageEndMetadata struct {
	Usage              *Usage              `json:"usage"`
	RetrieverResources []RetrieverResource `json:"retriever_resources,omitempty"`
	AnnotationReply    json.RawMessage     `json:"annotation_reply,omitempty"`
}

// MessageEndEvent is the terminal success event (docs/api §2.5).
type MessageEndEvent struct {
	EventBase
	ID       string             `json:"id"`
	Metadata MessageEndMetadata `json:"metadata"`
	Files    json.RawMessage    `json:"files,omitempty"`
}

// MessageReplaceEvent replaces the whole answer so far (output moderation, docs/api §2.5).
type MessageReplaceEvent struct {
	EventBase
	Answer string `json:"answer"`
	Reason string `json:"reason,omitempty"`
}

// TTSMessageEvent carries a base64 MP3 chunk (docs/api §2.5).
type TTSMessageEvent struct {
	EventBase
	Audio string `json:"audio"`
}

// TTSMessageEndEvent trails message_end when TTS auto-play is on (docs/api §2.5).
type TTSMessageEndEvent struct {
	EventBase
	Audio string `json:"audio"`
}

// ErrorEvent is a terminal in-stream failure; the HTTP status stays 200 (docs/api §2.5).
type ErrorEvent struct {
	EventBase
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// PingEvent is the bare `event: ping` keep-alive frame (docs/api §2.4).
type PingEvent struct{}

// UnknownEvent is any event this package does not model; Data is the raw JSON
// payload (nil for a bare `event:` frame).
type UnknownEvent struct {
	Name string
	Data json.RawMessage
}

func (*AgentMessageEvent) EventName() string   { return EventAgentMessage }
func (*AgentThoughtEvent) EventName() string   { return EventAgentThought }
func (*MessageEvent) EventName() string        { return EventMessage }
func (*MessageFileEvent) EventName() string    { return EventMessageFile }
func (*MessageEndEvent) EventName() string     { return EventMessageEnd }
func (*MessageReplaceEvent) EventName() string { return EventMessageReplace }
func (*TTSMessageEvent) EventName() string     { return EventTTSMessage }
func (*TTSMessageEndEvent) EventName() string  { return EventTTSMessageEnd }
func (*ErrorEvent) EventName() string          { return EventError }
func (*PingEvent) EventName() string           { return EventPing }
func (e *UnknownEvent) EventName() string      { return e.Name }
