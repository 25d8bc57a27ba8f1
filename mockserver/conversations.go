package mockserver

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/store"
)

// queryUser is the end user named by ?user= (optional: the default user).
func (s *Server) queryUser(r *http.Request) store.EndUser {
	return s.store.EndUser(r.URL.Query().Get("user"))
}

// listConversations is GET /conversations (docs/api §5), validated as
// api/controllers/service_api/app/conversation.py ConversationApi.get
// does: ConversationListQuery.model_validate(request.args.to_dict())
// (last_id: UUID | None, limit: int 1–100, sort_by: Literal[…]).
func (s *Server) listConversations(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := queryDict(r)
	lastID, limit, errs := cursorPage(q)
	sortBy := dify.SortUpdatedAtDesc
	if v, ok := q.vals["sort_by"].(string); ok {
		switch v {
		case dify.SortCreatedAt, dify.SortCreatedAtDesc, dify.SortUpdatedAt, dify.SortUpdatedAtDesc:
			sortBy = v
		default:
			errs = append(errs, pyErr{loc: "sort_by", msg: pyLiteral(dify.SortCreatedAt, dify.SortCreatedAtDesc, dify.SortUpdatedAt, dify.SortUpdatedAtDesc), typ: "literal_error", input: v})
		}
	}
	if len(errs) > 0 {
		writeError(w, pydanticError("ConversationListQuery", errs...))
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

// cursorPage reads the last_id (a UUID; "" is no cursor, as the newest
// tree's UUIDStrOrEmpty accepts it, where the released UUID | None did not)
// and limit (1–100, default 20) fields that ConversationListQuery and
// ConversationVariablesQuery share, collecting pydantic errors.
func cursorPage(q *orderedDict) (lastID string, limit int, errs []pyErr) {
	if v, ok := q.vals["last_id"].(string); ok && v != "" {
		id, pe := pydanticUUID("last_id", v)
		if pe != nil {
			errs = append(errs, *pe)
		}
		lastID = id
	}
	limit = 20
	if v, ok := q.vals["limit"].(string); ok {
		n, pe := pyIntQuery("limit", v, 1, 100)
		if pe != nil {
			errs = append(errs, *pe)
		}
		limit = n
	}
	return lastID, limit, errs
}

// queryDict is request.args.to_dict(): each parameter's first value, in
// the order the query string names them.
func queryDict(r *http.Request) *orderedDict {
	d := &orderedDict{vals: map[string]any{}}
	for _, pair := range strings.Split(r.URL.RawQuery, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			continue
		}
		if _, dup := d.vals[k]; dup {
			continue
		}
		d.keys = append(d.keys, k)
		d.vals[k] = v
	}
	return d
}

// listMessages is GET /messages (docs/api §6), validated as
// api/controllers/service_api/app/message.py MessageListApi.get does with
// MessageListQuery (conversation_id: UUIDStrOrEmpty, required;
// first_id: UUIDStrOrEmpty | None; limit: int 1–100).
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := queryDict(r)
	var errs []pyErr
	uuidOrEmpty := func(loc string, v string) string {
		if v == "" {
			return ""
		}
		id, ok := pyUUID(v)
		if !ok {
			errs = append(errs, pyErr{loc: loc, msg: "Value error, must be a valid UUID", typ: "value_error", input: v})
		}
		return id
	}
	convID := ""
	if v, ok := q.vals["conversation_id"].(string); ok {
		convID = uuidOrEmpty("conversation_id", v)
	} else {
		errs = append(errs, pyErr{loc: "conversation_id", msg: "Field required", typ: "missing", input: q})
	}
	firstID := ""
	if v, ok := q.vals["first_id"].(string); ok {
		firstID = uuidOrEmpty("first_id", v)
	}
	limit := 20
	if v, ok := q.vals["limit"].(string); ok {
		n, pe := pyIntQuery("limit", v, 1, 100)
		if pe != nil {
			errs = append(errs, *pe)
		}
		limit = n
	}
	if len(errs) > 0 {
		writeError(w, pydanticError("MessageListQuery", errs...))
		return
	}
	if convID == "" { // "" passes UUIDStrOrEmpty and names no conversation
		writeError(w, errConvNotFound)
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
// else a routing 404 (docs/api §4, §7, §8, §10).
func pathUUID(w http.ResponseWriter, ps httprouter.Params, name string) (string, bool) {
	v := ps.ByName(name)
	if !dify.IsUUID(v) {
		writeNotFoundPage(w)
		return "", false
	}
	return strings.ToLower(v), true
}

// renameConversation is POST /conversations/:id/name (docs/api §7), validated
// as api/controllers/service_api/app/conversation.py
// ConversationRenameApi.post does: `user` from the JSON body, then
// ConversationRenamePayload (name: str | None, auto_generate: bool in
// pydantic's lax mode, and the model validator requiring a non-blank name
// unless auto_generate).
func (s *Server) renameConversation(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "conversation_id")
	if !ok {
		return
	}
	body, raw, e := readJSONRaw(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	user, e := body.user(false)
	if e != nil {
		writeError(w, e)
		return
	}
	dict := orderedBody(raw)
	var errs []pyErr
	name := ""
	if v := dict.vals["name"]; v != nil {
		n, pe := pyStrField("name", v)
		if pe != nil {
			errs = append(errs, *pe)
		}
		name = n
	}
	auto := false
	if v, present := dict.vals["auto_generate"]; present {
		b, pe := pyBoolField("auto_generate", v)
		if pe != nil {
			errs = append(errs, *pe)
		}
		auto = b
	}
	if len(errs) > 0 {
		writeError(w, pydanticError("ConversationRenamePayload", errs...))
		return
	}
	if !auto && strings.TrimSpace(name) == "" {
		writeError(w, pydanticError("ConversationRenamePayload",
			pyErr{msg: "Value error, name is required when auto_generate is false", typ: "value_error", input: dict}))
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

// deleteConversation is DELETE /conversations/:id (docs/api §8): 204 with no
// body. `user` comes from the JSON body only
// (api/controllers/service_api/app/conversation.py ConversationDetailApi
// .delete is guarded by FetchUserArg(fetch_from=JSON)); ?user= is never
// read, and the body must be JSON like on every other JSON route.
func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
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
	if err := s.store.Delete(id, s.store.EndUser(user).ID); err != nil {
		writeError(w, errConvNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// errSuggestedDisabled is api/controllers/service_api/app/error.py
// AppSuggestedQuestionsAfterAnswerDisabledError, which
// MessageSuggestedApi.get raises when the feature is off (older servers
// answered 400 bad_request "Suggested Questions Is Disabled.").
var errSuggestedDisabled = newError(http.StatusForbidden, "app_suggested_questions_after_answer_disabled",
	"The 'Suggested Questions After Answer' feature is disabled. Please refresh your page.")

// suggested is GET /messages/:id/suggested (docs/api §4): the questions of the
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
		writeError(w, errSuggestedDisabled)
		return
	}
	_, name, err := s.store.Message(id, s.store.EndUser(user).ID)
	if err != nil {
		writeError(w, errMessageNotFound)
		return
	}
	data := []string{}
	if sc, ok := s.cat().scripts[name]; ok && len(sc.Meta.SuggestedQuestions) > 0 {
		data = sc.Meta.SuggestedQuestions
	} else if len(s.app.Parameters.SuggestedQuestions) > 0 {
		data = s.app.Parameters.SuggestedQuestions
	}
	writeJSON(w, http.StatusOK, dify.SuggestedQuestions{Result: "success", Data: data})
}
