package mockserver

import (
	"errors"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/store"
)

// queryUser is the end user named by ?user= (optional: the default user).
func (s *Server) queryUser(r *http.Request) store.EndUser {
	return s.store.EndUser(r.URL.Query().Get("user"))
}

// listConversations is GET /conversations (API §5).
func (s *Server) listConversations(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	limit, e := queryLimit(r)
	if e != nil {
		writeError(w, e)
		return
	}
	lastID := strings.ToLower(strings.TrimSpace(q.Get("last_id")))
	if lastID != "" && !validUUID(lastID) {
		writeError(w, invalidParam("last_id: Input should be a valid UUID"))
		return
	}
	sortBy := q.Get("sort_by")
	switch sortBy {
	case "":
		sortBy = dify.SortUpdatedAtDesc
	case dify.SortCreatedAt, dify.SortCreatedAtDesc, dify.SortUpdatedAt, dify.SortUpdatedAtDesc:
	default:
		writeError(w, invalidParam("sort_by: Input should be 'created_at', '-created_at', 'updated_at' or '-updated_at'"))
		return
	}
	rows, more, err := s.store.ListConversations(s.queryUser(r).ID, lastID, limit, sortBy)
	if err != nil {
		writeError(w, newError(http.StatusNotFound, "not_found", "Last Conversation Not Exists."))
		return
	}
	if rows == nil {
		rows = []dify.Conversation{}
	}
	writeJSON(w, http.StatusOK, dify.ConversationPage{Limit: limit, HasMore: more, Data: rows})
}

// listMessages is GET /messages (API §6).
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	convID := strings.ToLower(strings.TrimSpace(q.Get("conversation_id")))
	if convID == "" {
		writeError(w, invalidParam("conversation_id: Field required"))
		return
	}
	if !validUUID(convID) {
		writeError(w, invalidParam("conversation_id: Input should be a valid UUID"))
		return
	}
	firstID := strings.ToLower(strings.TrimSpace(q.Get("first_id")))
	if firstID != "" && !validUUID(firstID) {
		writeError(w, invalidParam("first_id: Input should be a valid UUID"))
		return
	}
	limit, e := queryLimit(r)
	if e != nil {
		writeError(w, e)
		return
	}
	rows, more, err := s.store.ListMessages(convID, s.queryUser(r).ID, firstID, limit)
	switch {
	case errors.Is(err, store.ErrFirstNotFound):
		writeError(w, newError(http.StatusNotFound, "not_found", "First Message Not Exists."))
		return
	case err != nil:
		writeError(w, errConvNotFound)
		return
	}
	writeJSON(w, http.StatusOK, dify.MessagePage{Limit: limit, HasMore: more, Data: rows})
}

// pathUUID reads a UUID path segment; Flask's uuid converter makes anything
// else a routing 404 (API §4, §7, §8, §10).
func pathUUID(w http.ResponseWriter, ps httprouter.Params, name string) (string, bool) {
	v := ps.ByName(name)
	if !validUUID(v) {
		writeError(w, errNotFound)
		return "", false
	}
	return strings.ToLower(v), true
}

// renameConversation is POST /conversations/:id/name (API §7).
func (s *Server) renameConversation(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "conversation_id")
	if !ok {
		return
	}
	body, e := readJSON(w, r, false)
	if e != nil {
		writeError(w, e)
		return
	}
	user, e := body.user(false)
	if e != nil {
		writeError(w, e)
		return
	}
	name, _, e := body.str("name")
	if e != nil {
		writeError(w, e)
		return
	}
	auto, e := body.boolean("auto_generate", false)
	if e != nil {
		writeError(w, e)
		return
	}
	if !auto && strings.TrimSpace(name) == "" {
		writeError(w, invalidParam("name is required when auto_generate is false"))
		return
	}
	c, err := s.store.Rename(id, s.store.EndUser(user).ID, name, auto)
	switch {
	case errors.Is(err, store.ErrNoMessages):
		writeError(w, invalidParam(""))
		return
	case err != nil:
		writeError(w, errConvNotFound)
		return
	}
	writeJSON(w, http.StatusOK, c.Conversation)
}

// deleteConversation is DELETE /conversations/:id (API §8): 204 with no
// body; the JSON body (with `user`) is optional, ?user= is accepted too.
func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "conversation_id")
	if !ok {
		return
	}
	body, e := readJSON(w, r, true)
	if e != nil {
		writeError(w, e)
		return
	}
	user, e := body.user(false)
	if e != nil {
		writeError(w, e)
		return
	}
	if user == "" {
		user = r.URL.Query().Get("user")
	}
	if err := s.store.Delete(id, s.store.EndUser(user).ID); err != nil {
		writeError(w, errConvNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// suggested is GET /messages/:id/suggested (API §4): the questions of the
// cassette that produced the message, else the app's opening suggestions.
func (s *Server) suggested(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "message_id")
	if !ok {
		return
	}
	user := r.URL.Query().Get("user")
	if user == "" {
		writeError(w, errUserRequired)
		return
	}
	if !s.app.Parameters.SuggestedQuestionsAfterAnswer.Enabled {
		writeError(w, newError(http.StatusBadRequest, "bad_request", "Suggested Questions Is Disabled."))
		return
	}
	_, name, err := s.store.Message(id, s.store.EndUser(user).ID)
	if err != nil {
		writeError(w, errMessageNotFound)
		return
	}
	data := []string{}
	if sc, ok := s.scripts[name]; ok && len(sc.Meta.SuggestedQuestions) > 0 {
		data = sc.Meta.SuggestedQuestions
	} else if len(s.app.Parameters.SuggestedQuestions) > 0 {
		data = s.app.Parameters.SuggestedQuestions
	}
	writeJSON(w, http.StatusOK, dify.SuggestedQuestions{Result: "success", Data: data})
}
