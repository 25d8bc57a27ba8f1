package conformance

// Cases for the app-data routes added with issue 10 (docs/api §27–§28,
// §30–§31): annotations and annotation-reply jobs (no app-mode gate; they
// run as the workspace owner and take no `user`), file preview (no gate)
// and conversation variables (`agent` apps get not_chat_app).
//
// Where the released controllers (SourceVersion) and the newest tree
// differ, the expectation follows the released one, as the mock does, and
// the case's Note says what the newest tree answers instead: its
// @model_validate decorator answers 422 `unprocessable_entity` for a bad
// body or query, list paging is validated (ge=1) instead of clamped, and an
// unknown annotation-reply job is 404 `not_found`.

const (
	srcAnnotationList   = "api/controllers/service_api/app/annotation.py AnnotationListApi.get; api/services/annotation_service.py AppAnnotationService.get_annotation_list_by_app_id"
	srcAnnotationCreate = "api/controllers/service_api/app/annotation.py AnnotationListApi.post, AnnotationCreatePayload; AppAnnotationService.insert_app_annotation_directly"
	srcAnnotationUpdate = "api/controllers/service_api/app/annotation.py AnnotationUpdateDeleteApi.put, AnnotationCreatePayload; AppAnnotationService.update_app_annotation_directly"
	srcAnnotationDelete = "api/controllers/service_api/app/annotation.py AnnotationUpdateDeleteApi.delete; AppAnnotationService.delete_app_annotation"
	srcReplyAction      = "api/controllers/service_api/app/annotation.py AnnotationReplyActionApi.post, AnnotationReplyActionPayload"
	srcReplyStatus      = "api/controllers/service_api/app/annotation.py AnnotationReplyActionStatusApi.get"
	srcFilePreview      = "api/controllers/service_api/app/file_preview.py FilePreviewApi.get, FilePreviewApi._validate_file_ownership"

	srcConvVariables   = "api/controllers/service_api/app/conversation.py ConversationVariablesApi.get, ConversationVariablesQuery; api/services/conversation_service.py ConversationService.get_conversational_variable"
	srcConvVariableSet = "api/controllers/service_api/app/conversation.py ConversationVariableDetailApi.put, ConversationVariableUpdatePayload; ConversationService.update_conversation_variable"
	srcNotChatApp      = " (mode not in {chat, agent-chat, advanced-chat} → NotChatAppError, before any validation)"
	msgNotChatApp      = "Please check if your app mode matches the right API route."

	noteNewest422 = "The newest tree's @model_validate decorator answers 422 unprocessable_entity instead; released servers 400 invalid_param."
)

var annotationFields = map[string]string{
	"$.id": "string", "$.question": "string", "$.answer": "string", "$.hit_count": "number", "$.created_at": "number",
}

func appDataCases() []Case {
	return []Case{
		// --- GET /apps/annotations ---
		{Name: "valid/annotations-list", Route: "GET /apps/annotations", Class: ClassValid, Source: srcAnnotationList,
			Request: Request{Method: "GET", Path: "/apps/annotations?page=1&limit=5"},
			Expect: Expect{Status: 200, ContentType: "application/json", Fields: map[string]string{
				"$.data": "array", "$.has_more": "boolean", "$.limit": "number", "$.total": "number", "$.page": "number"}}},
		{Name: "state/annotations-list-keyword-finds-fixture", Route: "GET /apps/annotations", Class: ClassState, Source: srcAnnotationList + " (keyword: ilike on question or answer)",
			Request: Request{Method: "GET", Path: "/apps/annotations?keyword=CONFORMANCE%20FIXTURE%20ANNOTATION&limit=100"},
			Needs:   []Fixture{FixtureAnnotation},
			Expect: Expect{Status: 200, Fields: map[string]string{
				"$.data[].id": "string", "$.data[].question": "string", "$.data[].hit_count": "number"}}},
		{Name: "extra/annotations-list-user-ignored", Route: "GET /apps/annotations", Class: ClassExtra, Source: srcAnnotationList + " (no FetchUserArg: runs as the workspace owner)",
			Request: Request{Method: "GET", Path: "/apps/annotations?user={user}&unknown=1"},
			Expect:  Expect{Status: 200, Fields: map[string]string{"$.data": "array"}}},
		{Name: "bounds/annotations-list-limit-0", Route: "GET /apps/annotations", Class: ClassBounds, Source: srcAnnotationList + " (request.args.get(type=int); paginate(error_out=False) reads 20 rows for per_page < 1)",
			Request: Request{Method: "GET", Path: "/apps/annotations?page=0&limit=0"},
			Expect:  Expect{Status: 200, Fields: map[string]string{"$.data": "array", "$.limit": "number", "$.page": "number"}},
			Note:    "The newest tree validates AnnotationListQuery (page, limit ge=1): 422 there."},
		{Name: "wrong-type/annotations-list-limit-text", Route: "GET /apps/annotations", Class: ClassWrongType, Source: srcAnnotationList + " (int() fails → the default 20)",
			Request: Request{Method: "GET", Path: "/apps/annotations?limit=many"},
			Expect:  Expect{Status: 200, Fields: map[string]string{"$.data": "array", "$.limit": "number"}},
			Note:    "The newest tree answers 422 (int_parsing)."},
		{Name: "method/annotations-delete-collection-405", Route: "DELETE /apps/annotations", Class: ClassMethod, Source: "flask-restx Api (405 on an Api route) + " + srcExternalAPI,
			Request: Request{Method: "DELETE", Path: "/apps/annotations"},
			Expect:  Expect{Status: 405, ContentType: "application/json", Code: "method_not_allowed", Message: MsgMethodNotAllowed}},

		// --- POST /apps/annotations (no fixture: invalid bodies create nothing) ---
		{Name: "missing/annotation-create-answer", Route: "POST /apps/annotations", Class: ClassMissing, Source: srcAnnotationCreate,
			Request: Request{Method: "POST", Path: "/apps/annotations", Header: jsonCT, Body: `{"question":"q"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("AnnotationCreatePayload", "answer", "Field required", "missing", "{'question': 'q'}", "dict")},
			Note: noteNewest422},
		{Name: "wrong-type/annotation-create-question-number", Route: "POST /apps/annotations", Class: ClassWrongType, Source: srcAnnotationCreate + " (str: no int coercion)",
			Request: Request{Method: "POST", Path: "/apps/annotations", Header: jsonCT, Body: `{"question":1,"answer":"a"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("AnnotationCreatePayload", "question", "Input should be a valid string", "string_type", "1", "int")},
			Note: noteNewest422},
		{Name: "null/annotation-create-answer", Route: "POST /apps/annotations", Class: ClassNull, Source: srcAnnotationCreate,
			Request: Request{Method: "POST", Path: "/apps/annotations", Header: jsonCT, Body: `{"question":"q","answer":null}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("AnnotationCreatePayload", "answer", "Input should be a valid string", "string_type", "None", "NoneType")},
			Note: noteNewest422},
		{Name: "empty/annotation-create-json-empty-list", Route: "POST /apps/annotations", Class: ClassEmpty, Source: srcAnnotationCreate + " (model_validate(service_api_ns.payload or {}): a falsy body is {})",
			Request: Request{Method: "POST", Path: "/apps/annotations", Header: jsonCT, Body: `[]`},
			Expect:  Expect{Status: 400, Code: "invalid_param", Message: "2 validation errors for AnnotationCreatePayload\nquestion\n  Field required [type=missing, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.12/v/missing\nanswer\n  Field required [type=missing, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.12/v/missing"},
			Note:    noteNewest422},
		{Name: "wrong-type/annotation-create-json-list", Route: "POST /apps/annotations", Class: ClassWrongType, Source: srcAnnotationCreate + " (no FetchUserArg: a non-object body reaches pydantic, not validate_app_token)",
			Request: Request{Method: "POST", Path: "/apps/annotations", Header: jsonCT, Body: `["q","a"]`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("AnnotationCreatePayload", "", "Input should be a valid dictionary or instance of AnnotationCreatePayload", "model_type", "['q', 'a']", "list")},
			Note: noteNewest422},
		{Name: "content-type/annotation-create-none", Route: "POST /apps/annotations", Class: ClassContentType, Source: srcAnnotationCreate + " (request.get_json())",
			Request: Request{Method: "POST", Path: "/apps/annotations", Body: `{"question":"q","answer":"a"}`},
			Expect:  Expect{Status: 415, ContentType: "application/json", Code: "unsupported_media_type", Message: MsgNotJSON}},

		// --- PUT /apps/annotations/{id} ---
		{Name: "valid/annotation-update", Route: "PUT /apps/annotations/{id}", Class: ClassValid, Source: srcAnnotationUpdate,
			Request: Request{Method: "PUT", Path: "/apps/annotations/{annotation_id}", Header: jsonCT,
				Body: `{"question":"dify-mock conformance fixture annotation","answer":"updated","user":"{user}"}`},
			Needs:  []Fixture{FixtureAnnotation},
			Expect: Expect{Status: 200, ContentType: "application/json", Fields: annotationFields}},
		{Name: "missing/annotation-update-question", Route: "PUT /apps/annotations/{id}", Class: ClassMissing, Source: srcAnnotationUpdate + " (body validated before the lookup)",
			Request: Request{Method: "PUT", Path: "/apps/annotations/{unknown_uuid}", Header: jsonCT, Body: `{"answer":"a"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("AnnotationCreatePayload", "question", "Field required", "missing", "{'answer': 'a'}", "dict")},
			Note: noteNewest422},
		{Name: "state/annotation-update-unknown", Route: "PUT /apps/annotations/{id}", Class: ClassState, Source: srcAnnotationUpdate,
			Request: Request{Method: "PUT", Path: "/apps/annotations/{unknown_uuid}", Header: jsonCT, Body: `{"question":"q","answer":"a"}`},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Annotation not found"}},
		{Name: "uuid/annotation-update-uppercase", Route: "PUT /apps/annotations/{id}", Class: ClassUUID, Source: srcRouting + "; <uuid:annotation_id> converter (case-insensitive hex)",
			Request: Request{Method: "PUT", Path: "/apps/annotations/ABCDEF00-0000-4000-8000-000000000000", Header: jsonCT, Body: `{"question":"q","answer":"a"}`},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Annotation not found"}},

		// --- DELETE /apps/annotations/{id} (the fixture itself is deleted by Cleanup) ---
		{Name: "state/annotation-delete-unknown", Route: "DELETE /apps/annotations/{id}", Class: ClassState, Source: srcAnnotationDelete,
			Request: Request{Method: "DELETE", Path: "/apps/annotations/{unknown_uuid}"},
			Expect:  Expect{Status: 404, Code: "not_found", Message: "Annotation not found"}},
		{Name: "uuid/annotation-delete-garbage", Route: "DELETE /apps/annotations/{id}", Class: ClassUUID, Source: srcRouting + "; <uuid:annotation_id> converter",
			Request: Request{Method: "DELETE", Path: "/apps/annotations/not-a-uuid"},
			Expect:  Expect{Status: 404, ContentType: "text/html"}},
		{Name: "method/annotation-get-item-405", Route: "GET /apps/annotations/{id}", Class: ClassMethod, Source: "flask-restx Api (405 on an Api route) + " + srcExternalAPI,
			Request: Request{Method: "GET", Path: "/apps/annotations/{unknown_uuid}"},
			Expect:  Expect{Status: 405, ContentType: "application/json", Code: "method_not_allowed", Message: MsgMethodNotAllowed}},

		// --- POST /apps/annotation-reply/{action}: only bodies that fail
		// validation, so a run never switches a real app's reply on or off. ---
		{Name: "missing/annotation-reply-model-name", Route: "POST /apps/annotation-reply/{action}", Class: ClassMissing, Source: srcReplyAction,
			Request: Request{Method: "POST", Path: "/apps/annotation-reply/enable", Header: jsonCT,
				Body: `{"score_threshold":0.9,"embedding_provider_name":"p"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("AnnotationReplyActionPayload", "embedding_model_name", "Field required", "missing",
					"{'score_threshold': 0.9, ...ing_provider_name': 'p'}", "dict")}, // pydantic cuts reprs over 50 characters
			Note: noteNewest422},
		{Name: "wrong-type/annotation-reply-threshold-text", Route: "POST /apps/annotation-reply/{action}", Class: ClassWrongType, Source: srcReplyAction + " (float, lax mode)",
			Request: Request{Method: "POST", Path: "/apps/annotation-reply/disable", Header: jsonCT,
				Body: `{"score_threshold":"high","embedding_provider_name":"p","embedding_model_name":"m"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("AnnotationReplyActionPayload", "score_threshold", "Input should be a valid number, unable to parse string as a number", "float_parsing", "'high'", "str")},
			Note: noteNewest422},
		{Name: "null/annotation-reply-threshold", Route: "POST /apps/annotation-reply/{action}", Class: ClassNull, Source: srcReplyAction,
			Request: Request{Method: "POST", Path: "/apps/annotation-reply/disable", Header: jsonCT,
				Body: `{"score_threshold":null,"embedding_provider_name":"p","embedding_model_name":"m"}`},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("AnnotationReplyActionPayload", "score_threshold", "Input should be a valid number", "float_type", "None", "NoneType")},
			Note: noteNewest422},
		{Name: "routing/annotation-reply-unknown-action", Route: "POST /apps/annotation-reply/{action}", Class: ClassRouting, Source: srcReplyAction + " (no else branch: `result` unbound → 500 after the body validated)",
			Request: Request{Method: "POST", Path: "/apps/annotation-reply/toggle", Header: jsonCT,
				Body: `{"score_threshold":0.9,"embedding_provider_name":"p","embedding_model_name":"m"}`},
			Expect: Expect{Status: 500},
			Note:   "The newest tree validates the action (TypeAdapter(AnnotationReplyAction)) and answers 400 invalid_param; neither changes the app."},
		{Name: "content-type/annotation-reply-none", Route: "POST /apps/annotation-reply/{action}", Class: ClassContentType, Source: srcReplyAction + " (request.get_json())",
			Request: Request{Method: "POST", Path: "/apps/annotation-reply/disable",
				Body: `{"score_threshold":0.9,"embedding_provider_name":"p","embedding_model_name":"m"}`},
			Expect: Expect{Status: 415, ContentType: "application/json", Code: "unsupported_media_type", Message: MsgNotJSON}},

		// --- GET /apps/annotation-reply/{action}/status/{job_id} ---
		{Name: "state/annotation-reply-status-unknown-job", Route: "GET /apps/annotation-reply/{action}/status/{job_id}", Class: ClassState, Source: srcReplyStatus + " (ValueError \"The job does not exist.\")",
			Request: Request{Method: "GET", Path: "/apps/annotation-reply/enable/status/{unknown_uuid}"},
			Expect:  Expect{Status: 400, Code: "invalid_param", Message: "The job does not exist."},
			Note:    "The newest tree answers 404 not_found with the same text (AnnotationReplyJobNotFoundError)."},
		{Name: "uuid/annotation-reply-status-garbage-job", Route: "GET /apps/annotation-reply/{action}/status/{job_id}", Class: ClassUUID, Source: srcRouting + "; <uuid:job_id> converter",
			Request: Request{Method: "GET", Path: "/apps/annotation-reply/enable/status/not-a-uuid"},
			Expect:  Expect{Status: 404, ContentType: "text/html"}},
		// --- GET /files/{file_id}/preview: an upload is previewable only once
		// a message of this app references it; the upload fixture is in none. ---
		{Name: "state/preview-upload-not-in-message", Route: "GET /files/{file_id}/preview", Class: ClassState, Source: srcFilePreview + " (MessageFile lookup first)",
			Request: Request{Method: "GET", Path: "/files/{upload_file_id}/preview?user={user}"},
			Needs:   []Fixture{FixtureUpload},
			Expect:  Expect{Status: 404, ContentType: "application/json", Code: "file_not_found", Message: "File not found in message context"}},
		{Name: "state/preview-unknown-file", Route: "GET /files/{file_id}/preview", Class: ClassState, Source: srcFilePreview,
			Request: Request{Method: "GET", Path: "/files/{unknown_uuid}/preview?user={user}"},
			Expect:  Expect{Status: 404, Code: "file_not_found", Message: "File not found in message context"}},
		{Name: "wrong-type/preview-as-attachment-text", Route: "GET /files/{file_id}/preview", Class: ClassWrongType, Source: srcFilePreview + ", FilePreviewQuery (bool, validated before the ownership check)",
			Request: Request{Method: "GET", Path: "/files/{unknown_uuid}/preview?as_attachment=maybe&user={user}"},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("FilePreviewQuery", "as_attachment", "Input should be a valid boolean, unable to interpret input", "bool_parsing", "'maybe'", "str")}},
		{Name: "extra/preview-unknown-params-ignored", Route: "GET /files/{file_id}/preview", Class: ClassExtra, Source: srcFilePreview + ", FilePreviewQuery (extra keys ignored; as_attachment=yes is lax-mode true)",
			Request: Request{Method: "GET", Path: "/files/{unknown_uuid}/preview?as_attachment=yes&download=1&user={user}"},
			Expect:  Expect{Status: 404, Code: "file_not_found", Message: "File not found in message context"}},
		{Name: "uuid/preview-garbage", Route: "GET /files/{file_id}/preview", Class: ClassUUID, Source: srcRouting + "; <uuid:file_id> converter",
			Request: Request{Method: "GET", Path: "/files/not-a-uuid/preview?user={user}"},
			Expect:  Expect{Status: 404, ContentType: "text/html"}},
		{Name: "method/preview-post-405", Route: "POST /files/{file_id}/preview", Class: ClassMethod, Source: "flask-restx Api (405 on an Api route) + " + srcExternalAPI,
			Request: Request{Method: "POST", Path: "/files/{unknown_uuid}/preview?user={user}"},
			Expect:  Expect{Status: 405, ContentType: "application/json", Code: "method_not_allowed", Message: MsgMethodNotAllowed}},

		// --- Conversation variables: `agent` apps get not_chat_app before
		// anything else is looked at. ---
		{Name: "feature/variables-list-agent-not-chat-app", Route: "GET /conversations/{id}/variables", Class: ClassFeature, Source: srcConvVariables + srcNotChatApp,
			Request:  Request{Method: "GET", Path: "/conversations/{unknown_uuid}/variables?user={user}&limit=0"},
			Requires: Requirements{Modes: []string{"agent"}},
			Expect:   Expect{Status: 400, ContentType: "application/json", Code: "not_chat_app", Message: msgNotChatApp}},
		{Name: "feature/variables-update-agent-not-chat-app", Route: "PUT /conversations/{id}/variables/{variable_id}", Class: ClassFeature, Source: srcConvVariableSet + srcNotChatApp,
			Request:  Request{Method: "PUT", Path: "/conversations/{unknown_uuid}/variables/{unknown_uuid}", Header: jsonCT, Body: `{"user":"{user}"}`},
			Requires: Requirements{Modes: []string{"agent"}},
			Expect:   Expect{Status: 400, Code: "not_chat_app", Message: msgNotChatApp}},
		{Name: "uuid/variables-path-garbage", Route: "GET /conversations/{id}/variables", Class: ClassUUID, Source: srcRouting + "; <uuid:c_id> converter",
			Request: Request{Method: "GET", Path: "/conversations/not-a-uuid/variables?user={user}"},
			Expect:  Expect{Status: 404, ContentType: "text/html"}},
		{Name: "state/variables-list-unknown-conversation", Route: "GET /conversations/{id}/variables", Class: ClassState, Source: srcConvVariables,
			Request:  Request{Method: "GET", Path: "/conversations/{unknown_uuid}/variables?user={user}"},
			Requires: Requirements{Modes: []string{"agent-chat"}},
			Expect:   Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."}},
		{Name: "bounds/variables-list-limit-101", Route: "GET /conversations/{id}/variables", Class: ClassBounds, Source: srcConvVariables + " (limit 1..100, validated before the lookup)",
			Request:  Request{Method: "GET", Path: "/conversations/{unknown_uuid}/variables?user={user}&limit=101"},
			Requires: Requirements{Modes: []string{"agent-chat"}},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ConversationVariablesQuery", "limit", "Input should be less than or equal to 100", "less_than_equal", "'101'", "str")}},
		{Name: "missing/variables-update-value", Route: "PUT /conversations/{id}/variables/{variable_id}", Class: ClassMissing, Source: srcConvVariableSet + " (value: Any, required)",
			Request:  Request{Method: "PUT", Path: "/conversations/{unknown_uuid}/variables/{unknown_uuid}", Header: jsonCT, Body: `{"user":"{user}"}`},
			Requires: Requirements{Modes: []string{"agent-chat"}},
			Expect: Expect{Status: 400, Code: "invalid_param",
				Message: PydanticError("ConversationVariableUpdatePayload", "value", "Field required", "missing", "{'user': '{user}'}", "dict")}},
		{Name: "state/variables-update-unknown-conversation", Route: "PUT /conversations/{id}/variables/{variable_id}", Class: ClassState, Source: srcConvVariableSet,
			Request:  Request{Method: "PUT", Path: "/conversations/{unknown_uuid}/variables/{unknown_uuid}", Header: jsonCT, Body: `{"value":null,"user":"{user}"}`},
			Requires: Requirements{Modes: []string{"agent-chat"}},
			Expect:   Expect{Status: 404, Code: "not_found", Message: "Conversation Not Exists."},
			Note:     "value is Any: null is a value, so the body passes and the lookup fails."},

		{Name: "method/annotation-reply-get-405", Route: "GET /apps/annotation-reply/{action}", Class: ClassMethod, Source: "flask-restx Api (405 on an Api route) + " + srcExternalAPI,
			Request: Request{Method: "GET", Path: "/apps/annotation-reply/enable"},
			Expect:  Expect{Status: 405, ContentType: "application/json", Code: "method_not_allowed", Message: MsgMethodNotAllowed}},
	}
}

// storedValueCases check values that Dify's code writes the same way
// whatever the model answered or the run's ids are: what the store phase
// of the mock must reproduce (docs/mock/api-coverage.md "Stored values").
func storedValueCases() []Case {
	const (
		srcInitRecords   = "api/core/app/apps/message_based_app_generator.py MessageBasedAppGenerator._init_generate_records"
		srcIntroduction  = "api/core/app/apps/message_based_app_generator.py MessageBasedAppGenerator._get_conversation_introduction"
		srcSaveMessage   = "api/core/app/task_pipeline/easy_ui_based_generate_task_pipeline.py EasyUIBasedGenerateTaskPipeline._save_message"
		srcUploadService = "api/services/file_service.py FileService.upload_file"
		// Times in the Service API's JSON: the Flask-RESTX TimestampField
		// (api/libs/helper.py) or the pydantic response models'
		// to_timestamp validators, both int(datetime.timestamp()).
		srcTimestamp = "; times: api/libs/helper.py TimestampField / to_timestamp (int(dt.timestamp()))"
	)
	return []Case{
		{Name: "stored/message-as-dify-saves-it", Route: "GET /messages", Class: ClassStored,
			Source:  srcInitRecords + " (parent_message_id UUID_NIL for SERVICE_API, status normal); " + srcSaveMessage + " (answer stripped, error untouched); api/fields/message_fields.py MessageListItem._normalize_created_at" + srcTimestamp,
			Request: Request{Method: "GET", Path: "/messages?user={user}&conversation_id={conversation_id}"},
			Needs:   []Fixture{FixtureConversation},
			Expect: Expect{Status: 200, ContentType: "application/json",
				Fields: map[string]string{"$.data[].answer": "string", "$.data[].inputs": "object"},
				Values: map[string]string{
					"$.data[].parent_message_id": `"00000000-0000-0000-0000-000000000000"`,
					"$.data[].status":            `"normal"`,
					"$.data[].error":             `null`,
				},
				Formats: map[string]string{"$.data[].created_at": FormatEpochSeconds}}},
		{Name: "stored/conversation-as-dify-creates-it", Route: "GET /conversations", Class: ClassStored,
			Source:  srcInitRecords + " (status normal); " + srcIntroduction + " (`introduction or \"\"`: a string, never null); api/fields/conversation_fields.py SimpleConversation._normalize_timestamp" + srcTimestamp,
			Request: Request{Method: "GET", Path: "/conversations?user={user}&limit=100"},
			Needs:   []Fixture{FixtureConversation},
			Expect: Expect{Status: 200, ContentType: "application/json",
				Fields:  map[string]string{"$.data[].introduction": "string", "$.data[].name": "string", "$.data[].updated_at": "number"},
				Values:  map[string]string{"$.data[].status": `"normal"`},
				Formats: map[string]string{"$.data[].created_at": FormatEpochSeconds, "$.data[].updated_at": FormatEpochSeconds}}},
		{Name: "stored/renamed-conversation-name", Route: "POST /conversations/{id}/name", Class: ClassStored,
			Source:  srcRename + "; api/services/conversation_service.py ConversationService.rename (the name as given); api/fields/conversation_fields.py SimpleConversation._normalize_timestamp" + srcTimestamp,
			Request: Request{Method: "POST", Path: "/conversations/{conversation_id}/name", Header: jsonCT, Body: `{"name":"  stored values  ","user":"{user}"}`},
			Needs:   []Fixture{FixtureConversation},
			Expect: Expect{Status: 200, ContentType: "application/json",
				Values:  map[string]string{"$.name": `"  stored values  "`, "$.status": `"normal"`},
				Formats: map[string]string{"$.created_at": FormatEpochSeconds, "$.updated_at": FormatEpochSeconds}}},
		{Name: "stored/upload-as-file-service-saves-it", Route: "POST /files/upload", Class: ClassStored,
			Source:  srcUpload + "; " + srcUploadService + " (name, size, extension without the dot, the part's mimetype); api/fields/file_fields.py file_fields created_at" + srcTimestamp,
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: []Part{{Field: "user", Data: "{user}"}, {Field: "file", Filename: "Stored.Values.TXT", ContentType: "text/plain", Data: "hello"}}},
			Expect: Expect{Status: 201, ContentType: "application/json",
				Values:  map[string]string{"$.name": `"Stored.Values.TXT"`, "$.size": `5`, "$.extension": `"txt"`, "$.mime_type": `"text/plain"`},
				Formats: map[string]string{"$.created_at": FormatEpochSeconds}}},
		{Name: "stored/upload-mimetype-as-werkzeug-parses-it", Route: "POST /files/upload", Class: ClassStored,
			Source:  srcUpload + " (mimetype=file.mimetype); werkzeug/datastructures/file_storage.py FileStorage.mimetype (http.parse_options_header, lower-cased)",
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: []Part{{Field: "user", Data: "{user}"}, {Field: "file", Filename: "werkzeug.txt", ContentType: "Text/PLAIN; charset=UTF-8", Data: "hello"}}},
			Expect: Expect{Status: 201, ContentType: "application/json",
				Values: map[string]string{"$.mime_type": `"text/plain"`}},
			Note: "The part's Content-Type without its parameters, lower-cased: what UploadFile.mime_type stores and previews are served with."},
		{Name: "stored/upload-source-url-urlencoded", Route: "POST /files/upload", Class: ClassStored,
			Source:  srcUploadService + " (source_url); api/core/file/helpers.py get_signed_file_url (urllib.parse.urlencode of timestamp, nonce, sign)",
			Request: Request{Method: "POST", Path: "/files/upload", Multipart: []Part{{Field: "user", Data: "{user}"}, {Field: "file", Filename: "signed.txt", ContentType: "text/plain", Data: "hello"}}},
			Expect: Expect{Status: 201, ContentType: "application/json", Fields: map[string]string{"$.source_url": "string"},
				BodyContains: `%3D"`},
			Note: "The signature is urlsafe base64 of 32 bytes, so it ends in one \"=\", which urlencode writes %3D; source_url ends with it."},
		{Name: "stored/end-user-as-service-api-creates-it", Route: "GET /end-users/{id}", Class: ClassStored,
			Source:  srcEndUser + "; api/services/end_user_service.py EndUserService.get_or_create_end_user_by_type (type InvokeFrom.SERVICE_API = service-api, is_anonymous only for the default user); api/fields/end_user_fields.py EndUserDetail (created_at: datetime) through model_dump(mode=\"json\") of api/models/model.py EndUser's naive sa.DateTime columns (server_default func.current_timestamp())",
			Request: Request{Method: "GET", Path: "/end-users/{end_user_id}"},
			Needs:   []Fixture{FixtureEndUser},
			Expect: Expect{Status: 200, ContentType: "application/json",
				Values:  map[string]string{"$.type": `"service-api"`, "$.is_anonymous": `false`},
				Formats: map[string]string{"$.created_at": FormatISONaive, "$.updated_at": FormatISONaive}}},
		{Name: "stored/annotation-hits-start-at-zero", Route: "GET /apps/annotations", Class: ClassStored,
			Source:  srcAnnotationCreate + "; api/services/annotation_service.py AppAnnotationService.insert_app_annotation_directly (MessageAnnotation.hit_count defaults to 0); api/fields/annotation_fields.py annotation_fields created_at" + srcTimestamp,
			Request: Request{Method: "GET", Path: "/apps/annotations?keyword=CONFORMANCE%20FIXTURE%20ANNOTATION&limit=100"},
			Needs:   []Fixture{FixtureAnnotation},
			Expect: Expect{Status: 200, ContentType: "application/json",
				Values:  map[string]string{"$.data[].hit_count": `0`},
				Formats: map[string]string{"$.data[].created_at": FormatEpochSeconds}}},
	}
}
