package mockserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// annotationCharDelay is the pause after each per-character `message`
// event of a legacy agent-chat turn answered by an annotation
// (base_app_runner.py direct_output: time.sleep(0.01)), at speed 1.
const annotationCharDelay = 10 * time.Millisecond

// annotationTurn is the turn an annotation answers with (docs/api §29),
// compiled like a recorded turn so that the one player streams it: its
// frames are written the way Dify's pipeline writes them, then compiled, so
// journal frames, faults, stop, shutdown and the stored message are those
// of any turn.
//
// New Agent (`agent`) streams one `message` with the whole answer, then
// message_end (AgentAppGenerator → publish_text_answer); legacy
// `agent-chat` streams one `message` per character, each followed by a
// 10 ms pause, then message_end (AgentChatAppRunner.run → direct_output).
// message_end carries metadata {annotation_reply {id, account {id, name}},
// retriever_resources [], usage}, the usage being LLMUsage.empty_usage()
// with the latency the pauses add up to.
func (s *appServer) annotationTurn(a store.Annotation) *replay.CompiledTurn {
	key := annotationKey{a.ID, a.Answer}
	if t, ok := s.annTurns.get(key); ok {
		return t
	}
	conv, msg, task := replay.NewUUID(), replay.NewUUID(), replay.NewUUID()
	const created = 1700000000 // any time: rebound to the replay's clock
	base := dify.EventBase{ConversationID: conv, MessageID: msg, CreatedAt: created, TaskID: task}
	chunks := []string{a.Answer}
	step := time.Duration(0)
	if s.mode == dify.ModeAgentChat {
		chunks, step = strings.Split(a.Answer, ""), annotationCharDelay // one per character (UTF-8 aware)
	}
	frames := make([]cassette.RecordedFrame, 0, len(chunks)+1)
	for i, c := range chunks {
		ev := dify.MessageEvent{EventBase: base, ID: msg, Answer: c, FromVariableSelector: json.RawMessage("null")}
		ev.Event = dify.EventMessage
		frames = append(frames, cassette.RecordedFrame{Offset: time.Duration(i) * step, Raw: sseFrame(ev)})
	}
	end := annotationMessageEnd{EventBase: base, ID: msg, Files: json.RawMessage("null")}
	end.Event = dify.EventMessageEnd
	end.Metadata.AnnotationReply.ID = a.ID
	end.Metadata.AnnotationReply.Account.ID = s.ownerAccountID
	end.Metadata.AnnotationReply.Account.Name = s.ownerName()
	end.Metadata.RetrieverResources = []dify.RetrieverResource{}
	total := time.Duration(len(chunks)) * step
	end.Metadata.Usage = emptyUsage(total.Seconds())
	frames = append(frames, cassette.RecordedFrame{Offset: total, Raw: sseFrame(end)})
	c := &cassette.Cassette{
		Name: "", Meta: cassette.Meta{Mode: s.mode, Provenance: "synthesized", Source: "annotation " + a.ID},
		Turns: []*cassette.RecordedTurn{{
			Request: dify.ChatRequest{Query: a.Question}, Status: http.StatusOK, Frames: frames,
			Header: http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}},
		}},
	}
	sc, err := replay.Compile(c)
	if err != nil { // frames of fixed shapes: cannot happen
		panic(err)
	}
	t := sc.Turns[0]
	s.annTurns.put(key, t)
	return t
}

// annotationMessageEnd is message_end with the metadata key order of
// Dify's TaskStateMetadata (annotation_reply, retriever_resources, usage;
// docs/api §29.4).
type annotationMessageEnd struct {
	dify.EventBase
	ID       string `json:"id"`
	Metadata struct {
		AnnotationReply    dify.AnnotationReply     `json:"annotation_reply"`
		RetrieverResources []dify.RetrieverResource `json:"retriever_resources"`
		Usage              dify.Usage               `json:"usage"`
	} `json:"metadata"`
	Files json.RawMessage `json:"files"`
}

// emptyUsage is LLMUsage.empty_usage() with a latency: zero tokens, every
// price Decimal("0.0") (which pydantic writes as "0.0"), USD.
func emptyUsage(latency float64) dify.Usage {
	return dify.Usage{
		PromptUnitPrice: "0.0", PromptPriceUnit: "0.0", PromptPrice: "0.0",
		CompletionUnitPrice: "0.0", CompletionPriceUnit: "0.0", CompletionPrice: "0.0",
		TotalPrice: "0.0", Currency: "USD", Latency: latency,
	}
}

// sseFrame is one `data:` frame (compact JSON, as newer servers send).
func sseFrame(v any) []byte {
	b, _ := json.Marshal(v) // fixed shapes: cannot fail
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}

// ownerName is the annotation author shown in annotation_reply.account:
// annotations made through the Service API are the workspace owner's
// (docs/api §27.1); the mock names the owner after the app's author.
func (s *appServer) ownerName() string {
	if s.app.Info.AuthorName != "" {
		return s.app.Info.AuthorName
	}
	return "Dify user" // Dify's name for a missing author account
}

// annotationKey names a compiled annotation turn: the same annotation with
// the same answer compiles to the same turn.
type annotationKey struct{ id, answer string }

// annotationTurns caches compiled annotation turns, so that a popular
// annotation is compiled once; it forgets everything when it is full
// (annotations change rarely, and a compile is cheap next to a stream).
type annotationTurns struct {
	mu    sync.Mutex
	turns map[annotationKey]*replay.CompiledTurn
	bytes int
}

// maxAnnotationTurnBytes bounds the answers the cache holds.
const maxAnnotationTurnBytes = 8 << 20

func (c *annotationTurns) get(k annotationKey) (*replay.CompiledTurn, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.turns[k]
	return t, ok
}

func (c *annotationTurns) put(k annotationKey, t *replay.CompiledTurn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.turns == nil || c.bytes+len(k.answer) > maxAnnotationTurnBytes {
		c.turns, c.bytes = map[annotationKey]*replay.CompiledTurn{}, 0
	}
	c.turns[k] = t
	c.bytes += len(k.answer)
}
