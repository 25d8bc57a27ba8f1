package mockserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
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
	// Dify's preview tells a file of another app's message from a missing
	// one: 403 (every app of the mock is in one workspace).
	resp, body = b.do(http.MethodGet, "/files/"+file.ID+"/preview?user=u", nil)
	b.wantError(resp, body, 403, "file_access_denied", "File access denied: not owned by requesting app")
	resp, body = b.do(http.MethodGet, "/files/"+missing+"/preview?user=u", nil)
	b.wantError(resp, body, 404, "file_not_found", "File not found in message context")
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

// TestAppsShareOneStateBound: MaxStateBytes bounds the state of every
// app together, not each app's.
func TestAppsShareOneStateBound(t *testing.T) {
	const bound = 4 << 20
	logs := &lockedBuffer{}
	a, b := twoApps(t, mockserver.Config{MaxStateBytes: bound, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	query := strings.Repeat("q", 1<<20)
	total := func() (sum int64) {
		for _, app := range a.srv.Apps() {
			used, max := app.StateUsage()
			if max != bound {
				t.Fatalf("app %s: bound %d, want %d", app.Name(), max, bound)
			}
			sum += used
		}
		return sum
	}
	var last [2]string
	for i := range 12 { // 12 MB of queries, 6 in each app
		e := []*env{a, b}[i%2]
		_, frames := e.chat(chatBody(query, "big", "inputs", map[string]any{"city": "x"}), mockserver.HeaderCassette, "two-turn")
		last[i%2] = frames[0].str("conversation_id")
		if sum := total(); sum > bound {
			t.Fatalf("after %d chats the apps hold %d bytes together, bound %d", i+1, sum, bound)
		}
	}
	// The eviction line names the app that evicted, and the total it
	// brought under the bound.
	if l := logs.String(); !regexp.MustCompile(`state bound reached.* first_app=(alpha|beta) .*max_state_bytes=4194304`).MatchString(l) {
		t.Errorf("eviction log: %s", l)
	}
	// Each app keeps its newest conversation.
	for i, e := range []*env{a, b} {
		if resp, _ := e.do(http.MethodGet, "/messages?user=big&conversation_id="+last[i], nil); resp.StatusCode != 200 {
			t.Errorf("app %d's newest conversation: %d", i, resp.StatusCode)
		}
	}
}

// TestAppsStateFileRoundTrip: a state file of several apps carries each
// app's state back into the same app; one app's file loads into the
// default app; a file naming an unknown app is refused, naming it.
func TestAppsStateFileRoundTrip(t *testing.T) {
	a, b := twoApps(t, mockserver.Config{})
	convA, _ := a.chatTurn("Count to three", "u")
	convB, _ := b.chatTurn("First question", "u")
	annB := b.createAnnotation("Who is beta?", "The second app.")
	path := filepath.Join(t.TempDir(), "state.json")
	if err := a.srv.SaveState(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file := decode[struct {
		Version int                        `json:"version"`
		Apps    map[string]json.RawMessage `json:"apps"`
	}](t, data)
	if file.Version != mockserver.AppsStateVersion || len(file.Apps) != 2 || file.Apps["alpha"] == nil || file.Apps["beta"] == nil {
		t.Fatalf("state file: %.300s", data)
	}

	a2, b2 := twoApps(t, mockserver.Config{})
	if ok, err := a2.srv.LoadState(path); !ok || err != nil {
		t.Fatalf("LoadState = %v, %v", ok, err)
	}
	for _, c := range []struct {
		e          *env
		have, lack string
	}{{a2, convA, convB}, {b2, convB, convA}} {
		_, body := c.e.do(http.MethodGet, "/conversations?user=u", nil)
		if !strings.Contains(string(body), c.have) || strings.Contains(string(body), c.lack) {
			t.Errorf("%s after the round trip: %s; want %s and not %s", c.e.key, body, c.have, c.lack)
		}
	}
	if _, body := b2.do(http.MethodGet, "/apps/annotations", nil); !strings.Contains(string(body), annB.ID) {
		t.Errorf("beta's annotations after the round trip: %s", body)
	}
	if _, body := a2.do(http.MethodGet, "/apps/annotations", nil); strings.Contains(string(body), annB.ID) {
		t.Errorf("alpha has beta's annotation after the round trip: %s", body)
	}

	// One app's file, as a one-app mock writes it (unchanged format),
	// loads into the default app.
	one := newEnv(t, mockserver.Config{})
	convOne, _ := one.chatTurn("Count to three", "u")
	onePath := filepath.Join(t.TempDir(), "one.json")
	if err := one.srv.SaveState(onePath); err != nil {
		t.Fatal(err)
	}
	oneData, _ := os.ReadFile(onePath)
	if strings.Contains(string(oneData), `"apps"`) || !strings.Contains(string(oneData), `"end_users"`) {
		t.Errorf("a one-app state file is not the one-app format: %.200s", oneData)
	}
	a3, b3 := twoApps(t, mockserver.Config{})
	if ok, err := a3.srv.LoadState(onePath); !ok || err != nil {
		t.Fatalf("LoadState(one app's file) = %v, %v", ok, err)
	}
	if _, body := a3.do(http.MethodGet, "/conversations?user=u", nil); !strings.Contains(string(body), convOne) {
		t.Errorf("the default app lacks the one-app file's conversation: %s", body)
	}
	if _, body := b3.do(http.MethodGet, "/conversations?user=u", nil); strings.Contains(string(body), convOne) {
		t.Errorf("another app got the one-app file's conversation: %s", body)
	}

	// A file naming apps this mock does not serve.
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"version":1,"apps":{"gamma":`+string(file.Apps["alpha"])+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a3.srv.LoadState(bad); err == nil || !strings.Contains(err.Error(), `"gamma"`) || !strings.Contains(err.Error(), "alpha, beta") {
		t.Errorf("LoadState(unknown app) = %v; want an error naming gamma and the apps", err)
	}
}

// TestAppsConfig: the configuration errors name the field or the apps,
// never a key.
func TestAppsConfig(t *testing.T) {
	set := testSet(t, testParams)
	for _, c := range []struct {
		name string
		cfg  mockserver.Config
		want []string
	}{
		{"top-level cassettes", mockserver.Config{Cassettes: set, Apps: []mockserver.AppConfig{{Name: "a"}}}, []string{"Cassettes"}},
		{"top-level keys", mockserver.Config{APIKeys: []string{"app-x"}, Apps: []mockserver.AppConfig{{Name: "a"}}}, []string{"APIKeys"}},
		{"top-level cassette dir", mockserver.Config{Control: mockserver.ControlConfig{CassetteDir: "x"}, Apps: []mockserver.AppConfig{{Name: "a"}}}, []string{"Control.CassetteDir"}},
		{"bad name", mockserver.Config{Apps: []mockserver.AppConfig{{Name: "Big App"}}}, []string{`"Big App"`}},
		{"twice", mockserver.Config{Apps: []mockserver.AppConfig{{Name: "a"}, {Name: "a"}}}, []string{`"a"`, "twice"}},
		{"shared key", mockserver.Config{Apps: []mockserver.AppConfig{{Name: "a", APIKeys: []string{"app-secret-1"}}, {Name: "b", APIKeys: []string{"app-secret-1"}}}}, []string{`"a"`, `"b"`}},
		{"default key taken", mockserver.Config{Apps: []mockserver.AppConfig{{Name: "a", APIKeys: []string{"app-b"}}, {Name: "b"}}}, []string{`"a"`, `"b"`}},
		{"bad mode", mockserver.Config{Apps: []mockserver.AppConfig{{Name: "a"}, {Name: "b", Mode: "workflow"}}}, []string{`app "b"`, "workflow"}},
	} {
		_, err := mockserver.New(c.cfg)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %s", c.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows a key: %v", c.name, err)
		}
	}
	// One app in Apps without keys behaves as a one-app mock: any key.
	e := newEnv(t, mockserver.Config{Apps: []mockserver.AppConfig{{Name: "solo", Cassettes: set}}})
	if resp, body := e.as("app-anything").do(http.MethodGet, "/info", nil); resp.StatusCode != 200 {
		t.Errorf("one app without keys refused app-anything: %d %s", resp.StatusCode, body)
	}
	if apps := e.srv.Apps(); len(apps) != 1 || apps[0].Name() != "solo" || !apps[0].Default() || apps[0].Keys() != 0 {
		t.Errorf("Apps() = %+v", apps)
	}
}

// TestAppsControlAPI: GET /__mock/api lists the apps; per-app routes take
// ?app=; an unknown app is a 404 (a rule's, a 400) naming the apps; a rule
// with an app applies to that app's requests only; the journal filters by
// app.
func TestAppsControlAPI(t *testing.T) {
	a, b := twoApps(t, mockserver.Config{})
	ctl := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, a.ts.URL+"/__mock/api"+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := a.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	_, body := ctl(http.MethodGet, "", "")
	info := decode[struct {
		App  string `json:"app"`
		Apps []struct {
			Name      string `json:"name"`
			Mode      string `json:"mode"`
			AppName   string `json:"app_name"`
			Default   bool   `json:"default"`
			Keys      int    `json:"keys"`
			Cassettes int    `json:"cassettes"`
		} `json:"apps"`
	}](t, body)
	if len(info.Apps) != 2 || info.Apps[0].Name != "alpha" || !info.Apps[0].Default || info.Apps[1].Default ||
		info.Apps[1].Keys != 1 || info.Apps[1].Mode != dify.ModeAgentChat || info.Apps[1].AppName != "Test Agent" || info.Apps[1].Cassettes == 0 {
		t.Errorf("GET /__mock/api apps: %s", body)
	}
	if strings.Contains(string(body), "app-alpha") || strings.Contains(string(body), "app-beta") {
		t.Errorf("GET /__mock/api shows a key: %s", body)
	}

	b.chatTurn("Count to three", "bob")
	for app, want := range map[string]int{"": 0, "alpha": 0, "beta": 1} {
		status, body := ctl(http.MethodGet, "/state?app="+app, "")
		got := decode[struct {
			Totals map[string]int `json:"totals"`
		}](t, body)
		if status != 200 || got.Totals["conversations"] != want {
			t.Errorf("state?app=%s: %d %s; want %d conversations", app, status, body, want)
		}
	}
	for _, path := range []string{"/state?app=gamma", "/state/export?app=gamma", "/cassettes?app=gamma"} {
		status, body := ctl(http.MethodGet, path, "")
		if status != 404 || !strings.Contains(string(body), `\"gamma\"`) || !strings.Contains(string(body), "alpha, beta") {
			t.Errorf("%s: %d %s; want a 404 naming the apps", path, status, body)
		}
	}
	status, body := ctl(http.MethodPost, "/rules", `{"app":"gamma","fault":"status:503"}`)
	if status != 400 || !strings.Contains(string(body), "alpha, beta") {
		t.Errorf("rule for an unknown app: %d %s", status, body)
	}
	status, body = ctl(http.MethodPost, "/rules", `{"app":"beta","route":"GET /v1/info","fault":"status:503"}`)
	if status != 201 || !strings.Contains(string(body), `"app":"beta"`) {
		t.Fatalf("rule for beta: %d %s", status, body)
	}
	if resp, _ := a.do(http.MethodGet, "/info", nil); resp.StatusCode != 200 {
		t.Errorf("alpha's /info under beta's rule: %d", resp.StatusCode)
	}
	if resp, _ := b.do(http.MethodGet, "/info", nil); resp.StatusCode != 503 {
		t.Errorf("beta's /info under its rule: %d, want 503", resp.StatusCode)
	}
	status, body = ctl(http.MethodGet, "/journal?app=beta&route=GET%20/v1/info", "")
	entries := decode[struct {
		Data []journal.Entry `json:"data"`
	}](t, body)
	if status != 200 || len(entries.Data) != 1 || entries.Data[0].App != "beta" || entries.Data[0].Status != 503 {
		t.Errorf("journal?app=beta: %d %s", status, body)
	}
	// ?app=* exports and imports every app, as a state file holds them,
	// all or none.
	status, all := ctl(http.MethodGet, "/state/export?app=*", "")
	if status != 200 || !strings.Contains(string(all), `"apps"`) || !strings.Contains(string(all), `"beta"`) {
		t.Fatalf("export of every app: %d %.300s", status, all)
	}
	broken := strings.Replace(string(all), `"beta": {`+"\n"+`   "version": 1`, `"beta": {`+"\n"+`   "version": 99`, 1)
	if broken == string(all) {
		t.Fatalf("the test could not break beta's part: %.500s", all)
	}
	// alpha changes after the export: a refused import must leave it so,
	// though alpha's part of the file is valid.
	convAlpha, _ := a.chatTurn("Count to three", "carol")
	if status, body := ctl(http.MethodPost, "/state/import?app=*", broken); status != 400 || !strings.Contains(string(body), `app \"beta\"`) {
		t.Errorf("import with a broken beta: %d %s", status, body)
	}
	if _, body := a.do(http.MethodGet, "/conversations?user=carol", nil); !strings.Contains(string(body), convAlpha) {
		t.Errorf("alpha's state was replaced by a refused import: %s", body)
	}
	if status, body := ctl(http.MethodPost, "/state/import?app=*", string(all)); status != 200 {
		t.Errorf("import of every app: %d %s", status, body)
	}

	// Export and import address one app.
	_, exported := ctl(http.MethodGet, "/state/export?app=beta", "")
	if status, body := ctl(http.MethodPost, "/state/import?app=alpha", string(exported)); status != 200 {
		t.Fatalf("import into alpha: %d %s", status, body)
	}
	if _, body := a.do(http.MethodGet, "/conversations?user=bob", nil); !strings.Contains(string(body), `"id"`) {
		t.Errorf("alpha after importing beta's state: %s", body)
	}
}

// TestAppsSignedURLs: a signed /files/ URL carries no API key, so it
// reaches the default app; an upload of another app is still served by
// it, as Dify serves any file of the workspace whose signature holds.
func TestAppsSignedURLs(t *testing.T) {
	alpha, beta := twoApps(t, mockserver.Config{})
	data := []byte("beta's notes")
	f := beta.upload("alice", "notes.txt", "text/plain", data)
	resp, body := alpha.get(f.SourceURL)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET beta's signed URL: %d %q", resp.StatusCode, body)
	}
	// The signed URL is the credential: a key of the other app does not
	// make the upload readable through the keyed preview route.
	resp, body = alpha.do(http.MethodGet, "/files/"+f.ID+"/preview?user=alice", nil)
	if resp.StatusCode == http.StatusOK {
		t.Errorf("alpha's key previews beta's upload: %d %s", resp.StatusCode, body)
	}
}
