package mockserver_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// The bad-input table: every route × malformed JSON, wrong types, missing
// fields, bad UUIDs, oversize bodies, wrong content types and unknown query
// parameters. Each row names the exact status, code and message Dify's
// envelope must carry (docs/api §1.4; texts per docs/mock/api-coverage.md), so a
// handler that starts answering 500, panicking or dropping the envelope
// fails its row. Rows with a 2xx status check that the input is tolerated
// (unknown parameters and content types are ignored, as Dify ignores them).
// TestChatValidation holds more chat rows.

// Flask's get_json() failures as Dify answers them (production, not
// debug): Werkzeug's BadRequest and UnsupportedMediaType texts.
const (
	msgBadJSON = "The browser (or proxy) sent a request that this server could not understand."
	msgNotJSON = "Did not attempt to load JSON data because the request Content-Type was not 'application/json'."
	// html404 in a row's code column: Werkzeug's HTML 404 page.
	html404 = "(html 404)"
)

// py is str(ValidationError) of one field error; pyModel of a model-level one.
func py(model, loc, msg, typ, input, inputType string) string {
	return pyMsg(model, loc, msg, typ, input, inputType)
}

func pyModel(model, msg, typ, input, inputType string) string {
	return pyMsg(model, "", msg, typ, input, inputType)
}

// Placeholders in a row's path or body, filled from the fixture.
const (
	phConv = "{conv}"
	phMsg  = "{msg}"
)

// rawBody is a request body with its own Content-Type ("" = none).
type rawBody struct {
	ctype string
	data  []byte
}

type badRow struct {
	name    string
	method  string
	path    string
	body    any // nil, string (JSON), rawBody
	hdr     []string
	status  int
	code    string
	message string // "*" = any message
}

// multipartBytes builds a multipart body in memory; a part with filename "-"
// has no filename parameter.
func multipartBytes(parts ...part) rawBody {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf(`form-data; name=%q`, p.field)
		if p.filename != "-" {
			cd += fmt.Sprintf(`; filename=%q`, p.filename)
		}
		h.Set("Content-Disposition", cd)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		w, _ := mw.CreatePart(h)
		_, _ = io.Copy(w, p.data)
	}
	_ = mw.Close()
	return rawBody{ctype: mw.FormDataContentType(), data: buf.Bytes()}
}

func filePart(name, ctype, content string) part {
	return part{field: "file", filename: name, contentType: ctype, data: strings.NewReader(content)}
}

func userPart(user string) part {
	return part{field: "user", filename: "-", data: strings.NewReader(user)}
}

// oversizeJSON is a JSON object just over the 4 MiB JSON body limit.
func oversizeJSON(field string) string {
	return `{"user":"bi","` + field + `":"` + strings.Repeat("x", 4<<20) + `"}`
}

func badInputRows() []badRow {
	const unknownUUID = "00000000-0000-4000-8000-0000000000ff"
	truncated := multipartBytes(filePart("a.txt", "text/plain", "hello"), userPart("bi"))
	truncated.data = truncated.data[:len(truncated.data)-20]
	garbage := rawBody{ctype: "multipart/form-data; boundary=XYZ", data: []byte("this is not multipart at all")}
	noBoundary := rawBody{ctype: "multipart/form-data", data: []byte("--x\r\n\r\n")}
	form := rawBody{ctype: "application/x-www-form-urlencoded", data: []byte("query=Count+to+three&user=bi")}
	textJSON := func(s string) rawBody { return rawBody{ctype: "text/plain", data: []byte(s)} }
	chat := `{"query":"Count to three","inputs":{"city":"Seoul"},"user":"bi","response_mode":"streaming"}`
	bigAudio := strings.Repeat("\x00", 30<<20+1)

	return []badRow{
		// POST /chat-messages (docs/api §2.1); more rows in TestChatValidation.
		{"chat: JSON null", "POST", "/chat-messages", `null`, nil, 500, "unknown", "Internal Server Error"},
		{"chat: JSON string", "POST", "/chat-messages", `"query"`, nil, 500, "unknown", "Internal Server Error"},
		{"chat: form-encoded body", "POST", "/chat-messages", form, nil, 415, "unsupported_media_type", msgNotJSON},
		{"chat: trailing garbage", "POST", "/chat-messages", chat + `}`, nil, 400, "bad_request", msgBadJSON},
		{"chat: inputs null", "POST", "/chat-messages", `{"query":"q","user":"bi","inputs":null}`, nil, 400, "invalid_param", py("ChatRequestPayload", "inputs", "Input should be a valid dictionary", "dict_type", "None", "NoneType")},
		{"chat: inputs a list", "POST", "/chat-messages", `{"query":"q","user":"bi","inputs":[]}`, nil, 400, "invalid_param", py("ChatRequestPayload", "inputs", "Input should be a valid dictionary", "dict_type", "[]", "list")},
		{"chat: response_mode a number", "POST", "/chat-messages", `{"query":"q","user":"bi","inputs":{},"response_mode":1}`, nil, 400, "invalid_param", py("ChatRequestPayload", "response_mode", "Input should be 'blocking' or 'streaming'", "literal_error", "1", "int")},
		{"chat: conversation_id a number", "POST", "/chat-messages", `{"query":"q","user":"bi","inputs":{},"conversation_id":7}`, nil, 400, "invalid_param", py("ChatRequestPayload", "conversation_id", "Value error, conversation_id must be a valid UUID", "value_error", "7", "int")},
		{"chat: auto_generate_name a lax boolean", "POST", "/chat-messages", `{"query":"q","user":"bi","inputs":{"city":"x"},"auto_generate_name":"yes"}`, nil, 200, "", ""},
		{"chat: auto_generate_name not a boolean", "POST", "/chat-messages", `{"query":"q","user":"bi","inputs":{"city":"x"},"auto_generate_name":"maybe"}`, nil, 400, "invalid_param", py("ChatRequestPayload", "auto_generate_name", "Input should be a valid boolean, unable to interpret input", "bool_parsing", "'maybe'", "str")},
		{"chat: empty user", "POST", "/chat-messages", `{"query":"q","user":"","inputs":{}}`, nil, 400, "invalid_param", "Arg user must be provided."},
		{"chat: blank query", "POST", "/chat-messages", `{"query":"  \t ","user":"bi","inputs":{}}`, nil, 400, "invalid_param", "query is required"},
		{"chat: files of the wrong shape", "POST", "/chat-messages", `{"query":"q","user":"bi","inputs":{"city":"x"},"files":[1]}`, nil, 400, "invalid_param", py("ChatRequestPayload", "files.0", "Input should be a valid dictionary", "dict_type", "1", "int")},
		{"chat: upload id not a UUID", "POST", "/chat-messages", `{"query":"q","user":"bi","inputs":{"city":"x"},"files":[{"type":"document","transfer_method":"local_file","upload_file_id":"nope"}]}`, nil, 400, "invalid_param", "Invalid upload file"},
		{"chat: another user's conversation", "POST", "/chat-messages", `{"query":"q","user":"someone-else","inputs":{},"conversation_id":"` + phConv + `"}`, nil, 404, "not_found", "Conversation Not Exists."},
		{"chat: JSON as text/plain", "POST", "/chat-messages", textJSON(chat), nil, 415, "unsupported_media_type", msgNotJSON},
		{"chat: unknown query parameters are ignored", "POST", "/chat-messages?foo=bar&stream=false", chat, nil, 200, "", ""},

		// POST /chat-messages/:task_id/stop (docs/api §3).
		{"stop: malformed JSON", "POST", "/chat-messages/t1/stop", `{"user":`, nil, 400, "bad_request", msgBadJSON},
		{"stop: empty body", "POST", "/chat-messages/t1/stop", rawBody{}, nil, 415, "unsupported_media_type", msgNotJSON},
		{"stop: empty JSON body", "POST", "/chat-messages/t1/stop", rawBody{ctype: "application/json"}, nil, 400, "bad_request", msgBadJSON},
		{"stop: missing user", "POST", "/chat-messages/t1/stop", `{}`, nil, 400, "invalid_param", "Arg user must be provided."},
		{"stop: user a number is str(user)", "POST", "/chat-messages/t1/stop", `{"user":1}`, nil, 200, "", ""},
		{"stop: oversize body", "POST", "/chat-messages/t1/stop", oversizeJSON("x"), nil, 413, "request_entity_too_large", "*"},
		{"stop: unknown task is ignored", "POST", "/chat-messages/no-such-task/stop", `{"user":"bi"}`, nil, 200, "", ""},

		// GET /messages/:message_id/suggested (docs/api §4).
		{"suggested: id not a UUID", "GET", "/messages/123/suggested?user=bi", nil, nil, 404, html404, ""},
		{"suggested: missing user", "GET", "/messages/" + phMsg + "/suggested", nil, nil, 400, "invalid_param", "Arg user must be provided."},
		{"suggested: unknown message", "GET", "/messages/" + unknownUUID + "/suggested?user=bi", nil, nil, 404, "not_found", "Message Not Exists."},
		{"suggested: another user's message", "GET", "/messages/" + phMsg + "/suggested?user=someone-else", nil, nil, 404, "not_found", "Message Not Exists."},
		{"suggested: unknown parameters are ignored", "GET", "/messages/" + phMsg + "/suggested?user=bi&foo=1", nil, nil, 200, "", ""},

		// GET /messages (docs/api §6).
		{"messages: missing conversation_id", "GET", "/messages?user=bi", nil, nil, 400, "invalid_param", py("MessageListQuery", "conversation_id", "Field required", "missing", "{'user': 'bi'}", "dict")},
		{"messages: conversation_id not a UUID", "GET", "/messages?user=bi&conversation_id=abc", nil, nil, 400, "invalid_param", py("MessageListQuery", "conversation_id", "Value error, must be a valid UUID", "value_error", "'abc'", "str")},
		{"messages: first_id not a UUID", "GET", "/messages?user=bi&conversation_id=" + phConv + "&first_id=1", nil, nil, 400, "invalid_param", py("MessageListQuery", "first_id", "Value error, must be a valid UUID", "value_error", "'1'", "str")},
		{"messages: limit not a number", "GET", "/messages?user=bi&conversation_id=" + phConv + "&limit=ten", nil, nil, 400, "invalid_param", py("MessageListQuery", "limit", "Input should be a valid integer, unable to parse string as an integer", "int_parsing", "'ten'", "str")},
		{"messages: limit 0", "GET", "/messages?user=bi&conversation_id=" + phConv + "&limit=0", nil, nil, 400, "invalid_param", py("MessageListQuery", "limit", "Input should be greater than or equal to 1", "greater_than_equal", "'0'", "str")},
		{"messages: limit 101", "GET", "/messages?user=bi&conversation_id=" + phConv + "&limit=101", nil, nil, 400, "invalid_param", py("MessageListQuery", "limit", "Input should be less than or equal to 100", "less_than_equal", "'101'", "str")},
		{"messages: unknown conversation", "GET", "/messages?user=bi&conversation_id=" + unknownUUID, nil, nil, 404, "not_found", "Conversation Not Exists."},
		{"messages: another user's conversation", "GET", "/messages?user=someone-else&conversation_id=" + phConv, nil, nil, 404, "not_found", "Conversation Not Exists."},
		{"messages: unknown first_id", "GET", "/messages?user=bi&conversation_id=" + phConv + "&first_id=" + unknownUUID, nil, nil, 404, "not_found", "First Message Not Exists."},
		{"messages: unknown parameters are ignored", "GET", "/messages?user=bi&conversation_id=" + phConv + "&pinned=true&x=%00", nil, nil, 200, "", ""},

		// GET /conversations (docs/api §5).
		{"conversations: limit not a number", "GET", "/conversations?user=bi&limit=1e3", nil, nil, 400, "invalid_param", py("ConversationListQuery", "limit", "Input should be a valid integer, unable to parse string as an integer", "int_parsing", "'1e3'", "str")},
		{"conversations: limit negative", "GET", "/conversations?user=bi&limit=-1", nil, nil, 400, "invalid_param", py("ConversationListQuery", "limit", "Input should be greater than or equal to 1", "greater_than_equal", "'-1'", "str")},
		{"conversations: limit too large", "GET", "/conversations?user=bi&limit=100000000000000000000", nil, nil, 400, "invalid_param", py("ConversationListQuery", "limit", "Input should be less than or equal to 100", "less_than_equal", "'100000000000000000000'", "str")},
		{"conversations: last_id not a UUID", "GET", "/conversations?user=bi&last_id=zzz", nil, nil, 400, "invalid_param", py("ConversationListQuery", "last_id", "Input should be a valid UUID, invalid length: expected length 32 for simple format, found 3", "uuid_parsing", "'zzz'", "str")},
		{"conversations: unknown last_id", "GET", "/conversations?user=bi&last_id=" + unknownUUID, nil, nil, 404, "not_found", "Last Conversation Not Exists."},
		{"conversations: bad sort_by", "GET", "/conversations?user=bi&sort_by=name", nil, nil, 400, "invalid_param", py("ConversationListQuery", "sort_by", "Input should be 'created_at', '-created_at', 'updated_at' or '-updated_at'", "literal_error", "'name'", "str")},
		{"conversations: unknown parameters are ignored", "GET", "/conversations?user=bi&pinned=true&first_id=x", nil, nil, 200, "", ""},

		// POST /conversations/:id/name (docs/api §7).
		{"rename: id not a UUID", "POST", "/conversations/123/name", `{"name":"n","user":"bi"}`, nil, 404, html404, ""},
		{"rename: malformed JSON", "POST", "/conversations/" + phConv + "/name", `{"name":`, nil, 400, "bad_request", msgBadJSON},
		{"rename: empty body", "POST", "/conversations/" + phConv + "/name", rawBody{}, nil, 415, "unsupported_media_type", msgNotJSON},
		{"rename: name a number", "POST", "/conversations/" + phConv + "/name", `{"name":5,"user":"bi"}`, nil, 400, "invalid_param", py("ConversationRenamePayload", "name", "Input should be a valid string", "string_type", "5", "int")},
		{"rename: auto_generate a lax boolean", "POST", "/conversations/" + phConv + "/name", `{"auto_generate":"true","user":"bi"}`, nil, 200, "", ""},
		{"rename: auto_generate a list", "POST", "/conversations/" + phConv + "/name", `{"auto_generate":[],"user":"bi"}`, nil, 400, "invalid_param", py("ConversationRenamePayload", "auto_generate", "Input should be a valid boolean", "bool_type", "[]", "list")},
		{"rename: user a list is str(user), another user", "POST", "/conversations/" + phConv + "/name", `{"name":"n","user":["bi"]}`, nil, 404, "not_found", "Conversation Not Exists."},
		{"rename: missing name", "POST", "/conversations/" + phConv + "/name", `{"user":"bi"}`, nil, 400, "invalid_param", pyModel("ConversationRenamePayload", "Value error, name is required when auto_generate is false", "value_error", "{'user': 'bi'}", "dict")},
		{"rename: unknown conversation", "POST", "/conversations/" + unknownUUID + "/name", `{"name":"n","user":"bi"}`, nil, 404, "not_found", "Conversation Not Exists."},
		{"rename: another user's conversation", "POST", "/conversations/" + phConv + "/name", `{"name":"n","user":"someone-else"}`, nil, 404, "not_found", "Conversation Not Exists."},
		{"rename: oversize body", "POST", "/conversations/" + phConv + "/name", oversizeJSON("name"), nil, 413, "request_entity_too_large", "*"},
		{"rename: unknown parameters are ignored", "POST", "/conversations/" + phConv + "/name?x=1", `{"name":"still fine","user":"bi"}`, nil, 200, "", ""},

		// DELETE /conversations/:id (docs/api §8).
		{"delete: id not a UUID", "DELETE", "/conversations/abc", nil, nil, 404, html404, ""},
		{"delete: malformed JSON", "DELETE", "/conversations/" + phConv, `{"user"`, nil, 400, "bad_request", msgBadJSON},
		{"delete: JSON array", "DELETE", "/conversations/" + phConv, `["bi"]`, nil, 500, "unknown", "Internal Server Error"},
		{"delete: no body", "DELETE", "/conversations/" + phConv, nil, nil, 415, "unsupported_media_type", msgNotJSON},
		{"delete: user a number is str(user), another user", "DELETE", "/conversations/" + phConv, `{"user":3}`, nil, 404, "not_found", "Conversation Not Exists."},
		{"delete: oversize body", "DELETE", "/conversations/" + phConv, oversizeJSON("x"), nil, 413, "request_entity_too_large", "*"},
		{"delete: unknown conversation", "DELETE", "/conversations/" + unknownUUID, `{"user":"bi"}`, nil, 404, "not_found", "Conversation Not Exists."},
		{"delete: ?user= is ignored (JSON only)", "DELETE", "/conversations/" + phConv + "?user=bi", `{}`, nil, 404, "not_found", "Conversation Not Exists."},
		{"delete: another user's conversation", "DELETE", "/conversations/" + phConv, `{"user":"someone-else"}`, nil, 404, "not_found", "Conversation Not Exists."},

		// POST /files/upload (docs/api §9.1); more rows in TestUploadErrors.
		{"upload: JSON body", "POST", "/files/upload", `{"file":"x"}`, nil, 400, "no_file_uploaded", "Please upload your file."},
		{"upload: no body", "POST", "/files/upload", rawBody{}, nil, 400, "no_file_uploaded", "Please upload your file."},
		{"upload: multipart without boundary", "POST", "/files/upload", noBoundary, nil, 400, "no_file_uploaded", "Please upload your file."},
		{"upload: garbage multipart", "POST", "/files/upload", garbage, nil, 400, "bad_request", "The browser (or proxy) sent a request that this server could not understand."},
		{"upload: truncated multipart", "POST", "/files/upload", truncated, nil, 400, "bad_request", "The browser (or proxy) sent a request that this server could not understand."},
		{"upload: file under another field name", "POST", "/files/upload", multipartBytes(part{field: "files", filename: "a.txt", contentType: "text/plain", data: strings.NewReader("a")}), nil, 400, "no_file_uploaded", "Please upload your file."},
		{"upload: path in the filename", "POST", "/files/upload", multipartBytes(filePart("../../etc/passwd", "text/plain", "a")), nil, 400, "invalid_param", "Filename contains invalid characters"},
		{"upload: unknown parameters are ignored", "POST", "/files/upload?user=x&foo=1", multipartBytes(filePart("a.txt", "text/plain", "a"), userPart("bi")), nil, 201, "", ""},

		// GET /end-users/:id (docs/api §10).
		{"end-user: id not a UUID", "GET", "/end-users/bi", nil, nil, 404, html404, ""},
		{"end-user: unknown", "GET", "/end-users/" + unknownUUID, nil, nil, 404, "end_user_not_found", "End user not found."},

		// POST /audio-to-text (docs/api §11).
		{"audio: JSON body", "POST", "/audio-to-text", `{"file":"x"}`, nil, 400, "bad_request_key_error", msgBadJSON},
		{"audio: garbage multipart", "POST", "/audio-to-text", garbage, nil, 400, "bad_request", "*"},
		{"audio: text file", "POST", "/audio-to-text", multipartBytes(filePart("a.txt", "text/plain", "a")), nil, 415, "unsupported_audio_type", "Audio type not allowed."},
		{"audio: over 30 MB", "POST", "/audio-to-text", multipartBytes(filePart("a.mp3", "audio/mpeg", bigAudio)), nil, 413, "audio_too_large", "Audio size larger than 30 mb"},
		{"audio: bad cassette header", "POST", "/audio-to-text", multipartBytes(filePart("a.mp3", "audio/mpeg", "ID3")), []string{mockserver.HeaderCassette, "../x"}, 400, "invalid_param", "*"},

		// POST /text-to-audio (docs/api §12).
		{"tts: malformed JSON", "POST", "/text-to-audio", `{"text":"a"`, nil, 400, "bad_request", msgBadJSON},
		{"tts: text a number", "POST", "/text-to-audio", `{"text":1,"user":"bi"}`, nil, 400, "invalid_param", py("TextToAudioPayload", "text", "Input should be a valid string", "string_type", "1", "int")},
		{"tts: message_id a number", "POST", "/text-to-audio", `{"message_id":1,"user":"bi"}`, nil, 400, "invalid_param", py("TextToAudioPayload", "message_id", "Input should be a valid string", "string_type", "1", "int")},
		{"tts: voice an object", "POST", "/text-to-audio", `{"text":"hi","voice":{},"user":"bi"}`, nil, 400, "invalid_param", py("TextToAudioPayload", "voice", "Input should be a valid string", "string_type", "{}", "dict")},
		{"tts: message_id not a UUID", "POST", "/text-to-audio", `{"message_id":"m1","user":"bi"}`, nil, 400, "invalid_param", "message_id: Input should be a valid UUID"},
		{"tts: unknown message", "POST", "/text-to-audio", `{"message_id":"` + unknownUUID + `","user":"bi"}`, nil, 404, "not_found", "Message Not Exists."},
		{"tts: missing text", "POST", "/text-to-audio", `{"user":"bi"}`, nil, 400, "invalid_param", "Text is required"},
		{"tts: oversize body", "POST", "/text-to-audio", oversizeJSON("text"), nil, 413, "request_entity_too_large", "*"},

		// App description (docs/api §13–§16) and GET / (docs/api §1.1).
		{"info: unknown parameters are ignored", "GET", "/info?user=bi&foo=bar", nil, nil, 200, "", ""},
		{"parameters: unknown parameters are ignored", "GET", "/parameters?x=%ff", nil, nil, 200, "", ""},
		{"meta: a JSON body on GET is ignored", "GET", "/meta", `{"user":`, nil, 200, "", ""},
		{"site: unknown parameters are ignored", "GET", "/site?a=1&a=2", nil, nil, 200, "", ""},
	}
}

func TestBadInputTable(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	// The fixture: one conversation with one message for user "bi".
	_, frames := e.chat(chatBody("Count to three", "bi"))
	conv, msg := frames[len(frames)-1].str("conversation_id"), frames[len(frames)-1].str("message_id")
	if conv == "" || msg == "" {
		t.Fatalf("fixture: no ids in %s", frames[len(frames)-1].raw)
	}
	fill := func(s string) string {
		return strings.NewReplacer(phConv, conv, phMsg, msg).Replace(s)
	}
	for _, row := range badInputRows() {
		t.Run(row.name, func(t *testing.T) {
			e.t = t
			var body io.Reader
			ctype := ""
			switch b := row.body.(type) {
			case string:
				body, ctype = strings.NewReader(fill(b)), "application/json"
			case rawBody:
				body, ctype = bytes.NewReader(b.data), b.ctype
			}
			req, err := http.NewRequest(row.method, e.url(fill(row.path)), body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer app-test")
			if ctype != "" {
				req.Header.Set("Content-Type", ctype)
			}
			for i := 0; i+1 < len(row.hdr); i += 2 {
				req.Header.Set(row.hdr[i], row.hdr[i+1])
			}
			resp, err := e.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode >= 500 && row.status < 500 {
				t.Fatalf("%d %s", resp.StatusCode, data)
			}
			if row.code == html404 {
				wantHTML404(t, resp, data)
				return
			}
			if row.status < 300 {
				if resp.StatusCode != row.status {
					t.Fatalf("got %d %s, want %d", resp.StatusCode, data, row.status)
				}
				return
			}
			e.wantError(resp, data, row.status, row.code, row.message)
		})
	}
	e.t = t
	// The fixture survived every row aimed at it from the wrong user.
	_, data := e.do(http.MethodGet, "/messages?user=bi&conversation_id="+conv, nil)
	if m := decode[struct{ Data []struct{ ID string } }](t, data).Data; len(m) != 1 || m[0].ID != msg {
		t.Errorf("fixture conversation after the table: %s", data)
	}
}

// TestEveryRouteRejectsWrongMethodsAndMissingKeys: each route answers a
// method it does not serve with 405 and its Allow header, and a request
// without a key with 401, before looking at the body (docs/api §1.2, §1.4).
func TestEveryRouteRejectsWrongMethodsAndMissingKeys(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	const id = "00000000-0000-4000-8000-000000000001"
	routes := []struct{ method, path, wrong string }{
		{"POST", "/chat-messages", "GET"},
		{"POST", "/chat-messages/t/stop", "GET"},
		{"GET", "/messages/" + id + "/suggested", "POST"},
		{"GET", "/messages", "DELETE"},
		{"GET", "/conversations", "POST"},
		{"POST", "/conversations/" + id + "/name", "PUT"},
		{"DELETE", "/conversations/" + id, "PATCH"},
		{"POST", "/files/upload", "GET"},
		{"GET", "/end-users/" + id, "DELETE"},
		{"POST", "/audio-to-text", "GET"},
		{"POST", "/text-to-audio", "GET"},
		{"GET", "/info", "POST"},
		{"GET", "/parameters", "PUT"},
		{"GET", "/meta", "DELETE"},
		{"GET", "/site", "POST"},
	}
	for _, r := range routes {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			e.t = t
			resp, body := e.do(r.wrong, r.path, "{", "Authorization", "")
			e.wantError(resp, body, 405, "method_not_allowed", "The method is not allowed for the requested URL.")
			if allow := resp.Header.Get("Allow"); !strings.Contains(allow, r.method) {
				t.Errorf("Allow %q lacks %s", allow, r.method)
			}
			resp, body = e.do(r.method, r.path, "{", "Authorization", "")
			e.wantError(resp, body, 401, "unauthorized", "Authorization header must be provided and start with 'Bearer'")
		})
	}
}
