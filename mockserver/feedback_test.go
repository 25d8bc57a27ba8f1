package mockserver_test

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// chatTurn plays one turn for user and returns its conversation and message ids.
func (e *env) chatTurn(query, user string, extra ...any) (convID, msgID string) {
	e.t.Helper()
	_, frames := e.chat(chatBody(query, user, extra...))
	for _, f := range frames {
		if f.event() == "message_end" {
			return f.str("conversation_id"), f.str("message_id")
		}
	}
	e.t.Fatalf("no message_end in %d frames", len(frames))
	return "", ""
}

// Encodes Dify's message.py MessageFeedbackApi.post and
// MessageService.create_feedback (docs/api §25) and message.py
// AppGetFeedbacksApi.get with MessageService.get_all_messages_feedbacks
// (docs/api §26): rate, overwrite, revoke; the rating shows in GET /messages
// and in GET /app/feedbacks; only the owner's message can be rated.
func TestMessageFeedback(t *testing.T) {
	for _, mode := range []string{dify.ModeAgent, dify.ModeAgentChat} { // no mode gate
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, mockserver.Config{Mode: mode})
			conv, msg := e.chatTurn("Count to three", "alice")
			path := "/messages/" + msg + "/feedbacks"

			resp, body := e.do("POST", path, map[string]any{"rating": "like", "content": "great", "user": "alice"})
			if resp.StatusCode != 200 || string(body) != `{"result":"success"}`+"\n" {
				t.Fatalf("like: %d %s", resp.StatusCode, body)
			}
			history := func() *dify.Feedback {
				_, b := e.do("GET", "/messages?conversation_id="+conv+"&user=alice", nil)
				return decode[dify.MessagePage](t, b).Data[0].Feedback
			}
			if f := history(); f == nil || f.Rating != "like" {
				t.Fatalf("history feedback = %+v", f)
			}
			feedbacks := func(query string) []dify.AppFeedback {
				resp, b := e.do("GET", "/app/feedbacks"+query, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("app feedbacks: %d %s", resp.StatusCode, b)
				}
				return decode[dify.AppFeedbackPage](t, b).Data
			}
			list := feedbacks("")
			if len(list) != 1 {
				t.Fatalf("app feedbacks = %+v", list)
			}
			f := list[0]
			if f.MessageID != msg || f.ConversationID != conv || f.Rating != "like" || f.Content == nil || *f.Content != "great" ||
				f.FromSource != "user" || f.FromEndUserID == nil || f.FromAccountID != nil || f.AppID == "" || f.CreatedAt != f.UpdatedAt {
				t.Errorf("feedback row = %+v", f)
			}
			// MessageFeedback.to_dict: datetime.isoformat() of a naive column.
			if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?$`).MatchString(f.CreatedAt) {
				t.Errorf("created_at %q is not a naive isoformat()", f.CreatedAt)
			}

			// A new rating overwrites rating and content (omitted content clears it).
			e.do("POST", path, map[string]any{"rating": "dislike", "user": "alice"})
			list = feedbacks("")
			if len(list) != 1 || list[0].Rating != "dislike" || list[0].Content != nil || list[0].ID != f.ID {
				t.Errorf("after dislike: %+v", list)
			}
			if h := history(); h == nil || h.Rating != "dislike" {
				t.Errorf("history after dislike = %+v", h)
			}

			// Another user cannot see or rate alice's message.
			resp, body = e.do("POST", path, map[string]any{"rating": "like", "user": "bob"})
			e.wantError(resp, body, 404, "not_found", "Message Not Exists.")

			// Revoke: rating null deletes the row; a second revoke is a ValueError.
			resp, body = e.do("POST", path, map[string]any{"rating": nil, "user": "alice"})
			if resp.StatusCode != 200 {
				t.Fatalf("revoke: %d %s", resp.StatusCode, body)
			}
			if h := history(); h != nil {
				t.Errorf("history after revoke = %+v", h)
			}
			if list := feedbacks(""); len(list) != 0 {
				t.Errorf("app feedbacks after revoke = %+v", list)
			}
			resp, body = e.do("POST", path, map[string]any{"user": "alice"})
			e.wantError(resp, body, 400, "invalid_param", "rating cannot be None when feedback not exists")
		})
	}
}

func TestMessageFeedbackValidation(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	_, msg := e.chatTurn("Count to three", "alice")
	path := "/messages/" + msg + "/feedbacks"
	for _, tc := range []struct {
		name    string
		path    string
		body    any
		status  int
		code    string
		message string
	}{
		{"user required", path, map[string]any{"rating": "like"}, 400, "invalid_param", "Arg user must be provided."},
		// pydantic's own texts (str(ValidationError) of MessageFeedbackPayload).
		{"bad rating", path, map[string]any{"rating": "love", "user": "alice"}, 400, "invalid_param", pyMsg("MessageFeedbackPayload", "rating", "Input should be 'like' or 'dislike'", "literal_error", "'love'", "str")},
		{"empty rating", path, map[string]any{"rating": "", "user": "alice"}, 400, "invalid_param", pyMsg("MessageFeedbackPayload", "rating", "Input should be 'like' or 'dislike'", "literal_error", "''", "str")},
		{"numeric rating", path, map[string]any{"rating": 1, "user": "alice"}, 400, "invalid_param", pyMsg("MessageFeedbackPayload", "rating", "Input should be 'like' or 'dislike'", "literal_error", "1", "int")},
		{"content type", path, map[string]any{"rating": "like", "content": 5, "user": "alice"}, 400, "invalid_param", pyMsg("MessageFeedbackPayload", "content", "Input should be a valid string", "string_type", "5", "int")},
		{"unknown message", "/messages/00000000-0000-4000-8000-000000000000/feedbacks", map[string]any{"rating": "like", "user": "alice"}, 404, "not_found", "Message Not Exists."},
		// <uuid:message_id> rejects it while routing: Werkzeug's HTML 404.
		{"not a uuid", "/messages/nope/feedbacks", map[string]any{"rating": "like", "user": "alice"}, 404, "html", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do("POST", tc.path, tc.body)
			if tc.code == "html" {
				wantHTML404(t, resp, body)
				return
			}
			e.wantError(resp, body, tc.status, tc.code, tc.message)
		})
	}
	// Unknown keys are ignored.
	if resp, body := e.do("POST", path, map[string]any{"rating": "like", "user": "alice", "extra": true}); resp.StatusCode != 200 {
		t.Errorf("extra key: %d %s", resp.StatusCode, body)
	}
}

// Encodes FeedbackListQuery (page ge=1; limit ge=1, le=101) and the
// created_at DESC offset paging of get_all_messages_feedbacks (docs/api §26).
func TestAppFeedbacksPaging(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	var msgs []string
	for _, user := range []string{"u1", "u2", "u3"} {
		_, msg := e.chatTurn("Count to three", user)
		e.do("POST", "/messages/"+msg+"/feedbacks", map[string]any{"rating": "like", "user": user})
		msgs = append(msgs, msg)
	}
	page := func(q string) []string {
		resp, b := e.do("GET", "/app/feedbacks"+q, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", q, resp.StatusCode, b)
		}
		var ids []string
		for _, f := range decode[dify.AppFeedbackPage](t, b).Data {
			ids = append(ids, f.MessageID)
		}
		return ids
	}
	if got := page("?limit=2"); len(got) != 2 || got[0] != msgs[2] || got[1] != msgs[1] {
		t.Errorf("page 1 = %v, want newest first %v", got, msgs)
	}
	if got := page("?limit=2&page=2"); len(got) != 1 || got[0] != msgs[0] {
		t.Errorf("page 2 = %v", got)
	}
	if got := page("?limit=101&page=9223372036854775807"); len(got) != 0 {
		t.Errorf("far page = %v", got)
	}
	for _, tc := range []struct{ q, msg string }{
		{"?limit=0", pyMsg("FeedbackListQuery", "limit", "Input should be greater than or equal to 1", "greater_than_equal", "'0'", "str")},
		{"?limit=102", pyMsg("FeedbackListQuery", "limit", "Input should be less than or equal to 101", "less_than_equal", "'102'", "str")},
		{"?page=0", pyMsg("FeedbackListQuery", "page", "Input should be greater than or equal to 1", "greater_than_equal", "'0'", "str")},
		{"?page=x", pyMsg("FeedbackListQuery", "page", "Input should be a valid integer, unable to parse string as an integer", "int_parsing", "'x'", "str")},
	} {
		resp, body := e.do("GET", "/app/feedbacks"+tc.q, nil)
		e.wantError(resp, body, http.StatusBadRequest, "invalid_param", tc.msg)
	}
	// Deleting a conversation takes its feedback along.
	_, convs := e.do("GET", "/conversations?user=u1", nil)
	conv := decode[dify.ConversationPage](t, convs).Data[0].ID
	e.do("DELETE", "/conversations/"+conv, map[string]any{"user": "u1"})
	if got := page(""); len(got) != 2 {
		t.Errorf("after deleting u1's conversation: %v", got)
	}
}
