package mockserver_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
)

// twoApps is a mock serving the test cassettes as two agent-chat apps,
// alpha (the default, key app-alpha) and beta (key app-beta), and a
// client of each.
func twoApps(t *testing.T, cfg mockserver.Config) (alpha, beta *env) {
	t.Helper()
	cfg.Apps = []mockserver.AppConfig{
		{Name: "alpha", Cassettes: testSet(t, testParams), Mode: dify.ModeAgentChat},
		{Name: "beta", Cassettes: testSet(t, testParams), Mode: dify.ModeAgentChat},
	}
	e := newEnv(t, cfg)
	return e.as("app-alpha"), e.as("app-beta")
}

// TestAppsChosenByKey: each key reaches its own app's description, a key
// no app owns gets Dify's 401 (CORS headers included) whatever the route,
// and the journal records which app each request reached.
func TestAppsChosenByKey(t *testing.T) {
	e := newEnv(t, mockserver.Config{Apps: []mockserver.AppConfig{
		{Name: "alpha", Cassettes: testSet(t, testParams), APIKeys: []string{"app-one", "app-uno"}},
		{Name: "beta"}, // the built-in cassettes; key app-beta
	}})
	builtin, err := mockserver.BuiltinSet()
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"app-one": "Test Agent", "app-uno": "Test Agent", "app-beta": builtin.App.Info.Name} {
		resp, body := e.as(key).do(http.MethodGet, "/info", nil)
		if resp.StatusCode != 200 || decode[struct{ Name string }](t, body).Name != want {
			t.Errorf("%s: /info = %d %s, want the app %q", key, resp.StatusCode, body, want)
		}
	}
	for _, path := range []string{"/info", "/conversations?user=u", "/apps/annotations"} {
		resp, body := e.as("app-test").do(http.MethodGet, path, nil, "Origin", "http://localhost:3000")
		e.wantError(resp, body, 401, "unauthorized", "Access token is invalid")
		if resp.Header.Get("Access-Control-Allow-Origin") == "" {
			t.Errorf("%s: the 401 has no CORS headers: %v", path, resp.Header)
		}
	}
	// Route matching still comes first, as in Flask: an unknown route is a
	// 404 whatever the key.
	resp, body := e.as("app-test").do(http.MethodGet, "/nope", nil)
	wantHTML404(t, resp, body)
	// No key at all: the default app answers its unauthenticated routes.
	resp, _ = e.as("app-test").do(http.MethodGet, "/", nil, "Authorization", "")
	if resp.StatusCode != 200 {
		t.Errorf("GET /v1/ without a key: %d", resp.StatusCode)
	}

	count := map[string]int{}
	for _, en := range e.srv.Journal().List(journal.Filter{Route: "GET /v1/info"}) {
		count[en.App]++
	}
	if count["alpha"] != 2 || count["beta"] != 1 || count[""] != 1 || len(count) != 3 {
		t.Errorf("journal apps of GET /v1/info = %v: want alpha twice, beta once, none once (the unknown key)", count)
	}
	if n := len(e.srv.Journal().List(journal.Filter{App: "beta"})); n != 1 {
		t.Errorf("journal filtered by app beta: %d entries, want 1", n)
	}
}

// TestAppsKeepStateApart: one app's key never reads, lists, changes or
// deletes another app's objects. Each cross-app request must answer
// exactly what the same request answers for an object that never
// existed, and the owner's objects must be unchanged afterwards.
func TestAppsKeepStateApart(t *testing.T) {
	a, b := twoApps(t, mockserver.Config{})
	const missing = "00000000-0000-4000-8000-00000000dead"
	conv, msg := a.chatTurn("Count to three", "u")
	file := a.upload("u", "pic.png", "image/png", []byte("alpha's picture"))
	// A file is previewable once a message of its app carries it.
	a.chatTurn("Count to three", "u", "files", []map[string]any{{"type": "image", "transfer_method": "local_file", "upload_file_id": file.ID}})
	endUser := *file.CreatedBy
	ann := a.createAnnotation("What is alpha?", "The first app.")
	resp, body := a.do(http.MethodPost, "/messages/"+msg+"/feedbacks", map[string]any{"rating": "like", "user": "u"})
	if resp.StatusCode != 200 {
		t.Fatalf("feedback: %d %s", resp.StatusCode, body)
	}
	resp, body = a.do(http.MethodPost, "/apps/annotation-reply/enable", map[string]any{
		"score_threshold": 0.9, "embedding_provider_name": "openai", "embedding_model_name": "text-embedding-3-small"})
	if resp.StatusCode != 200 {
		t.Fatalf("annotation-reply enable: %d %s", resp.StatusCode, body)
	}
	job := decode[dify.AnnotationReplyJob](t, body)

	// same is the check: b's request on a's object answers as b's request
	// on an object that never existed (sub replaces each real id).
	same := func(name, method, path string, reqBody any) {
		t.Helper()
		sub := func(v string) string {
			return strings.NewReplacer(conv, missing, msg, missing, file.ID, missing, ann.ID, missing, job.JobID, missing, endUser, missing).Replace(v)
		}
		var missingBody any
		switch v := reqBody.(type) {
		case map[string]any:
			m := map[string]any{}
			for k, x := range v {
				if s, ok := x.(string); ok {
					x = sub(s)
				}
				m[k] = x
			}
			missingBody = m
		case nil:
		default:
			t.Fatalf("%s: unsupported body %T", name, reqBody)
		}
		resp, body := b.do(method, path, reqBody)
		wantResp, wantBody := b.do(method, sub(path), missingBody)
		if resp.StatusCode != wantResp.StatusCode || !bytes.Equal(body, wantBody) {
			t.Errorf("%s with another app's key: %d %s\nwant what a missing object gets: %d %s", name, resp.StatusCode, body, wantResp.StatusCode, wantBody)
		}
		if resp.StatusCode < 400 && method != http.MethodGet {
			t.Errorf("%s with another app's key succeeded: %d %s", name, resp.StatusCode, body)
		}
	}
	same("rename conversation", http.MethodPost, "/conversations/"+conv+"/name", map[string]any{"name": "stolen", "user": "u"})
	same("delete conversation", http.MethodDelete, "/conversations/"+conv, map[string]any{"user": "u"})
	same("list variables", http.MethodGet, "/conversations/"+conv+"/variables?user=u", nil)
	same("update variable", http.MethodPut, "/conversations/"+conv+"/variables/"+missing, map[string]any{"user": "u", "value": 1})
	same("list messages", http.MethodGet, "/messages?user=u&conversation_id="+conv, nil)
	same("suggested", http.MethodGet, "/messages/"+msg+"/suggested?user=u", nil)
	same("rate a message", http.MethodPost, "/messages/"+msg+"/feedbacks", map[string]any{"rating": "dislike", "user": "u"})
	same("file preview", http.MethodGet, "/files/"+file.ID+"/preview?user=u", nil)
	same("end user", http.MethodGet, "/end-users/"+endUser, nil)
	same("update annotation", http.MethodPut, "/apps/annotations/"+ann.ID, map[string]any{"question": "q", "answer": "stolen"})
	same("delete annotation", http.MethodDelete, "/apps/annotations/"+ann.ID, nil)
	same("annotation-reply job status", http.MethodGet, "/apps/annotation-reply/enable/status/"+job.JobID, nil)
	same("text to audio of a message", http.MethodPost, "/text-to-audio", map[string]any{"message_id": msg, "user": "u"})
	same("chat in a conversation", http.MethodPost, "/chat-messages", chatBody("Count to three", "u", "conversation_id", conv))
	same("chat with an upload", http.MethodPost, "/chat-messages", chatBody("Count to three", "u",
		"files", []map[string]any{{"type": "image", "transfer_method": "local_file", "upload_file_id": file.ID}}))

	// Listings: b sees nothing of a's.
	for _, path := range []string{"/conversations?user=u", "/app/feedbacks", "/apps/annotations"} {
		_, own := a.do(http.MethodGet, path, nil)
		_, other := b.do(http.MethodGet, path, nil)
		for _, id := range []string{conv, msg, ann.ID} {
			if strings.Contains(string(other), id) {
				t.Errorf("GET %s with another app's key lists %s: %s", path, id, other)
			}
		}
		if !strings.Contains(string(own), conv) && !strings.Contains(string(own), msg) && !strings.Contains(string(own), ann.ID) {
			t.Errorf("GET %s with the owner's key lists none of its objects: %s", path, own)
		}
	}
	// b's annotation-reply setting is its own: still disabled.
	_, body = b.do(http.MethodGet, "/apps/annotation-reply/enable/status/"+job.JobID, nil)
	if strings.Contains(string(body), `"completed"`) {
		t.Errorf("b reads a's job: %s", body)
	}

	// a's objects are as a left them.
	_, body = a.do(http.MethodGet, "/conversations?user=u", nil)
	if !strings.Contains(string(body), conv) || strings.Contains(string(body), "stolen") {
		t.Errorf("a's conversations after b's requests: %s", body)
	}
	resp, body = a.do(http.MethodGet, "/files/"+file.ID+"/preview?user=u", nil)
	if resp.StatusCode != 200 || string(body) != "alpha's picture" {
		t.Errorf("a's preview after b's requests: %d %s", resp.StatusCode, body)
	}
	_, body = a.do(http.MethodGet, "/apps/annotations", nil)
	if !strings.Contains(string(body), ann.ID) || strings.Contains(string(body), "stolen") {
		t.Errorf("a's annotations after b's requests: %s", body)
	}
	_, body = a.do(http.MethodGet, "/messages?user=u&conversation_id="+conv, nil)
	if !strings.Contains(string(body), `"rating":"like"`) {
		t.Errorf("a's feedback after b's requests: %s", body)
	}
	// The same user string in two apps is two end users.
	fb := b.upload("u", "b.txt", "text/plain", []byte("beta"))
	if *fb.CreatedBy == endUser {
		t.Errorf("user u is one end user across apps: %s", endUser)
	}
}

// TestAppsStopOnlyOwnTasks: another app's key cannot stop a stream, even
// with its task id and the same user string; the owner's key still can.
func TestAppsStopOnlyOwnTasks(t *testing.T) {
	a, b := twoApps(t, mockserver.Config{Speed: 1})
	resp := a.send(http.MethodPost, "/chat-messages", chatBody("Take your time", "u"))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat: %d", resp.StatusCode)
	}
	stopped := false
	var taskID string
	frames := readFrames(t, resp.Body, time.Now(), func(f sseFrame) bool {
		if taskID == "" {
			taskID = f.str("task_id")
			if taskID == "" {
				t.Fatalf("no task_id in the first frame: %v", f.data)
			}
			// b's stop answers as Dify does (success) but stops nothing.
			if r, body := b.do(http.MethodPost, "/chat-messages/"+taskID+"/stop", map[string]any{"user": "u"}); r.StatusCode != 200 {
				t.Errorf("b's stop: %d %s", r.StatusCode, body)
			}
			// a's stop, sent after b's was answered, ends the stream: so
			// the stream was still running when b's came.
			if r, body := a.do(http.MethodPost, "/chat-messages/"+taskID+"/stop", map[string]any{"user": "u"}); r.StatusCode != 200 {
				t.Errorf("a's stop: %d %s", r.StatusCode, body)
			}
			stopped = true
		}
		return true
	})
	if !stopped {
		t.Fatal("no frame")
	}
	last := frames[len(frames)-1]
	if last.event() != "message_end" || len(frames) > 10 {
		t.Errorf("the stream ran %d frames and ended with %s: want a's stop to end it early", len(frames), last.event())
	}
}
