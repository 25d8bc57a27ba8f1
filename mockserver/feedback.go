package mockserver

import (
	"errors"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/store"
)

// messageFeedback is POST /messages/:message_id/feedbacks (docs/api §25;
// Dify's message.py MessageFeedbackApi.post and
// MessageService.create_feedback). No app-mode gate: `agent` apps are
// served too.
func (s *Server) messageFeedback(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "message_id")
	if !ok {
		return
	}
	body, e := readJSON(w, r, false)
	if e != nil {
		writeError(w, e)
		return
	}
	user, e := body.user(true) // FetchUserArg(JSON, required=True)
	if e != nil {
		writeError(w, e)
		return
	}
	// MessageFeedbackPayload: rating Literal["like","dislike"] | None,
	// content str | None; other keys are ignored. A failure is pydantic's
	// own text (message.py validates in the handler; the newest tree's
	// @model_validate decorator answers 422 instead).
	var errs []pyErr
	var rating string // "" = null: revoke
	if v := decodeJSONValue(body["rating"]); v != nil {
		rating, _ = v.(string)
		if rating != dify.RatingLike && rating != dify.RatingDislike {
			errs = append(errs, pyErr{loc: "rating", msg: pyLiteral(dify.RatingLike, dify.RatingDislike), typ: "literal_error", input: v})
		}
	}
	var content *string
	if v := decodeJSONValue(body["content"]); v != nil {
		c, pe := pyStrField("content", v)
		if pe != nil {
			errs = append(errs, *pe)
		}
		content = &c
	}
	if len(errs) > 0 {
		writeError(w, pydanticError("MessageFeedbackPayload", errs...))
		return
	}
	err := s.store.SetFeedback(id, s.store.EndUser(user).ID, rating, content)
	switch {
	case errors.Is(err, store.ErrNoFeedback):
		writeError(w, invalidParam(store.ErrNoFeedback.Error()))
		return
	case err != nil:
		writeError(w, errMessageNotFound)
		return
	}
	writeJSON(w, http.StatusOK, dify.ResultResponse{Result: "success"})
}

// appFeedbacks is GET /app/feedbacks (docs/api §26; message.py
// AppGetFeedbacksApi.get with FeedbackListQuery, and
// MessageService.get_all_messages_feedbacks): every feedback of the app,
// newest first, plain offset paging, no user.
func (s *Server) appFeedbacks(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	// FeedbackListQuery over request.args: page ge=1, limit 1–101.
	q := queryDict(r)
	var errs []pyErr
	page, limit := 1, 20
	if v, ok := q.vals["page"].(string); ok {
		n, pe := pyIntQuery("page", v, 1, 0)
		if pe != nil {
			errs = append(errs, *pe)
		}
		page = n
	}
	if v, ok := q.vals["limit"].(string); ok {
		n, pe := pyIntQuery("limit", v, 1, 101) // le=101 verbatim
		if pe != nil {
			errs = append(errs, *pe)
		}
		limit = n
	}
	if len(errs) > 0 {
		writeError(w, pydanticError("FeedbackListQuery", errs...))
		return
	}
	rows := s.store.ListFeedbacks(page, limit)
	data := make([]dify.AppFeedback, len(rows))
	for i, f := range rows {
		eu := f.FromEndUserID
		data[i] = dify.AppFeedback{
			ID: f.ID, AppID: s.appID, ConversationID: f.ConversationID, MessageID: f.MessageID, Rating: f.Rating,
			Content: f.Content, FromSource: dify.FeedbackFromUser, FromEndUserID: &eu,
			CreatedAt: isoformat(f.CreatedAt), UpdatedAt: isoformat(f.UpdatedAt),
		}
	}
	writeJSON(w, http.StatusOK, dify.AppFeedbackPage{Data: data})
}

// isoformat renders t as Python's datetime.isoformat() of a naive UTC
// value (docs/api §26): no zone, microseconds only when non-zero.
func isoformat(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05")
	}
	return t.Format("2006-01-02T15:04:05.000000")
}
