package mockserver

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/store"
)

// HeaderAnnotation is set on a chat response that an annotation answered:
// the annotation's id (the mock's own header, like HeaderCassette).
const HeaderAnnotation = "X-Dify-Mock-Annotation"

// annotationScore stands in for the embedding similarity Dify's vector
// search computes between a query and an annotation question (docs/api
// §29.1), which needs an embedding model the mock does not have. Both texts
// are normalised — lower-cased, split into words of letters and digits
// (every other character separates words; a CJK or other ideographic
// character is a word of its own) — and compared as bags of words by cosine
// similarity: 1 for the same words in any order and any punctuation or
// case, 0 for no word in common. docs/mock/annotations.md shows examples.
func annotationScore(query, question string) float64 {
	a, b := words(query), words(question)
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	var dot, na, nb float64
	for w, n := range a {
		na += float64(n * n)
		dot += float64(n * b[w])
	}
	for _, n := range b {
		nb += float64(n * n)
	}
	score := dot / math.Sqrt(na*nb)
	return math.Min(score, 1) // rounding can land a hair above 1
}

// words counts the normalised words of s.
func words(s string) map[string]int {
	out := map[string]int{}
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out[cur.String()]++
			cur.Reset()
		}
	}
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r):
			flush()
			out[string(r)]++
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// annotationCharDelay is the pause between the per-character `message`
// events of a legacy agent-chat turn answered by an annotation
// (base_app_runner.py direct_output: time.sleep(0.01)), at speed 1.
const annotationCharDelay = 10 * time.Millisecond

// answerFromAnnotation answers a validated chat request from an annotation
// when annotation reply is enabled and one matches the query (docs/api
// §29), before any cassette is consulted, as Dify checks annotations before
// the agent runs. It reports whether it answered (and wrote the response).
//
// New Agent (`agent`) streams one `message` with the whole answer, then
// message_end (AgentAppGenerator → publish_text_answer); legacy
// `agent-chat` streams one `message` per character 10 ms apart, then
// message_end (AgentChatAppRunner.run → direct_output). message_end carries
// metadata.annotation_reply {id, account {id, name}}, retriever_resources []
// and zero usage. The turn is stored like any other; hit_count grows by
// one. Faults are not injected into such turns.
func (s *Server) answerFromAnnotation(w http.ResponseWriter, r *http.Request, req *chatRequest, ownerID string, userFiles []dify.MessageFile, speed float64) bool {
	ann, _, ok := s.store.MatchAnnotation(req.query, annotationScore)
	if !ok {
		return false
	}
	start := time.Now()
	var conv store.Conversation
	if req.convID != "" {
		c, err := s.store.Conversation(req.convID, ownerID)
		if err != nil { // deleted meanwhile
			writeError(w, errConvNotFound)
			return true
		}
		conv = c
	} else {
		conv = s.store.NewConversation(ownerID, req.inputs, s.app.Parameters.OpeningStatement, req.autoName)
	}
	taskID, msgID := replay.NewUUID(), replay.NewUUID()
	tk, ok := s.beginStream(taskID, ownerID)
	if !ok {
		writeError(w, errShuttingDown)
		return true
	}
	defer s.endStream(taskID)
	now := s.store.Now()
	base := dify.EventBase{ConversationID: conv.ID, MessageID: msgID, CreatedAt: now.Unix(), TaskID: taskID}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set(HeaderAnnotation, ann.ID)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)

	chunks := []string{ann.Answer}
	if s.mode == dify.ModeAgentChat {
		chunks = strings.Split(ann.Answer, "") // one per character (UTF-8 aware)
	}
	var sent strings.Builder
	status, errText := "normal", ""
	for i, chunk := range chunks {
		if i > 0 && speed > 0 {
			t := time.NewTimer(time.Duration(float64(annotationCharDelay) / speed))
			select {
			case <-t.C:
			case <-tk.stop:
			case <-s.closing:
			case <-r.Context().Done():
			}
			t.Stop()
		}
		if r.Context().Err() != nil {
			break // the client left: store what it got
		}
		if s.isClosed() {
			status, errText = "error", replay.ShutdownMessage
			writeSSE(w, struct {
				Event          string `json:"event"`
				ConversationID string `json:"conversation_id"`
				MessageID      string `json:"message_id"`
				CreatedAt      int64  `json:"created_at"`
				Code           string `json:"code"`
				Status         int    `json:"status"`
				Message        string `json:"message"`
			}{dify.EventError, conv.ID, msgID, now.Unix(), "internal_server_error", http.StatusInternalServerError, replay.ShutdownMessage})
			_ = rc.Flush()
			break
		}
		if stopped(tk.stop) {
			break // POST …/stop: end the turn with what was sent
		}
		ev := dify.MessageEvent{EventBase: base, ID: msgID, Answer: chunk, FromVariableSelector: json.RawMessage("null")}
		ev.Event = dify.EventMessage
		writeSSE(w, ev)
		_ = rc.Flush()
		sent.WriteString(chunk)
	}

	usage := replay.ZeroUsage()
	usage.Latency = time.Since(start).Seconds()
	price, currency := usage.TotalPrice, usage.Currency
	m := dify.Message{
		ID: msgID, ConversationID: conv.ID, Inputs: req.inputs, Query: req.query, Answer: sent.String(),
		RetrieverResources: []dify.RetrieverResource{}, AgentThoughts: []dify.AgentThoughtRecord{},
		MessageFiles: append([]dify.MessageFile{}, userFiles...), CreatedAt: now.Unix(), Status: status,
		ProviderResponseLatency: usage.Latency, TotalPrice: &price, Currency: &currency, ExtraContents: []json.RawMessage{},
	}
	if errText != "" {
		m.Error = &errText
	}
	// Stored before message_end goes out, as the replayed turns are: a
	// client that acts on message_end at once (feedback, history) must find
	// the message, as it would on Dify, where the row exists from the start.
	if err := s.store.AddMessage(m, ""); err != nil {
		s.log.Debug("annotation turn not stored", "reason", err.Error())
	}
	if status == "normal" && r.Context().Err() == nil {
		end := annotationMessageEnd{EventBase: base, ID: msgID, Files: json.RawMessage("null")}
		end.Event = dify.EventMessageEnd
		end.Metadata.AnnotationReply.ID = ann.ID
		end.Metadata.AnnotationReply.Account.ID = s.ownerAccountID
		end.Metadata.AnnotationReply.Account.Name = s.ownerName()
		end.Metadata.RetrieverResources = []dify.RetrieverResource{}
		end.Metadata.Usage = usage
		writeSSE(w, end)
		_ = rc.Flush()
	}
	s.log.Debug("annotation answered", "annotation", ann.ID, "mode", s.mode)
	return true
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
		Usage              *dify.Usage              `json:"usage"`
	} `json:"metadata"`
	Files json.RawMessage `json:"files"`
}

// ownerName is the annotation author shown in annotation_reply.account:
// annotations made through the Service API are the workspace owner's
// (docs/api §27.1); the mock names the owner after the app's author.
func (s *Server) ownerName() string {
	if s.app.Info.AuthorName != "" {
		return s.app.Info.AuthorName
	}
	return "Dify user" // Dify's name for a missing author account
}

func stopped(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// writeSSE writes one `data:` frame (compact JSON, as newer servers send).
func writeSSE(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v) // fixed shapes: cannot fail
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	out = append(out, "\n\n"...)
	_, _ = w.Write(out)
}
