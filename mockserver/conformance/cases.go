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
	srcWraps        = "api/controllers/service_api/wraps.py validate_app_token"
	srcExternalAPI  = "api/libs/external_api.py register_external_error_handlers"
	srcRouting      = "api/controllers/service_api/__init__.py (flask-restx Api without catch_all_404s; Werkzeug routing)"
	srcIndex        = "api/controllers/service_api/index.py IndexApi.get"
	srcChat         = "api/controllers/service_api/app/completion.py ChatApi.post, ChatRequestPayload"
	srcStop         = "api/controllers/service_api/app/completion.py ChatStopApi.post"
	srcRename       = "api/controllers/service_api/app/conversation.py ConversationRenameApi.post, ConversationRenamePayload"
	srcDelete       = "api/controllers/service_api/app/conversation.py ConversationDetailApi.delete"
	srcConvList     = "api/controllers/service_api/app/conversation.py ConversationApi.get, ConversationListQuery"
	srcMsgList      = "api/controllers/service_api/app/message.py MessageListApi.get, MessageListQuery"
	srcSuggested    = "api/controllers/service_api/app/message.py MessageSuggestedApi.get"
	srcTTS          = "api/controllers/service_api/app/audio.py TextToAudioApi.post"
	srcSTT          = "api/controllers/service_api/app/audio.py AudioApi.post"
	srcUpload       = "api/controllers/service_api/app/file.py FileApi.post"
	srcEndUser      = "api/controllers/service_api/end_user/end_user.py EndUserApi.get"
	srcAppInfo      = "api/controllers/service_api/app/app.py AppInfoApi.get"
	srcHelperUUID   = "api/libs/helper.py uuid_value / UUIDStrOrEmpty"
	srcPydanticBool = "pydantic 2 lax-mode bool parsing (str_to_bool)"
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

var envelopeFields = map[string]string{"$.code": "string", "$.message": "string", "$.status": "number"}

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
		Case{Name: "state/delete-user-from-query-ignored", Route: "DELETE /conversations/{id}", Class: ClassState, Source: srcWraps + " (FetchUserArg JSON: ?user= is never read); " + srcDelete,
			Request: Request{Method: "DELETE", Path: "/conversations/{conversation_id}?user={user}", Header: jsonCT, Body: `{}`},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."},
			Note:    "The body has no user, so the default end user is used and does not own the conversation."},
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

	// --- Destructive cases last: they delete the fixture conversation. ---
	add(
		Case{Name: "valid/delete-conversation-204", Route: "DELETE /conversations/{id}", Class: ClassValid, Source: srcDelete,
			Request: Request{Method: "DELETE", Path: "/conversations/{conversation_id}", Header: jsonCT, Body: `{"user":"{user}"}`},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 204}},
		Case{Name: "state/delete-conversation-again-404", Route: "DELETE /conversations/{id}", Class: ClassState, Source: srcDelete,
			Request: Request{Method: "DELETE", Path: "/conversations/{conversation_id}", Header: jsonCT, Body: `{"user":"{user}"}`},
			Needs:   []Fixture{FixtureConversation},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."}},
	)
	return cs
}
