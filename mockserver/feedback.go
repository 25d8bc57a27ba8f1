package mockserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
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
	// content str | None; other keys are ignored.
	var rating string // "" = null: revoke
	if raw, present := body["rating"]; present && !isNull(raw) {
		if json.Unmarshal(raw, &rating) != nil || (rating != dify.RatingLike && rating != dify.RatingDislike) {
			writeError(w, invalidParam("rating: Input should be 'like' or 'dislike'"))
			return
		}
	}
	var content *string
	if c, present, e := body.str("content"); e != nil {
		writeError(w, e)
		return
	} else if present {
		content = &c
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
	q := r.URL.Query()
	page, e := queryInt(q.Get("page"), "page", 1, 1, 0)
	if e != nil {
		writeError(w, e)
		return
	}
	limit, e := queryInt(q.Get("limit"), "limit", 20, 1, 101) // le=101 verbatim
	if e != nil {
		writeError(w, e)
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

// queryInt parses an integer query parameter the way a pydantic model
// validating request.args does (lax mode: surrounding whitespace allowed):
// def when absent, min and max (0 = unbounded) inclusive.
func queryInt(v, field string, def, minV, maxV int) (int, *apiError) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, invalidParam(field + ": Input should be a valid integer, unable to parse string as an integer")
	}
	if n < minV {
		return 0, invalidParam(field + ": Input should be greater than or equal to " + strconv.Itoa(minV))
	}
	if maxV > 0 && n > maxV {
		return 0, invalidParam(field + ": Input should be less than or equal to " + strconv.Itoa(maxV))
	}
	return n, nil
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
