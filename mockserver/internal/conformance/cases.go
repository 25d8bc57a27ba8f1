package conformance

import "strings"

// Texts Dify's stack produces, shared by several cases.
const (
	// Werkzeug's UnsupportedMediaType from Request.get_json() when the
	// Content-Type is not JSON (werkzeug/wrappers/request.py
	// on_json_loading_failed(None)).
	MsgNotJSON = "Did not attempt to load JSON data because the request Content-Type was not 'application/json'."
	// Flask's Request.on_json_loading_failed re-raises a bare BadRequest
	// outside debug mode, so a body that is not JSON gets Werkzeug's
	// default BadRequest text (libs/external_api.py only rewrites the
	// debug-mode "Failed to decode JSON object" text).
	MsgBadRequest = "The browser (or proxy) sent a request that this server could not understand."
	// Werkzeug's NotFound / MethodNotAllowed descriptions.
	MsgNotFound         = "The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again."
	MsgMethodNotAllowed = "The method is not allowed for the requested URL."
	MsgUserRequired     = "Arg user must be provided."
)

// Source files cited by the cases (langgenius/dify, SourceVersion).
const (
	srcWraps         = "api/controllers/service_api/wraps.py validate_app_token"
	srcExternalAPI   = "api/libs/external_api.py register_external_error_handlers"
	srcRouting       = "api/controllers/service_api/__init__.py (flask-restx Api without catch_all_404s; Werkzeug routing)"
	srcIndex         = "api/controllers/service_api/index.py IndexApi.get"
	srcChat          = "api/controllers/service_api/app/completion.py ChatApi.post, ChatRequestPayload"
	srcStop          = "api/controllers/service_api/app/completion.py ChatStopApi.post"
	srcRename        = "api/controllers/service_api/app/conversation.py ConversationRenameApi.post, ConversationRenamePayload"
	srcDelete        = "api/controllers/service_api/app/conversation.py ConversationDetailApi.delete"
	srcConvList      = "api/controllers/service_api/app/conversation.py ConversationApi.get, ConversationListQuery"
	srcMsgList       = "api/controllers/service_api/app/message.py MessageListApi.get, MessageListQuery"
	srcPrepareInputs = "api/core/app/apps/base_app_generator.py BaseAppGenerator._prepare_user_inputs"
	srcSuggested     = "api/controllers/service_api/app/message.py MessageSuggestedApi.get"
	srcTTS           = "api/controllers/service_api/app/audio.py TextToAudioApi.post"
	srcSTT           = "api/controllers/service_api/app/audio.py AudioApi.post"
	srcUpload        = "api/controllers/service_api/app/file.py FileApi.post"
	srcEndUser       = "api/controllers/service_api/end_user/end_user.py EndUserApi.get"
	srcAppInfo       = "api/controllers/service_api/app/app.py AppInfoApi.get"
	srcHelperUUID    = "api/libs/helper.py uuid_value / UUIDStrOrEmpty"
	srcPydanticBool  = "pydantic 2 lax-mode bool parsing (str_to_bool)"
)

// PydanticError renders one pydantic v2 validation error the way
// str(ValidationError) does (pydantic_core ValidationError.__str__), with
// the documentation URL of pydantic 2.12; loc "" is a model-level error.
// input is the Python repr of the offending input, already truncated.
func PydanticError(model, loc, msg, typ, input, inputType string) string {
	var b strings.Builder
	b.WriteString("1 validation error for " + model + "\n")
	if loc != "" {
		b.WriteString(loc + "\n")
	}
	b.WriteString("  " + msg + " [type=" + typ + ", input_value=" + input + ", input_type=" + inputType + "]\n")
	b.WriteString("    For further information visit https://errors.pydantic.dev/2.12/v/" + typ)
	return b.String()
}

var jsonCT = map[string]string{"Content-Type": "application/json"}

func hdr(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// Cases returns the table, in the order it must run: cases that delete
// the fixture conversation come last.
func Cases() []Case {
	var cs []Case
	add := func(c ...Case) { cs = append(cs, c...) }

	// --- Routing: Werkzeug answers before any Dify code runs. ---
	add(
		Case{Name: "routing/unknown-path-html-404", Route: "GET /nope", Class: ClassRouting, Source: srcRouting,
			Request: Request{Method: "GET", Path: "/nope"},
			Expect:  Expect{Status: 404, ContentType: "text/html", BodyContains: "<title>404 Not Found</title>"},
			Note:    "The Service API's Api does not set catch_all_404s, so unmatched URLs get Flask's HTML page, not the JSON envelope."},
		Case{Name: "routing/unknown-path-no-auth-html-404", Route: "GET /nope", Class: ClassRouting, Source: srcRouting,
			Request: Request{Method: "GET", Path: "/nope", NoAuth: true},
			Expect:  Expect{Status: 404, ContentType: "text/html", BodyContains: MsgNotFound}},
		Case{Name: "routing/trailing-slash-404", Route: "GET /info/", Class: ClassRouting, Source: srcRouting,
			Request: Request{Method: "GET", Path: "/info/"},
			Expect:  Expect{Status: 404, ContentType: "text/html"},
			Note:    "Werkzeug rules without a trailing slash do not match one (no redirect)."},
		Case{Name: "routing/v1-redirects-to-v1-slash", Route: "GET /v1", Class: ClassRouting, Source: srcRouting + "; werkzeug strict_slashes RequestRedirect",
			Request: Request{Method: "GET", Path: "", NoAuth: true},
			Expect:  Expect{Status: 308, Location: "/v1/"}},
		Case{Name: "routing/index-no-auth", Route: "GET /", Class: ClassValid, Source: srcIndex,
			Request: Request{Method: "GET", Path: "/", NoAuth: true},
			Expect: Expect{Status: 200, ContentType: "application/json",
				Fields: map[string]string{"$.welcome": "string", "$.api_version": "string", "$.server_version": "string"}}},
		Case{Name: "routing/non-uuid-path-html-404", Route: "GET /messages/{message_id}/suggested", Class: ClassUUID, Source: srcRouting + "; <uuid:message_id> converter",
			Request: Request{Method: "GET", Path: "/messages/not-a-uuid/suggested?user={user}"},
			Expect:  Expect{Status: 404, ContentType: "text/html"}},
		Case{Name: "routing/braced-uuid-path-html-404", Route: "POST /conversations/{id}/name", Class: ClassUUID, Source: srcRouting + "; <uuid:c_id> converter (hyphenated hex only)",
			Request: Request{Method: "POST", Path: "/conversations/%7B{unknown_uuid}%7D/name", Header: jsonCT, Body: `{"name":"x","user":"{user}"}`},
			Expect:  Expect{Status: 404, ContentType: "text/html"}},
		Case{Name: "method/delete-info-405", Route: "DELETE /info", Class: ClassMethod, Source: "flask-restx Api._should_use_fr_error_handler (405 on an Api route) + " + srcExternalAPI,
			Request: Request{Method: "DELETE", Path: "/info"},
			Expect:  Expect{Status: 405, ContentType: "application/json", Code: "method_not_allowed", Message: MsgMethodNotAllowed}},
	)

	// --- Auth (validate_app_token / validate_and_get_api_token). ---
	add(
		Case{Name: "auth/missing-header", Route: "GET /info", Class: ClassAuth, Source: "api/controllers/service_api/wraps.py validate_and_get_api_token",
			Request: Request{Method: "GET", Path: "/info", NoAuth: true},
			Expect:  Expect{Status: 401, Code: "unauthorized", Message: "Authorization header must be provided and start with 'Bearer'"}},
		Case{Name: "auth/basic-scheme", Route: "GET /info", Class: ClassAuth, Source: "api/controllers/service_api/wraps.py validate_and_get_api_token",
			Request: Request{Method: "GET", Path: "/info", Header: hdr("Authorization", "Basic {key}")},
			Expect:  Expect{Status: 401, Code: "unauthorized", Message: "Authorization scheme must be 'Bearer'"}},
		Case{Name: "auth/lowercase-bearer", Route: "GET /info", Class: ClassAuth, Source: "api/controllers/service_api/wraps.py validate_and_get_api_token (auth_scheme.lower())",
			Request: Request{Method: "GET", Path: "/info", Header: hdr("Authorization", "bearer {key}")},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.mode": "string"}}},
		Case{Name: "auth/unknown-key", Route: "GET /info", Class: ClassAuth, Source: "api/controllers/service_api/wraps.py validate_and_get_api_token",
			Request: Request{Method: "GET", Path: "/info", Header: hdr("Authorization", "Bearer app-conformance-unknown-key")},
			Expect:  Expect{Status: 401, Code: "unauthorized", Message: "Access token is invalid"}},
	)

	// --- Content type: get_json() without a JSON Content-Type → 415. ---
	type jsonRoute struct{ route, method, path, body, source string }
	for _, jr := range []jsonRoute{
		{"POST /chat-messages", "POST", "/chat-messages", `{"query":"hi","inputs":{},"user":"{user}","response_mode":"streaming"}`, srcWraps + " (FetchUserArg JSON) → request.get_json(); " + srcChat},
		{"POST /chat-messages/{task_id}/stop", "POST", "/chat-messages/conformance-task/stop", `{"user":"{user}"}`, srcWraps + " (FetchUserArg JSON); " + srcStop},
		{"POST /conversations/{id}/name", "POST", "/conversations/{unknown_uuid}/name", `{"name":"x","user":"{user}"}`, srcWraps + " (FetchUserArg JSON); " + srcRename},
		{"DELETE /conversations/{id}", "DELETE", "/conversations/{unknown_uuid}", `{"user":"{user}"}`, srcWraps + " (FetchUserArg JSON); " + srcDelete},
		{"POST /text-to-audio", "POST", "/text-to-audio", `{"text":"hi","user":"{user}"}`, srcWraps + " (FetchUserArg JSON); " + srcTTS},
	} {
		slug := "/" + strings.Trim(strings.NewReplacer("/", "-", " ", "-", "{", "", "}", "").Replace(strings.ToLower(jr.route)), "-")
		slug = strings.ReplaceAll(slug, "--", "-")
		add(
			Case{Name: "content-type/none" + slug, Route: jr.route, Class: ClassContentType, Source: jr.source,
				Request: Request{Method: jr.method, Path: jr.path, Body: jr.body},
				Expect:  Expect{Status: 415, ContentType: "application/json", Code: "unsupported_media_type", Message: MsgNotJSON}},
			Case{Name: "content-type/text-plain" + slug, Route: jr.route, Class: ClassContentType, Source: jr.source,
				Request: Request{Method: jr.method, Path: jr.path, Body: jr.body, Header: hdr("Content-Type", "text/plain")},
				Expect:  Expect{Status: 415, Code: "unsupported_media_type", Message: MsgNotJSON}},
			Case{Name: "empty/json-body-empty" + slug, Route: jr.route, Class: ClassEmpty, Source: jr.source + "; Flask Request.on_json_loading_failed",
				Request: Request{Method: jr.method, Path: jr.path, Header: jsonCT},
				Expect:  Expect{Status: 400, Code: "bad_request", Message: MsgBadRequest}},
			Case{Name: "wrong-type/json-malformed" + slug, Route: jr.route, Class: ClassWrongType, Source: jr.source + "; Flask Request.on_json_loading_failed",
				Request: Request{Method: jr.method, Path: jr.path, Header: jsonCT, Body: `{"user":`},
				Expect:  Expect{Status: 400, Code: "bad_request", Message: MsgBadRequest}},
		)
	}
	add(
		Case{Name: "content-type/json-with-charset-accepted", Route: "POST /conversations/{id}/name", Class: ClassContentType, Source: "werkzeug Request.is_json; " + srcRename,
			Request: Request{Method: "POST", Path: "/conversations/{conversation_id}/name", Header: hdr("Content-Type", "application/json; charset=utf-8"), Body: `{"name":"conformance","user":"{user}"}`},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.id": "string", "$.name": "string"}}},
		Case{Name: "content-type/plus-json-accepted", Route: "POST /conversations/{id}/name", Class: ClassContentType, Source: "werkzeug Request.is_json (application/*+json); " + srcRename,
			Request: Request{Method: "POST", Path: "/conversations/{conversation_id}/name", Header: hdr("Content-Type", "application/vnd.conformance+json"), Body: `{"name":"conformance","user":"{user}"}`},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 200, ContentType: "application/json"}},
	)

	// --- user: where each route reads it. ---
	add(
		Case{Name: "missing/chat-user", Route: "POST /chat-messages", Class: ClassMissing, Source: srcWraps + " (required=True)",
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":"hi","inputs":{},"response_mode":"streaming"}`},
			Expect:  Expect{Status: 400, Code: "invalid_param", Message: MsgUserRequired}},
		Case{Name: "empty/chat-user", Route: "POST /chat-messages", Class: ClassEmpty, Source: srcWraps + " (`if not user_id`)",
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":"hi","inputs":{},"user":"","response_mode":"streaming"}`},
			Expect:  Expect{Status: 400, Code: "invalid_param", Message: MsgUserRequired}},
		Case{Name: "missing/stop-user", Route: "POST /chat-messages/{task_id}/stop", Class: ClassMissing, Source: srcWraps + " (required=True); " + srcStop,
			Request: Request{Method: "POST", Path: "/chat-messages/conformance-task/stop", Header: jsonCT, Body: `{}`},
			Expect:  Expect{Status: 400, Code: "invalid_param", Message: MsgUserRequired}},
		Case{Name: "valid/stop-unknown-task", Route: "POST /chat-messages/{task_id}/stop", Class: ClassState, Source: srcStop,
			Request: Request{Method: "POST", Path: "/chat-messages/conformance-task/stop", Header: jsonCT, Body: `{"user":"{user}"}`},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.result": "string"}}},
		Case{Name: "missing/suggested-user", Route: "GET /messages/{id}/suggested", Class: ClassMissing, Source: srcWraps + " (QUERY, required=True); " + srcSuggested,
			Request: Request{Method: "GET", Path: "/messages/{unknown_uuid}/suggested"},
			Expect:  Expect{Status: 400, Code: "invalid_param", Message: MsgUserRequired}},
	)

	// --- pydantic models: lax booleans, types, UUIDs. ---
	add(
		Case{Name: "wrong-type/rename-auto-generate-string-true", Route: "POST /conversations/{id}/name", Class: ClassWrongType, Source: srcRename + "; " + srcPydanticBool,
			Request: Request{Method: "POST", Path: "/conversations/{conversation_id}/name", Header: jsonCT, Body: `{"auto_generate":"true","user":"{user}"}`},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.name": "string"}}},
		Case{Name: "wrong-type/rename-auto-generate-unparsable", Route: "POST /conversations/{id}/name", Class: ClassWrongType, Source: srcRename + "; " + srcPydanticBool,
			Request: Request{Method: "POST", Path: "/conversations/{conversation_id}/name", Header: jsonCT, Body: `{"name":"x","auto_generate":"maybe","user":"{user}"}`},
			Needs:   []Fixture{FixtureConversation},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ConversationRenamePayload", "auto_generate", "Input should be a valid boolean, unable to interpret input", "bool_parsing", "'maybe'", "str")}},
		Case{Name: "wrong-type/rename-name-number", Route: "POST /conversations/{id}/name", Class: ClassWrongType, Source: srcRename,
			Request: Request{Method: "POST", Path: "/conversations/{conversation_id}/name", Header: jsonCT, Body: `{"name":5,"user":"{user}"}`},
			Needs:   []Fixture{FixtureConversation},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ConversationRenamePayload", "name", "Input should be a valid string", "string_type", "5", "int")}},
		Case{Name: "wrong-type/chat-response-mode", Route: "POST /chat-messages", Class: ClassWrongType, Source: srcChat,
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":"hi","inputs":{},"user":"{user}","response_mode":"fast"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ChatRequestPayload", "response_mode", "Input should be 'blocking' or 'streaming'", "literal_error", "'fast'", "str")}},
		Case{Name: "wrong-type/chat-query-number", Route: "POST /chat-messages", Class: ClassWrongType, Source: srcChat,
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":5,"inputs":{},"user":"{user}","response_mode":"streaming"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ChatRequestPayload", "query", "Input should be a valid string", "string_type", "5", "int")}},
		Case{Name: "wrong-type/chat-inputs-list", Route: "POST /chat-messages", Class: ClassWrongType, Source: srcChat,
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":"hi","inputs":[],"user":"{user}","response_mode":"streaming"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ChatRequestPayload", "inputs", "Input should be a valid dictionary", "dict_type", "[]", "list")}},
		Case{Name: "wrong-type/chat-auto-generate-name-unparsable", Route: "POST /chat-messages", Class: ClassWrongType, Source: srcChat + "; " + srcPydanticBool,
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":"hi","inputs":{},"user":"{user}","response_mode":"streaming","auto_generate_name":"maybe"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ChatRequestPayload", "auto_generate_name", "Input should be a valid boolean, unable to interpret input", "bool_parsing", "'maybe'", "str")}},
		Case{Name: "uuid/chat-conversation-id-garbage", Route: "POST /chat-messages", Class: ClassUUID, Source: srcChat + " normalize_conversation_id; " + srcHelperUUID,
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":"hi","inputs":{},"user":"{user}","response_mode":"streaming","conversation_id":"abc"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ChatRequestPayload", "conversation_id", "Value error, conversation_id must be a valid UUID", "value_error", "'abc'", "str")}},
		Case{Name: "uuid/chat-conversation-id-unknown", Route: "POST /chat-messages", Class: ClassState, Source: srcChat + " (ConversationService.get_conversation before generating)",
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":"hi","inputs":{},"user":"{user}","response_mode":"streaming","conversation_id":"{unknown_uuid}"}`},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."}},
		Case{Name: "uuid/messages-conversation-id-garbage", Route: "GET /messages", Class: ClassUUID, Source: srcMsgList + "; " + srcHelperUUID,
			Request: Request{Method: "GET", Path: "/messages?user={user}&conversation_id=abc"},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("MessageListQuery", "conversation_id", "Value error, must be a valid UUID", "value_error", "'abc'", "str")}},
		Case{Name: "bounds/conversations-limit-101", Route: "GET /conversations", Class: ClassBounds, Source: srcConvList,
			Request: Request{Method: "GET", Path: "/conversations?user={user}&limit=101"},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ConversationListQuery", "limit", "Input should be less than or equal to 100", "less_than_equal", "'101'", "str")}},
		Case{Name: "bounds/conversations-limit-0", Route: "GET /conversations", Class: ClassBounds, Source: srcConvList,
			Request: Request{Method: "GET", Path: "/conversations?user={user}&limit=0"},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ConversationListQuery", "limit", "Input should be greater than or equal to 1", "greater_than_equal", "'0'", "str")}},
		Case{Name: "bounds/conversations-limit-100", Route: "GET /conversations", Class: ClassBounds, Source: srcConvList,
			Request: Request{Method: "GET", Path: "/conversations?user={user}&limit=100"},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.limit": "number", "$.has_more": "boolean", "$.data": "array"}}},
		Case{Name: "extra/conversations-unknown-params", Route: "GET /conversations", Class: ClassExtra, Source: srcConvList + " (pydantic extra=ignore)",
			Request: Request{Method: "GET", Path: "/conversations?user={user}&first_id=&pinned=false&conformance=1"},
			Expect:  Expect{Status: 200, ContentType: "application/json"}},
	)

	// --- Existing state. ---
	add(
		// The fixture's turn also sends FixtureStrayInput, a key no app's
		// form has: Dify keeps one key per form variable and drops the rest.
		Case{Name: "extra/stored-inputs-form-keys-only", Route: "GET /messages", Class: ClassExtra,
			Source:  srcPrepareInputs + "; " + srcMsgList,
			Request: Request{Method: "GET", Path: "/messages?user={user}&conversation_id={conversation_id}"},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.data[].inputs": "object"}, Absent: []string{"$.data[].inputs." + FixtureStrayInput}}},
		Case{Name: "extra/conversation-inputs-form-keys-only", Route: "GET /conversations", Class: ClassExtra,
			Source:  srcPrepareInputs + "; " + srcConvList,
			Request: Request{Method: "GET", Path: "/conversations?user={user}&limit=100"},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.data[].inputs": "object"}, Absent: []string{"$.data[].inputs." + FixtureStrayInput}}},
		Case{Name: "valid/messages-history", Route: "GET /messages", Class: ClassValid, Source: srcMsgList + "; api/fields/message_fields.py MessageListItem",
			Request: Request{Method: "GET", Path: "/messages?user={user}&conversation_id={conversation_id}"},
			Needs:   []Fixture{FixtureConversation},
			Expect: Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{
				"$.limit": "number", "$.has_more": "boolean", "$.data[].id": "string", "$.data[].conversation_id": "string",
				"$.data[].parent_message_id": "string", "$.data[].answer": "string", "$.data[].feedback": "null",
				"$.data[].agent_thoughts": "array", "$.data[].message_files": "array", "$.data[].created_at": "number",
				"$.data[].status": "string", "$.data[].retriever_resources": "array"}},
			Note: "Service API messages get parent_message_id = UUID_NIL (api/core/app/apps/message_based_app_generator.py _init_generate_records)."},
		Case{Name: "state/suggested-disabled-403", Route: "GET /messages/{id}/suggested", Class: ClassFeature, Source: srcSuggested + " (SuggestedQuestionsAfterAnswerDisabledError → 403)",
			Request:  Request{Method: "GET", Path: "/messages/{message_id}/suggested?user={user}"},
			Needs:    []Fixture{FixtureMessage},
			Requires: Requirements{Features: map[string]bool{"suggested_questions_after_answer": false}},
			Expect:   Expect{Status: 403, Code: "app_suggested_questions_after_answer_disabled", Message: "*"}},
		Case{Name: "missing/tts-text-before-disabled", Route: "POST /text-to-audio", Class: ClassMissing, Source: srcTTS + "; api/services/audio_service.py AudioService.transcript_tts (text None: \"Text is required\" before invoke_tts reads the app's setting)",
			Request:  Request{Method: "POST", Path: "/text-to-audio", Header: jsonCT, Body: `{"user":"{user}"}`},
			Requires: Requirements{Features: map[string]bool{"text_to_speech": false}},
			Expect:   Expect{Status: 400, Code: "invalid_param", Message: "Text is required"}},
		Case{Name: "state/suggested-unknown-message-before-disabled", Route: "GET /messages/{id}/suggested", Class: ClassState, Source: srcSuggested + "; api/services/message_service.py MessageService.get_suggested_questions_after_answer (get_message before the app's setting)",
			Request:  Request{Method: "GET", Path: "/messages/{unknown_uuid}/suggested?user={user}"},
			Requires: Requirements{Features: map[string]bool{"suggested_questions_after_answer": false}},
			Expect:   Expect{Status: 404, Code: "not_found", Message: "Message Not Exists."}},
		Case{Name: "valid/suggested-enabled", Route: "GET /messages/{id}/suggested", Class: ClassValid, Source: srcSuggested,
			Request:  Request{Method: "GET", Path: "/messages/{message_id}/suggested?user={user}"},
			Needs:    []Fixture{FixtureMessage},
			Requires: Requirements{Features: map[string]bool{"suggested_questions_after_answer": true}},
			Expect:   Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.result": "string", "$.data": ""}}},
		Case{Name: "valid/end-user", Route: "GET /end-users/{id}", Class: ClassValid, Source: srcEndUser,
			Request: Request{Method: "GET", Path: "/end-users/{end_user_id}"},
			Needs:   []Fixture{FixtureEndUser},
			Expect: Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{
				"$.id": "string", "$.type": "string", "$.session_id": "string", "$.is_anonymous": "boolean", "$.created_at": "string"}}},
		Case{Name: "state/end-user-unknown", Route: "GET /end-users/{id}", Class: ClassState, Source: srcEndUser,
			Request: Request{Method: "GET", Path: "/end-users/{unknown_uuid}"},
			Expect:  Expect{Status: 404, Code: "end_user_not_found", Message: "End user not found."}},
		Case{Name: "valid/info", Route: "GET /info", Class: ClassValid, Source: srcAppInfo,
			Request: Request{Method: "GET", Path: "/info?user={user}"},
			Expect: Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{
				"$.name": "string", "$.description": "string", "$.tags": "", "$.mode": "string", "$.author_name": "string"}}},
	)

	// --- App description and more routing/extra cases. ---
	add(
		Case{Name: "valid/parameters", Route: "GET /parameters", Class: ClassValid, Source: "api/controllers/service_api/app/app.py AppParameterApi.get",
			Request: Request{Method: "GET", Path: "/parameters"},
			Expect: Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{
				"$.user_input_form": "array", "$.suggested_questions_after_answer.enabled": "boolean", "$.file_upload": "object", "$.system_parameters": "object"}}},
		Case{Name: "valid/meta", Route: "GET /meta", Class: ClassValid, Source: "api/controllers/service_api/app/app.py AppMetaApi.get",
			Request: Request{Method: "GET", Path: "/meta"},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.tool_icons": "object"}}},
		Case{Name: "valid/site", Route: "GET /site", Class: ClassValid, Source: "api/controllers/service_api/app/site.py AppSiteApi.get",
			Request: Request{Method: "GET", Path: "/site"},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.title": "string", "$.icon_type": ""}}},
		Case{Name: "uuid/end-user-path-garbage", Route: "GET /end-users/{id}", Class: ClassUUID, Source: srcRouting + "; <uuid:end_user_id> converter",
			Request: Request{Method: "GET", Path: "/end-users/not-a-uuid"},
			Expect:  Expect{Status: 404, ContentType: "text/html"}},
		Case{Name: "uuid/delete-path-uppercase", Route: "DELETE /conversations/{id}", Class: ClassUUID, Source: srcRouting + "; <uuid:c_id> converter (any case)",
			Request: Request{Method: "DELETE", Path: "/conversations/ABCDEF00-0000-4000-8000-000000000000", Header: jsonCT, Body: `{"user":"{user}"}`},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."},
			Note:    "Upper-case hex passes the route converter; the lookup then fails."},
		Case{Name: "extra/rename-unknown-keys", Route: "POST /conversations/{id}/name", Class: ClassExtra, Source: srcRename + " (pydantic extra=ignore)",
			Request: Request{Method: "POST", Path: "/conversations/{conversation_id}/name", Header: jsonCT, Body: `{"name":"conformance","user":"{user}","pinned":true,"x":[1]}`},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 200, ContentType: "application/json"}},
		Case{Name: "method/put-conversation-405", Route: "PUT /conversations/{id}", Class: ClassMethod, Source: "flask-restx Api._should_use_fr_error_handler",
			Request: Request{Method: "PUT", Path: "/conversations/{unknown_uuid}", Header: jsonCT, Body: `{"user":"{user}"}`},
			Expect:  Expect{Status: 405}},
	)

	// --- Uploads. ---
	add(
		Case{Name: "missing/upload-no-file", Route: "POST /files/upload", Class: ClassMissing, Source: srcUpload,
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: []Part{{Field: "user", Data: "{user}"}}},
			Expect:  Expect{Status: 400, Code: "no_file_uploaded", Message: "Please upload your file."}},
		Case{Name: "valid/upload", Route: "POST /files/upload", Class: ClassValid, Source: srcUpload + "; api/fields/file_fields.py FileResponse",
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: []Part{{Field: "user", Data: "{user}"}, {Field: "file", Filename: "conformance.txt", ContentType: "text/plain", Data: "hello"}}},
			Expect: Expect{Status: 201, ContentType: "application/json", Fields: map[string]string{
				"$.id": "string", "$.name": "string", "$.size": "number", "$.extension": "string", "$.mime_type": "string",
				"$.created_by": "string", "$.created_at": "number"}}},
	)

	// --- More chat-payload classes (ChatRequestPayload, pydantic). ---
	chat := func(extra string) string {
		return `{"query":"hi","inputs":{},"user":"{user}","response_mode":"streaming"` + extra + `}`
	}
	add(
		Case{Name: "null/chat-inputs", Route: "POST /chat-messages", Class: ClassNull, Source: srcChat,
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":"hi","inputs":null,"user":"{user}","response_mode":"streaming"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ChatRequestPayload", "inputs", "Input should be a valid dictionary", "dict_type", "None", "NoneType")}},
		Case{Name: "null/chat-query", Route: "POST /chat-messages", Class: ClassNull, Source: srcChat,
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":null,"inputs":{},"user":"{user}","response_mode":"streaming"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ChatRequestPayload", "query", "Input should be a valid string", "string_type", "None", "NoneType")}},
		Case{Name: "wrong-type/chat-files-string", Route: "POST /chat-messages", Class: ClassWrongType, Source: srcChat + " (files: list[dict] | None)",
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: chat(`,"files":"x"`)},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ChatRequestPayload", "files", "Input should be a valid list", "list_type", "'x'", "str")}},
		Case{Name: "wrong-type/chat-files-item", Route: "POST /chat-messages", Class: ClassWrongType, Source: srcChat + " (files: list[dict] | None)",
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: chat(`,"files":[1]`)},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ChatRequestPayload", "files.0", "Input should be a valid dictionary", "dict_type", "1", "int")}},
		Case{Name: "uuid/chat-conversation-id-braced", Route: "POST /chat-messages", Class: ClassUUID, Source: srcChat + " normalize_conversation_id; " + srcHelperUUID + " (Python uuid.UUID spellings)",
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: chat(`,"conversation_id":"{{unknown_uuid}}"`)},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."},
			Note:    "Braces are accepted as a UUID spelling, so the lookup (not the validation) fails."},
		Case{Name: "uuid/chat-conversation-id-urn", Route: "POST /chat-messages", Class: ClassUUID, Source: srcChat + " normalize_conversation_id; " + srcHelperUUID,
			Request: Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: chat(`,"conversation_id":" urn:uuid:{unknown_uuid} "`)},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."},
			Note:    "Surrounding whitespace is stripped before parsing."},
		Case{Name: "bounds/chat-blocking-on-new-agent", Route: "POST /chat-messages", Class: ClassBounds, Source: srcChat + " _resolve_agent_app_streaming",
			Request:  Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":"hi","inputs":{},"user":"{user}","response_mode":"blocking"}`},
			Requires: Requirements{Modes: []string{"agent"}},
			Expect:   Expect{Status: 400, Code: "bad_request", Message: "Agent App only supports streaming response mode."}},
		Case{Name: "bounds/chat-blocking-on-agent-chat", Route: "POST /chat-messages", Class: ClassBounds, Source: "api/core/app/apps/agent_chat/app_generator.py AgentChatAppGenerator.generate",
			Request:  Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":"hi","inputs":{},"user":"{user}","response_mode":"blocking"}`},
			Requires: Requirements{Modes: []string{"agent-chat"}},
			Expect:   Expect{Status: 400, Code: "invalid_param", Message: "Agent Chat App does not support blocking mode"}},
		Case{Name: "empty/chat-query-blank-new-agent", Route: "POST /chat-messages", Class: ClassEmpty, Source: "api/core/app/apps/agent_app/app_generator.py AgentAppGenerator.generate (not query.strip())",
			Request:  Request{Method: "POST", Path: "/chat-messages", Header: jsonCT, Body: `{"query":" \t ","inputs":{},"user":"{user}","response_mode":"streaming"}`},
			Requires: Requirements{Modes: []string{"agent"}},
			Expect:   Expect{Status: 400, Code: "invalid_param", Message: "query is required"},
			Note:     "The legacy agent-chat generator refuses only an empty query; a blank one runs a turn."},
		Case{Name: "wrong-type/stop-user-number-is-str", Route: "POST /chat-messages/{task_id}/stop", Class: ClassWrongType, Source: srcWraps + " (user_id = str(user_id))",
			Request:   Request{Method: "POST", Path: "/chat-messages/conformance-task/stop", Header: jsonCT, Body: `{"user":{user_number}}`},
			Expect:    Expect{Status: 200, ContentType: "application/json"},
			OtherUser: "a number as `user` makes Dify create the end user str(number), a second end user of the app"},
		Case{Name: "method/get-chat-messages-405", Route: "GET /chat-messages", Class: ClassMethod, Source: "flask-restx Api._should_use_fr_error_handler; " + srcExternalAPI,
			Request: Request{Method: "GET", Path: "/chat-messages"},
			Expect:  Expect{Status: 405},
			Note:    "flask-restx answers the JSON envelope (method_not_allowed); the newest tree's Blueprint handlers do not see routing errors, so only the status is common to both."},
	)

	// --- Listing queries (pydantic models over request.args.to_dict()). ---
	add(
		Case{Name: "uuid/conversations-last-id-garbage", Route: "GET /conversations", Class: ClassUUID, Source: srcConvList + " (last_id: UUID | None)",
			Request: Request{Method: "GET", Path: "/conversations?user={user}&last_id=zzz"},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ConversationListQuery", "last_id", "Input should be a valid UUID, invalid length: expected length 32 for simple format, found 3", "uuid_parsing", "'zzz'", "str")}},
		Case{Name: "uuid/conversations-last-id-urn", Route: "GET /conversations", Class: ClassUUID, Source: srcConvList + " (pydantic UUID accepts the urn:uuid: form)",
			Request: Request{Method: "GET", Path: "/conversations?user={user}&last_id=urn:uuid:{unknown_uuid}"},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Last Conversation Not Exists."}},
		Case{Name: "wrong-type/conversations-sort-by", Route: "GET /conversations", Class: ClassWrongType, Source: srcConvList,
			Request: Request{Method: "GET", Path: "/conversations?user={user}&sort_by=name"},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ConversationListQuery", "sort_by", "Input should be 'created_at', '-created_at', 'updated_at' or '-updated_at'", "literal_error", "'name'", "str")}},
		Case{Name: "wrong-type/messages-limit-text", Route: "GET /messages", Class: ClassWrongType, Source: srcMsgList,
			Request: Request{Method: "GET", Path: "/messages?user={user}&conversation_id={unknown_uuid}&limit=ten"},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("MessageListQuery", "limit", "Input should be a valid integer, unable to parse string as an integer", "int_parsing", "'ten'", "str")}},
		Case{Name: "state/messages-unknown-conversation", Route: "GET /messages", Class: ClassState, Source: srcMsgList,
			Request: Request{Method: "GET", Path: "/messages?user={user}&conversation_id={unknown_uuid}"},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."}},
		Case{Name: "state/messages-other-user", Route: "GET /messages", Class: ClassState, Source: srcMsgList + " (the conversation must be the user's)",
			Request:   Request{Method: "GET", Path: "/messages?user={user}-other&conversation_id={conversation_id}"},
			Needs:     []Fixture{FixtureConversation},
			Expect:    Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."},
			OtherUser: "a second end user of the app, to show it cannot read the run user's conversation"},
	)

	// --- Uploads (FileApi.post, FileService.upload_file). ---
	up := func(parts ...Part) []Part { return append([]Part{{Field: "user", Data: "{user}"}}, parts...) }
	add(
		Case{Name: "bounds/upload-two-file-fields", Route: "POST /files/upload", Class: ClassBounds, Source: srcUpload + " (len(request.files) > 1)",
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: up(Part{Field: "file", Filename: "a.txt", ContentType: "text/plain", Data: "a"}, Part{Field: "other", Filename: "b.txt", ContentType: "text/plain", Data: "b"})},
			Expect:  Expect{Status: 400, Code: "too_many_files", Message: "Only one file is allowed."}},
		Case{Name: "bounds/upload-same-field-twice", Route: "POST /files/upload", Class: ClassBounds, Source: srcUpload + " (request.files is a MultiDict: one key)",
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: up(Part{Field: "file", Filename: "a.txt", ContentType: "text/plain", Data: "a"}, Part{Field: "file", Filename: "b.txt", ContentType: "text/plain", Data: "b"})},
			Expect:  Expect{Status: 201, ContentType: "application/json", Fields: map[string]string{"$.name": "string"}}},
		Case{Name: "missing/upload-part-mimetype", Route: "POST /files/upload", Class: ClassMissing, Source: srcUpload + " (not file.mimetype)",
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: up(Part{Field: "file", Filename: "a.txt", Data: "a"})},
			Expect:  Expect{Status: 415, Code: "unsupported_file_type", Message: "File type not allowed."}},
		Case{Name: "empty/upload-filename", Route: "POST /files/upload", Class: ClassEmpty, Source: srcUpload + " (not file.filename)",
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: up(Part{Field: "file", Filename: "", ContentType: "text/plain", Data: "a"})},
			Expect:  Expect{Status: 400, Code: "filename_not_exists_error", Message: "The specified filename does not exist."}},
		Case{Name: "empty/upload-filename-without-extension", Route: "POST /files/upload", Class: ClassEmpty, Source: "api/services/file_service.py FileService.upload_file (os.path.splitext)",
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: up(Part{Field: "file", Filename: "README", ContentType: "text/plain", Data: "a"})},
			Expect:  Expect{Status: 201, ContentType: "application/json", Fields: map[string]string{"$.extension": "string"}},
			Note:    "The extension column is a string: \"\" when the name has none, never null."},
		Case{Name: "wrong-type/upload-filename-characters", Route: "POST /files/upload", Class: ClassWrongType, Source: "api/services/file_service.py FileService.upload_file (invalid characters → ValueError)",
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: up(Part{Field: "file", Filename: "a:b.txt", ContentType: "text/plain", Data: "a"})},
			Expect:  Expect{Status: 400, Code: "invalid_param", Message: "Filename contains invalid characters"}},
		Case{Name: "bounds/upload-image-over-limit", Route: "POST /files/upload", Class: ClassBounds, Source: "api/services/file_service.py FileService.upload_file, is_file_size_within_limit; " + srcUpload + " (FileTooLargeError)",
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: up(Part{Field: "file", Filename: "big.png", ContentType: "image/png", Size: 10<<20 + 1})},
			Expect:  Expect{Status: 413, Code: "file_too_large", Message: "*"},
			Note:    "Images are limited to UPLOAD_IMAGE_FILE_SIZE_LIMIT (10 MB by default). The message differs by release (\"File size exceeds limit\" newest; the unformatted class text before)."},
	)

	// --- Audio (AudioApi.post, TextToAudioApi.post, AudioService). ---
	add(
		Case{Name: "missing/audio-file-part", Route: "POST /audio-to-text", Class: ClassMissing, Source: srcSTT + " (request.files[\"file\"] → werkzeug BadRequestKeyError)",
			Request: Request{Method: "POST", Path: "/audio-to-text", Multipart: up()},
			Expect:  Expect{Status: 400, Code: "bad_request_key_error", Message: MsgBadRequest}},
		Case{Name: "wrong-type/audio-text-file", Route: "POST /audio-to-text", Class: ClassWrongType, Source: "api/services/audio_service.py AudioService.transcript_asr (MIME type)",
			Request:  Request{Method: "POST", Path: "/audio-to-text", Multipart: up(Part{Field: "file", Filename: "a.txt", ContentType: "text/plain", Data: "a"})},
			Requires: Requirements{Features: map[string]bool{"speech_to_text": true}},
			Expect:   Expect{Status: 415, Code: "unsupported_audio_type", Message: "Audio type not allowed."}},
		Case{Name: "feature/audio-disabled", Route: "POST /audio-to-text", Class: ClassFeature, Source: "api/services/audio_service.py AudioService.transcript_asr",
			Request:  Request{Method: "POST", Path: "/audio-to-text", Multipart: up(Part{Field: "file", Filename: "a.mp3", ContentType: "audio/mp3", Data: "ID3"})},
			Requires: Requirements{Features: map[string]bool{"speech_to_text": false}},
			Expect:   Expect{Status: 400},
			Note:     "Released servers answer invalid_param \"Speech to text is not enabled\", the newest speech_to_text_disabled; only the status is common."},
		Case{Name: "wrong-type/tts-text-number", Route: "POST /text-to-audio", Class: ClassWrongType, Source: srcTTS + " (TextToAudioPayload)",
			Request: Request{Method: "POST", Path: "/text-to-audio", Header: jsonCT, Body: `{"text":1,"user":"{user}"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("TextToAudioPayload", "text", "Input should be a valid string", "string_type", "1", "int")}},
		Case{Name: "valid/tts", Route: "POST /text-to-audio", Class: ClassValid, Source: srcTTS + "; api/services/audio_service.py AudioService.transcript_tts",
			Request:  Request{Method: "POST", Path: "/text-to-audio", Header: jsonCT, Body: `{"text":"Hello","user":"{user}","streaming":false}`},
			Requires: Requirements{Features: map[string]bool{"text_to_speech": true}},
			Expect:   Expect{Status: 200}},
	)

	// --- Message feedback (no app-mode gate, docs/api §25–§26). ---
	const srcFeedback = "api/controllers/service_api/app/message.py MessageFeedbackApi.post, MessageFeedbackPayload; api/services/message_service.py MessageService.create_feedback"
	add(
		Case{Name: "missing/feedback-user", Route: "POST /messages/{id}/feedbacks", Class: ClassMissing, Source: srcWraps + " (JSON, required=True); " + srcFeedback,
			Request: Request{Method: "POST", Path: "/messages/{message_id}/feedbacks", Header: jsonCT, Body: `{"rating":"like"}`},
			Needs:   []Fixture{FixtureMessage},
			Expect:  Expect{Status: 400, Code: "invalid_param", Message: MsgUserRequired}},
		Case{Name: "valid/feedback-like", Route: "POST /messages/{id}/feedbacks", Class: ClassValid, Source: srcFeedback,
			Request: Request{Method: "POST", Path: "/messages/{message_id}/feedbacks", Header: jsonCT, Body: `{"rating":"like","content":"conformance","user":"{user}"}`},
			Needs:   []Fixture{FixtureMessage},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.result": "string"}}},
		Case{Name: "valid/feedback-in-history", Route: "GET /messages", Class: ClassState, Source: srcMsgList + " (MessageListItem.feedback)",
			Request: Request{Method: "GET", Path: "/messages?user={user}&conversation_id={conversation_id}"},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 200, Fields: map[string]string{"$.data[].feedback": "object", "$.data[].feedback.rating": "string"}}},
		Case{Name: "stored/app-feedback-times", Route: "GET /app/feedbacks", Class: ClassStored,
			Source:  "api/controllers/service_api/app/message.py AppGetFeedbacksApi.get (AppFeedbackResponse created_at: str); api/services/message_service.py MessageService.get_all_messages_feedbacks (MessageFeedback.to_dict: isoformat() of naive sa.DateTime columns)",
			Request: Request{Method: "GET", Path: "/app/feedbacks?page=1&limit=101"},
			Needs:   []Fixture{FixtureMessage},
			Expect: Expect{Status: 200, ContentType: "application/json",
				Formats: map[string]string{"$.data[].created_at": FormatISONaive, "$.data[].updated_at": FormatISONaive}},
			Note: "Runs while the run's like is on the fixture message, so the list has at least that row; every row of the app (console feedback too) is written the same way."},
		Case{Name: "null/feedback-rating-revokes", Route: "POST /messages/{id}/feedbacks", Class: ClassNull, Source: srcFeedback + " (rating None deletes the feedback)",
			Request: Request{Method: "POST", Path: "/messages/{message_id}/feedbacks", Header: jsonCT, Body: `{"rating":null,"user":"{user}"}`},
			Needs:   []Fixture{FixtureMessage},
			Expect:  Expect{Status: 200}},
		Case{Name: "state/feedback-revoke-without-feedback", Route: "POST /messages/{id}/feedbacks", Class: ClassState, Source: srcFeedback,
			Request: Request{Method: "POST", Path: "/messages/{message_id}/feedbacks", Header: jsonCT, Body: `{"rating":null,"user":"{user}"}`},
			Needs:   []Fixture{FixtureMessage},
			Expect:  Expect{Status: 400},
			Note:    "Released servers: invalid_param \"rating cannot be None when feedback not exists\"; the newest tree: message_feedback_rating_required. Only the status is common."},
		Case{Name: "wrong-type/feedback-rating", Route: "POST /messages/{id}/feedbacks", Class: ClassWrongType, Source: srcFeedback + " (Literal[\"like\", \"dislike\"] | None)",
			Request: Request{Method: "POST", Path: "/messages/{message_id}/feedbacks", Header: jsonCT, Body: `{"rating":"love","user":"{user}"}`},
			Needs:   []Fixture{FixtureMessage},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("MessageFeedbackPayload", "rating", "Input should be 'like' or 'dislike'", "literal_error", "'love'", "str")},
			Note: "The newest tree's @model_validate decorator answers 422 instead."},
		Case{Name: "state/feedback-unknown-message", Route: "POST /messages/{id}/feedbacks", Class: ClassState, Source: srcFeedback,
			Request: Request{Method: "POST", Path: "/messages/{unknown_uuid}/feedbacks", Header: jsonCT, Body: `{"rating":"like","user":"{user}"}`},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Message Not Exists."}},
		Case{Name: "uuid/feedback-path-garbage", Route: "POST /messages/{id}/feedbacks", Class: ClassUUID, Source: srcRouting + "; <uuid:message_id> converter",
			Request: Request{Method: "POST", Path: "/messages/not-a-uuid/feedbacks", Header: jsonCT, Body: `{"rating":"like","user":"{user}"}`},
			Expect:  Expect{Status: 404, ContentType: "text/html"}},
		Case{Name: "valid/app-feedbacks", Route: "GET /app/feedbacks", Class: ClassValid, Source: "api/controllers/service_api/app/message.py AppGetFeedbacksApi.get, FeedbackListQuery",
			Request: Request{Method: "GET", Path: "/app/feedbacks?page=1&limit=5"},
			Expect:  Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{"$.data": "array"}, Absent: []string{"$.has_more"}}},
		Case{Name: "bounds/app-feedbacks-limit-102", Route: "GET /app/feedbacks", Class: ClassBounds, Source: "api/controllers/service_api/app/message.py FeedbackListQuery (limit le=101)",
			Request: Request{Method: "GET", Path: "/app/feedbacks?limit=102"},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("FeedbackListQuery", "limit", "Input should be less than or equal to 101", "less_than_equal", "'102'", "str")}},
	)

	// --- Annotations, annotation reply, file preview (cases_appdata.go). ---
	add(appDataCases()...)

	// --- Stored values (docs/mock/api-coverage.md "Stored values"). ---
	add(storedValueCases()...)

	// --- Destructive cases last: they delete the fixture conversation. ---
	add(
		Case{Name: "valid/delete-conversation-204", Route: "DELETE /conversations/{id}", Class: ClassValid, Source: srcWraps + " (FetchUserArg JSON: ?user= is never read); " + srcDelete,
			Request: Request{Method: "DELETE", Path: "/conversations/{conversation_id}?user={user}-query", Header: jsonCT, Body: `{"user":"{user}"}`},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 204},
			Note:    "The query names a user who owns nothing: a server that read it instead of the body would answer 404. (The body always names the run's user: a body without one would act as the app's default end user.)"},
		Case{Name: "state/delete-conversation-again-404", Route: "DELETE /conversations/{id}", Class: ClassState, Source: srcDelete,
			Request: Request{Method: "DELETE", Path: "/conversations/{conversation_id}", Header: jsonCT, Body: `{"user":"{user}"}`},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."}},
	)
	return cs
}
