package mockserver

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// queryUser is the end user named by ?user= (optional: the default user).
func (s *appServer) queryUser(r *http.Request) store.EndUser {
	return s.store.EndUser(r.URL.Query().Get("user"))
}

// The cursor and limit fields ConversationListQuery and
// ConversationVariablesQuery share: last_id is a UUID ("" is no cursor, as
// the newest tree's UUIDStrOrEmpty accepts it, where the released
// UUID | None did not), limit an int 1–100, default 20.
var (
	lastIDField = pydantic.Field{Name: "last_id", Rule: pydantic.UUIDRule, Default: "", EmptyIsAbsent: true}
	limitField  = pydantic.Field{Name: "limit", Rule: pydantic.IntRange(1, 100), Default: 20}
)

// conversationListQuery is ConversationListQuery
// (api/controllers/service_api/app/conversation.py).
var conversationListQuery = pydantic.Model{Name: "ConversationListQuery", Fields: []pydantic.Field{
	lastIDField,
	limitField,
	{Name: "sort_by", Rule: pydantic.Literal(dify.SortCreatedAt, dify.SortCreatedAtDesc, dify.SortUpdatedAt, dify.SortUpdatedAtDesc), Default: dify.SortUpdatedAtDesc},
}}

// listConversations is GET /conversations (docs/api §5), validated as
// ConversationApi.get does:
// ConversationListQuery.model_validate(request.args.to_dict()).
func (s *appServer) listConversations(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q, errs := conversationListQuery.Validate(pydantic.Query(r.URL.RawQuery))
	if len(errs) > 0 {
		writeError(w, pydanticError(conversationListQuery.Name, errs...))
		return
	}
	limit := q.Int("limit")
	rows, more, err := s.store.ListConversations(s.queryUser(r).ID, q.Str("last_id"), limit, q.Str("sort_by"))
	if err != nil {
		writeError(w, newError(http.StatusNotFound, "not_found", "Last Conversation Not Exists."))
		return
	}
	writeJSONBody(w, http.StatusOK, conversationPage(limit, more, rows))
}

// conversationPage is json.Marshal(dify.ConversationPage{…}) of rows, put
// together from each row's JSON as the store keeps it
// (TestConversationPageIsMarshal), with room for writeJSONBody's newline.
func conversationPage(limit int, more bool, rows []store.ListedConversation) []byte {
	n := len(`{"limit":,"has_more":false,"data":[]}`+"\n") + 20
	for _, r := range rows {
		n += len(r.JSON) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"limit":`...)
	b = strconv.AppendInt(b, int64(limit), 10)
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, more)
	b = append(b, `,"data":[`...)
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.JSON...)
	}
	return append(b, "]}"...)
}

// messageListQuery is MessageListQuery
// (api/controllers/service_api/app/message.py).
var messageListQuery = pydantic.Model{Name: "MessageListQuery", Fields: []pydantic.Field{
	{Name: "conversation_id", Rule: pydantic.UUIDStrOrEmpty, Required: true},
	{Name: "first_id", Rule: pydantic.UUIDStrOrEmpty, Default: ""},
	limitField,
}}

// listMessages is GET /messages (docs/api §6), validated as
// MessageListApi.get does with MessageListQuery.
func (s *appServer) listMessages(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q, errs := messageListQuery.Validate(pydantic.Query(r.URL.RawQuery))
	if len(errs) > 0 {
		writeError(w, pydanticError(messageListQuery.Name, errs...))
		return
	}
	convID, firstID, limit := q.Str("conversation_id"), q.Str("first_id"), q.Int("limit")
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
	s.resignFiles(r, rows)
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

// conversationRenamePayload is ConversationRenamePayload
// (api/controllers/service_api/app/conversation.py): name: str | None,
// auto_generate: bool = False, and the model validator requiring a
// non-blank name unless auto_generate.
var conversationRenamePayload = pydantic.Model{Name: "ConversationRenamePayload",
	Fields: []pydantic.Field{
		{Name: "name", Rule: pydantic.StrRule, Optional: true, Default: ""},
		{Name: "auto_generate", Rule: pydantic.BoolRule, Default: false},
	},
	Check: func(v pydantic.Values, d *pydantic.Dict) *pydantic.Error {
		if !v.Bool("auto_generate") && strings.TrimSpace(v.Str("name")) == "" {
			return &pydantic.Error{Msg: "Value error, name is required when auto_generate is false", Type: "value_error", Input: d}
		}
		return nil
	},
}

// renameConversation is POST /conversations/:id/name (docs/api §7), validated
// as ConversationRenameApi.post does: `user` from the JSON body, then
// ConversationRenamePayload.
func (s *appServer) renameConversation(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "conversation_id")
	if !ok {
		return
	}
	user, p, e := readUserPayload(w, r, false, conversationRenamePayload)
	if e != nil {
		writeError(w, e)
		return
	}
	name, auto := p.Str("name"), p.Bool("auto_generate")
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
func (s *appServer) deleteConversation(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "conversation_id")
	if !ok {
		return
	}
	body, e := readJSON(w, r)
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
func (s *appServer) suggested(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "message_id")
	if !ok {
		return
	}
	user := r.URL.Query().Get("user")
	if user == "" {
		writeError(w, errUserRequired)
		return
	}
	// MessageService.get_suggested_questions_after_answer looks the
	// message up (MessageNotExistsError, 404) before it reads the app's
	// setting (SuggestedQuestionsAfterAnswerDisabledError, 403).
	_, name, err := s.store.Message(id, s.store.EndUser(user).ID)
	if err != nil {
		writeError(w, errMessageNotFound)
		return
	}
	if !s.app.Parameters.SuggestedQuestionsAfterAnswer.Enabled {
		writeError(w, errSuggestedDisabled)
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

// GeneratedConversationName is the name the mock gives a conversation
// whose first query is query, when the client asks for a generated name
// (auto_generate_name, the default): Dify asks a model; the mock takes the
// query with white space collapsed, cut to 47 characters plus "..." when
// longer than 50 (docs/mock/api-coverage.md).
// Tests of clients use it to expect the name.
func GeneratedConversationName(query string) string { return store.GenerateName(query) }
