package mockserver

import (
	"errors"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// messageFeedbackPayload is MessageFeedbackPayload
// (api/controllers/service_api/app/message.py): rating
// Literal["like","dislike"] | None, content str | None; other keys are
// ignored. A failure is pydantic's own text (message.py validates in the
// handler; the newest tree's @model_validate decorator answers 422 instead).
var messageFeedbackPayload = pydantic.Model{Name: "MessageFeedbackPayload", Fields: []pydantic.Field{
	{Name: "rating", Rule: pydantic.Literal(dify.RatingLike, dify.RatingDislike), Optional: true, Default: ""}, // "" = null: revoke
	{Name: "content", Rule: pydantic.StrRule, Optional: true},
}}

// messageFeedback is POST /messages/:message_id/feedbacks (docs/api §25;
// Dify's message.py MessageFeedbackApi.post and
// MessageService.create_feedback). No app-mode gate: `agent` apps are
// served too.
func (s *appServer) messageFeedback(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "message_id")
	if !ok {
		return
	}
	user, p, e := readUserPayload(w, r, true, messageFeedbackPayload) // FetchUserArg(JSON, required=True)
	if e != nil {
		writeError(w, e)
		return
	}
	var content *string
	if p.Set("content") {
		c := p.Str("content")
		content = &c
	}
	err := s.store.SetFeedback(id, s.store.EndUser(user).ID, p.Str("rating"), content)
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

// feedbackListQuery is FeedbackListQuery (message.py) over request.args:
// page ge=1, limit 1–101 (le=101 verbatim).
var feedbackListQuery = pydantic.Model{Name: "FeedbackListQuery", Fields: []pydantic.Field{
	{Name: "page", Rule: pydantic.IntRange(1, 0), Default: 1},
	{Name: "limit", Rule: pydantic.IntRange(1, 101), Default: 20},
}}

// appFeedbacks is GET /app/feedbacks (docs/api §26; message.py
// AppGetFeedbacksApi.get with FeedbackListQuery, and
// MessageService.get_all_messages_feedbacks): every feedback of the app,
// newest first, plain offset paging, no user.
func (s *appServer) appFeedbacks(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q, errs := feedbackListQuery.Validate(pydantic.Query(r.URL.RawQuery))
	if len(errs) > 0 {
		writeError(w, pydanticError(feedbackListQuery.Name, errs...))
		return
	}
	page, limit := q.Int("page"), q.Int("limit")
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
