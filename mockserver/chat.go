package mockserver

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/internal/freshstack"
)

// chatMessages is POST /chat-messages (docs/api §2). Every chat request
// flows through the same five phases, each in a file named after it:
//
//   - parse (chat_parse.go): the X-Dify-Mock-Fault header (parsed once,
//     here), the body as Dify's ChatRequestPayload validates it, then the
//     checks Dify's controller and generator make (the conversation,
//     blocking mode, the query, inputs, files);
//   - steer (chat_steer.go): the one decision of what plays — which turn
//     (an annotation's answer, a recorded cassette turn or, in hybrid mode,
//     the upstream's live answer: chat_upstream.go), at which speed, with
//     which fault, under which control-API rule;
//   - admit (chat_admit.go): what must happen before the first byte — a
//     fault before the response, the conversation, the task, the headers;
//   - stream (chat_stream.go): the one player, replay.Play, for every turn;
//   - store (chat_store.go): the one place a chat message is written, as
//     Dify's _save_message writes it.
//
// Why the phases run on the goroutines and in the frames they do is the
// stack budget (stack.go).
func (s *appServer) chatMessages(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var (
		req *chatRequest
		e   *apiError
	)
	freshstack.Run(func() { req, e = s.parseChat(w, r) }) // stack.go: the deepest point of a chat
	if e != nil {
		writeError(w, e)
		return
	}
	if cs := s.prepareChat(w, r, req); cs != nil {
		s.playChat(w, r, cs)
	}
}

// prepareChat runs the phases before the stream: the rest of parse, steer
// and admit. It returns nil when the response was written without a stream
// (an error, a fault before the response, a recorded error). It returns
// before the stream starts, so its frame is not below the player's
// (stack.go).
func (s *appServer) prepareChat(w http.ResponseWriter, r *http.Request, req *chatRequest) *chatStream {
	cat := s.cat() // one catalog for the whole request, even across a reload
	hdr, e := readSteering(cat, r, req, s.cfg.Speed)
	if e == nil {
		e = s.checkChat(req)
	}
	var plan *turnPlan
	if e == nil {
		plan, e = s.steer(w, r, cat, req, hdr)
	}
	if e != nil {
		writeError(w, e)
		return nil
	}
	if plan.answered { // live from the upstream (chat_upstream.go)
		return nil
	}
	return s.admit(w, r, req, plan)
}

// stopChat is POST /chat-messages/:task_id/stop (docs/api §3): always 200 once
// the user is given; a task of another user, or no task, is ignored.
func (s *appServer) stopChat(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	body, e := readJSON(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	user, e := body.user(true)
	if e != nil {
		writeError(w, e)
		return
	}
	s.stopTask(ps.ByName("task_id"), s.store.EndUser(user).ID)
	writeJSON(w, http.StatusOK, dify.ResultResponse{Result: "success"})
}
