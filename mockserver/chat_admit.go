package mockserver

// The admit phase of a chat request (chat.go): the state changes that must
// happen before the first byte, none of them under a long lock.

import (
	"net/http"
	"strconv"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
)

// chatStream is a chat turn admitted to stream, handed from admit to
// playChat. It holds pointers and small values only: it is built in
// prepareChat's frame and read below playChat's (stack.go).
type chatStream struct {
	bound *replay.Bound
	tk    *task
	conv  store.Conversation
	req   *chatRequest
	plan  *turnPlan
	now   time.Time
	rec   *journal.Record
}

// admit makes what the steered turn needs before it streams: the journal
// records the choice; a fault before the response runs (and may answer
// instead); a recorded pre-stream error is answered; a new conversation is
// created (Dify creates it before the agent runs, _init_generate_records);
// a follow-up moves the conversation's updated_at (_init_generate_records
// does, when a turn begins); the task is registered for stop; the turn is bound to this request's ids
// and the response header is written. It returns nil when the response is
// complete without a stream.
func (s *appServer) admit(w http.ResponseWriter, r *http.Request, req *chatRequest, plan *turnPlan) *chatStream {
	rec := journal.Of(w)
	journalChoice(rec, plan)
	if !s.beforeResponse(w, r, plan.spec, true) {
		return nil
	}
	if plan.spec.Delay > 0 && s.isClosed() { // shutdown cut the delay short
		writeError(w, errShuttingDown)
		return nil
	}
	t := plan.turn
	if t.Status != http.StatusOK {
		s.writeRecordedError(w, t)
		return nil
	}
	conv := plan.conv
	s.openConversation(req, &conv, plan.followUp)
	if !plan.followUp && plan.annotation == "" {
		s.store.SetReplay(conv.ID, plan.ref.cassette, plan.ref.turn)
	}
	taskID, msgID := replay.NewUUID(), replay.NewUUID()
	tk, ok := s.beginStream(taskID, req.endUserID)
	if !ok {
		writeError(w, errShuttingDown)
		return nil
	}
	now := s.store.Now()
	binding := replay.Binding{ConversationID: conv.ID, MessageID: msgID, TaskID: taskID, Now: now, UploadFileIDs: req.uploadIDs}
	if t.HasFileURLs() { // signed for this replay, served by signed_files.go
		binding.Files, binding.FilesURL = s.files, filesBase(r)
	}
	bound := t.Bind(binding)
	s.files.addTools(bound.ToolFiles())
	h := w.Header()
	for k, v := range t.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Transfer-Encoding", "Connection", "Date", "Set-Cookie", "Keep-Alive":
			continue
		}
		h[http.CanonicalHeaderKey(k)] = v
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/event-stream")
	}
	if plan.annotation == "" {
		h.Set(HeaderCassette, plan.ref.cassette)
		h.Set(HeaderTurn, strconv.Itoa(plan.ref.turn))
		h.Set(HeaderMatch, plan.matchHeader())
		if plan.match == matchSimilar {
			h.Set(HeaderScore, strconv.FormatFloat(plan.score, 'f', 3, 64))
		}
		if plan.fallback != "" {
			h.Set(HeaderUpstream, "fallback: "+plan.fallback)
		}
	} else {
		h.Set(HeaderAnnotation, plan.annotation)
	}
	if plan.spec.Stream != nil {
		h.Set(fault.Header, plan.spec.String())
		s.log.Info("fault", "method", r.Method, "path", r.URL.Path, "fault", plan.spec.String())
	}
	w.WriteHeader(http.StatusOK)
	return &chatStream{bound: bound, tk: tk, conv: conv, req: req, plan: plan, now: now, rec: rec}
}

// openConversation is the one way a turn opens its conversation, whatever
// answers it (a recorded turn here, the upstream in chat_upstream.go): a
// new conversation is created (Dify creates it before the agent runs,
// _init_generate_records) and a follow-up's conversation moves its
// updated_at (_init_generate_records does, when a turn begins).
func (s *appServer) openConversation(req *chatRequest, conv *store.Conversation, followUp bool) {
	// conv is a pointer, not a value in and out: the conversation is a
	// large struct, and two copies of it in this frame took the chat's
	// connection goroutine past its stack budget (stack.go).
	if followUp {
		s.store.ContinueConversation(conv.ID)
		return
	}
	*conv = s.store.NewConversation(req.endUserID, req.inputs, s.introduction(req.inputs), req.autoName)
}

// writeRecordedError replays a recorded pre-stream error (a non-200 turn).
func (s *appServer) writeRecordedError(w http.ResponseWriter, t *replay.CompiledTurn) {
	h := w.Header()
	copyRecordedHeader(h, t.Header)
	h.Set(HeaderCassette, t.Cassette)
	h.Set(HeaderTurn, strconv.Itoa(t.Index))
	h.Set("Content-Length", strconv.Itoa(len(t.Body)))
	w.WriteHeader(t.Status)
	_, _ = w.Write(t.Body)
}
