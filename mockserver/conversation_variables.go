package mockserver

import (
	"net/http"
	"strings"
	"unicode"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
)

// Conversation variables (docs/api §31), after Dify's conversation.py
// ConversationVariablesApi.get and ConversationVariableDetailApi.put with
// ConversationService.get_conversational_variable and
// update_conversation_variable. Only chat, agent-chat and advanced-chat
// apps may call them: an `agent` app gets 400 not_chat_app, checked right
// after authentication as the released controller does. Dify creates
// conversation variables only for workflow (Chatflow) apps, so an
// agent-chat conversation has none: the list is empty and every update
// finds no variable.

var errNotChatApp = newError(http.StatusBadRequest, "not_chat_app", "Please check if your app mode matches the right API route.")

// listConversationVariables is GET /conversations/:id/variables.
func (s *appServer) listConversationVariables(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "conversation_id")
	if !ok {
		return
	}
	if s.mode != dify.ModeAgentChat {
		writeError(w, errNotChatApp)
		return
	}
	q, errs := conversationVariablesQuery.Validate(pydantic.Query(r.URL.RawQuery))
	if len(errs) > 0 {
		writeError(w, pydanticError(conversationVariablesQuery.Name, errs...))
		return
	}
	lastID, limit := q.Str("last_id"), q.Int("limit")
	if _, err := s.store.Conversation(id, s.queryUser(r).ID); err != nil {
		writeError(w, errConvNotFound)
		return
	}
	if lastID != "" {
		// ConversationVariableNotExistsError, which this handler does not
		// catch: a bare ValueError subclass → 400 invalid_param, no message.
		writeError(w, invalidParam(""))
		return
	}
	writeJSON(w, http.StatusOK, dify.ConversationVariablePage{Limit: limit, HasMore: false, Data: []dify.ConversationVariable{}})
}

// conversationVariablesQuery is ConversationVariablesQuery
// (api/controllers/service_api/app/conversation.py): the conversation
// list's cursor and limit, and variable_name (1–255 safe characters).
var conversationVariablesQuery = pydantic.Model{Name: "ConversationVariablesQuery", Fields: []pydantic.Field{
	lastIDField,
	limitField,
	{Name: "variable_name", Rule: variableName},
}}

// variableName is ConversationVariablesQuery's variable_name checks:
// length 1–255, then validate_variable_name.
func variableName(_ string, value any) (any, []pydantic.Error) {
	v, _ := value.(string) // a query value
	if e := variableNameError(v); e != nil {
		return nil, []pydantic.Error{*e}
	}
	return v, nil
}

func variableNameError(v string) *pydantic.Error {
	n := len([]rune(v))
	switch {
	case n < 1:
		return &pydantic.Error{Loc: "variable_name", Msg: "String should have at least 1 character", Type: "string_too_short", Input: v}
	case n > 255:
		return &pydantic.Error{Loc: "variable_name", Msg: "String should have at most 255 characters", Type: "string_too_long", Input: v}
	}
	stripped := strings.NewReplacer("-", "", "_", "", ".", "").Replace(v)
	alnum := stripped != ""
	for _, r := range stripped {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			alnum = false
		}
	}
	if !alnum {
		return &pydantic.Error{Loc: "variable_name", Msg: "Value error, Variable name can only contain letters, numbers, hyphens (-), underscores (_), and periods (.)", Type: "value_error", Input: v}
	}
	lower := strings.ToLower(v)
	for _, p := range []string{"'", `"`, ";", "--", "/*", "*/", "xp_", "sp_"} {
		if strings.Contains(lower, p) {
			return &pydantic.Error{Loc: "variable_name", Msg: "Value error, Variable name contains invalid characters: " + p, Type: "value_error", Input: v}
		}
	}
	return nil
}

// updateConversationVariable is PUT /conversations/:id/variables/:variable_id.
func (s *appServer) updateConversationVariable(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "conversation_id")
	if !ok {
		return
	}
	if _, ok := pathUUID(w, ps, "variable_id"); !ok {
		return
	}
	body, raw, e := readJSONRaw(w, r) // validate_app_token reads `user` from the JSON body first
	if e != nil {
		writeError(w, e)
		return
	}
	user, e := body.user(false)
	if e != nil {
		writeError(w, e)
		return
	}
	if s.mode != dify.ModeAgentChat {
		writeError(w, errNotChatApp)
		return
	}
	// ConversationVariableUpdatePayload: value: Any, required (null is a value).
	if _, present := body["value"]; !present {
		writeError(w, pydanticError("ConversationVariableUpdatePayload",
			pydantic.Error{Loc: "value", Msg: "Field required", Type: "missing", Input: pydantic.Body(raw)}))
		return
	}
	if _, err := s.store.Conversation(id, s.store.EndUser(user).ID); err != nil {
		writeError(w, errConvNotFound)
		return
	}
	writeError(w, newError(http.StatusNotFound, "not_found", "Conversation Variable Not Exists."))
}
