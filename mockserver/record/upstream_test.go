package record_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// upstreamKey is shaped like a Dify app key (docs/api §1.1); it is not a live key.
const upstreamKey = "app-K3yF0rT3stsOnlyZq8Wx2Vb7"

// clientKey is the dummy key clients use against the recorder.
const clientKey = "app-dummy"

const (
	convID = "4f1d2c3b-5a69-4e7f-8a1b-2c3d4e5f6a7b"
	msgID  = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d"
	taskID = "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"
)

// scheduledFrame is one frame the fake upstream sends at At after the
// request arrives.
type scheduledFrame struct {
	At  time.Duration
	Raw string
}

func dataFrame(fields string) string {
	return `data: {"event":` + fields + `,"conversation_id":"` + convID + `","message_id":"` + msgID + `","created_at":1764471600,"task_id":"` + taskID + `"}` + "\n\n"
}

// agentTurn is a New Agent-shaped stream (docs/api §2.6) at 0, 200, 400, 600 and
// 620 ms.
func agentTurn(answer1, answer2 string) []scheduledFrame {
	full, _ := json.Marshal(answer1 + answer2)
	a1, _ := json.Marshal(answer1)
	a2, _ := json.Marshal(answer2)
	return []scheduledFrame{
		{0, dataFrame(`"agent_thought","id":"11111111-2222-4333-8444-555555555555","position":1,"thought":"","observation":"","tool":"","tool_input":"","tool_labels":{},"message_files":[]`)},
		{200 * time.Millisecond, dataFrame(`"agent_message","id":"` + msgID + `","answer":` + string(a1))},
		{400 * time.Millisecond, dataFrame(`"agent_message","id":"` + msgID + `","answer":` + string(a2))},
		{600 * time.Millisecond, dataFrame(`"message","id":"` + msgID + `","answer":` + string(full) + `,"from_variable_selector":null`)},
		{620 * time.Millisecond, dataFrame(`"message_end","id":"` + msgID + `","metadata":{"usage":{"prompt_tokens":42,"prompt_unit_price":"0.001","prompt_price_unit":"0.001","prompt_price":"0.0000420","completion_tokens":15,"completion_unit_price":"0.002","completion_price_unit":"0.001","completion_price":"0.0000300","total_tokens":57,"total_price":"0.0000720","currency":"USD","latency":0.62}},"files":null`)},
	}
}

// fakeDify is a loopback stand-in for a Dify Service API that accepts only
// upstreamKey.
type fakeDify struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	turns      [][]scheduledFrame // served in order, the last one repeats
	served     int
	sent       [][]time.Time // per turn, when each frame was flushed
	auths      []string      // every Authorization header seen
	gate       chan struct{} // when set, held before a turn's last frame
	info       string        // GET /info body
	extraHdr   http.Header   // added to every chat response
	otherBody  string        // body of GET /conversations
	chatBodies []string
	uploads    []string // per upload: "field filename size sha256" of each file part, as received
	// freshIDs gives each turn its own message and task ids, and each
	// first turn its own conversation id (a follow-up keeps the one it
	// sends), as Dify does; otherwise every turn uses convID, msgID and
	// taskID.
	freshIDs bool
}

func newFakeDify(t *testing.T, turns ...[]scheduledFrame) *fakeDify {
	f := &fakeDify{t: t, turns: turns, info: `{"name":"Recorded Agent","description":"test","tags":[],"mode":"agent","author_name":"tests"}`,
		otherBody: `{"limit":20,"has_more":false,"data":[]}`}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeDify) URL() string { return f.srv.URL + "/v1" }

func (f *fakeDify) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	f.mu.Unlock()
	jsonReply := func(status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	if r.URL.Path != "/v1/" && r.Header.Get("Authorization") != "Bearer "+upstreamKey {
		w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
		jsonReply(401, `{"code":"unauthorized","message":"Access token is invalid","status":401}`)
		return
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /v1/":
		jsonReply(200, `{"welcome":"Dify OpenAPI","api_version":"v1","server_version":"1.17.1"}`)
	case "GET /v1/info":
		jsonReply(200, f.info)
	case "GET /v1/parameters":
		jsonReply(200, `{"opening_statement":"Hi","suggested_questions":[],"suggested_questions_after_answer":{"enabled":false},"speech_to_text":{"enabled":false},"text_to_speech":{"enabled":false},"retriever_resource":{"enabled":false},"annotation_reply":{"enabled":false},"more_like_this":{"enabled":false},"user_input_form":[],"sensitive_word_avoidance":{"enabled":false,"type":"","configs":[]},"file_upload":{"image":{"enabled":false,"number_limits":3,"detail":"high","transfer_methods":["remote_url","local_file"]}},"system_parameters":{"image_file_size_limit":10,"video_file_size_limit":100,"audio_file_size_limit":50,"file_size_limit":15,"workflow_file_upload_limit":10}}`)
	case "GET /v1/meta":
		jsonReply(200, `{"tool_icons":{}}`)
	case "GET /v1/site":
		jsonReply(200, `{"title":"Recorded Agent","chat_color_theme":null,"chat_color_theme_inverted":false,"icon_type":"emoji","icon":"R","icon_background":"#FFFFFF","icon_url":null,"description":"test","copyright":null,"privacy_policy":null,"input_placeholder":null,"custom_disclaimer":"","default_language":"en-US","show_workflow_steps":false,"use_icon_as_answer_icon":false}`)
	case "GET /v1/conversations":
		jsonReply(200, f.otherBody)
	case "POST /v1/files/upload":
		f.readUpload(r)
		jsonReply(201, `{"id":"7d1e2f3a-4b5c-4d6e-8f7a-8b9c0d1e2f3a","name":"notes.txt","size":5,"extension":"txt","mime_type":"text/plain","created_by":"e1e2e3e4-0000-4000-8000-000000000001","created_at":1764471600}`)
	case "POST /v1/chat-messages/" + taskID + "/stop":
		jsonReply(200, `{"result":"success"}`)
	case "POST /v1/conversations/" + convID + "/name":
		jsonReply(200, `{"id":"`+convID+`","name":"Weekend","inputs":{},"status":"normal","introduction":"","created_at":1764471600,"updated_at":1764471601}`)
	case "POST /v1/chat-messages":
		f.chat(w, r)
	default:
		jsonReply(404, `{"code":"not_found","message":"The requested URL was not found on the server.","status":404}`)
	}
}

func (f *fakeDify) chat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, _ := io.ReadAll(r.Body)
	if strings.Contains(string(body), "please-fail") {
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"code":"too_many_requests","message":"Too many requests. Please try again later.","status":429}`)
		return
	}
	f.mu.Lock()
	f.chatBodies = append(f.chatBodies, string(body))
	i := f.served
	if i >= len(f.turns) {
		i = len(f.turns) - 1
	}
	f.served++
	frames := f.turns[i]
	if f.freshIDs {
		frames = withFreshIDs(frames, body, f.served)
	}
	f.sent = append(f.sent, nil)
	slot := len(f.sent) - 1
	gate := f.gate
	for k, vs := range f.extraHdr {
		w.Header()[k] = vs
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for k, fr := range frames {
		if gate != nil && k == len(frames)-1 {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		if d := time.Until(start.Add(fr.At)); d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		if _, err := io.WriteString(w, fr.Raw); err != nil {
			return
		}
		_ = rc.Flush()
		f.mu.Lock()
		f.sent[slot] = append(f.sent[slot], time.Now())
		f.mu.Unlock()
	}
}

// withFreshIDs is frames with the ids of turn n: the conversation id the
// chat body sends, else a new one.
func withFreshIDs(frames []scheduledFrame, body []byte, n int) []scheduledFrame {
	var b struct {
		ConversationID string `json:"conversation_id"`
	}
	_ = json.Unmarshal(body, &b)
	conv := b.ConversationID
	if conv == "" {
		conv = fmt.Sprintf("c0000000-0000-4000-8000-%012x", n)
	}
	ids := strings.NewReplacer(convID, conv,
		msgID, fmt.Sprintf("a0000000-0000-4000-8000-%012x", n),
		taskID, fmt.Sprintf("b0000000-0000-4000-8000-%012x", n))
	out := make([]scheduledFrame, len(frames))
	for i, fr := range frames {
		out[i] = scheduledFrame{fr.At, ids.Replace(fr.Raw)}
	}
	return out
}

// recorderFor starts a recorder in front of up, writing into a fresh
// folder (or dir when given).
func recorderFor(t *testing.T, up *fakeDify, dir string, rules ...record.Rule) (*record.Recorder, *httptest.Server, string, *logBuffer) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	logs := &logBuffer{}
	rec, err := record.New(context.Background(), record.Config{
		Upstream: up.URL(), UpstreamKey: upstreamKey, Dir: dir, Rules: rules, Logf: logs.Logf,
	})
	if err != nil {
		t.Fatalf("record.New: %v", err)
	}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, srv, dir, logs
}

type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuffer) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// receivedFrame is a frame as a client saw it.
type receivedFrame struct {
	At  time.Duration // since the client started the request
	Raw []byte
}

// chat sends a streaming chat request and reads the whole answer.
func chat(t *testing.T, baseURL string, header http.Header, body map[string]any) (*http.Response, []receivedFrame) {
	t.Helper()
	return chatWith(t, baseURL, header, body, nil)
}

// chatWith calls onFrame (if set) as each frame arrives.
func chatWith(t *testing.T, baseURL string, header http.Header, body map[string]any, onFrame func(i int)) (*http.Response, []receivedFrame) {
	t.Helper()
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/chat-messages", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clientKey)
	for k, vs := range header {
		req.Header[k] = vs
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("chat request: %v", err)
	}
	defer resp.Body.Close()
	var got []receivedFrame
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Read to the end: the body ends when the handler returns.
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp, nil
	}
	fr := dify.NewFrameReader(resp.Body)
	for {
		f, err := fr.Next()
		if len(f.Raw) > 0 {
			got = append(got, receivedFrame{At: time.Since(start), Raw: f.Raw})
			if onFrame != nil {
				onFrame(len(got) - 1)
			}
		}
		if err != nil {
			if err != io.EOF {
				t.Fatalf("reading the stream after %d frames: %v", len(got), err)
			}
			break
		}
	}
	return resp, got
}

func chatBody(query, conversation string) map[string]any {
	b := map[string]any{"query": query, "inputs": map[string]any{}, "user": "tester", "response_mode": "streaming"}
	if conversation != "" {
		b["conversation_id"] = conversation
	}
	return b
}

// do sends a non-chat request to the recorder with the dummy key.
func do(t *testing.T, method, url, contentType, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// files returns every file in dir (hidden ones included) with its content.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[strings.TrimPrefix(p, dir+string(filepath.Separator))] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRecordRefusesARedirectingUpstream: the app description is fetched
// under the outbound policy (mockserver/internal/upstream): a redirect to another
// origin is refused at start, and a proxied request's redirect reaches the
// client as it is; the other origin never sees the key or a request.
func TestRecordRefusesARedirectingUpstream(t *testing.T) {
	var hits sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.URL.Path, r.Header.Get("Authorization"))
	}))
	defer other.Close()
	f := newFakeDify(t)
	redirecting := func(path string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == path {
				http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
				return
			}
			f.serve(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	_, err := record.New(context.Background(), record.Config{Upstream: redirecting("/v1/site").URL + "/v1", UpstreamKey: upstreamKey, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "redirect") || strings.Contains(err.Error(), upstreamKey) {
		t.Fatalf("record.New = %v, want the redirect refused", err)
	}

	up := redirecting("/v1/conversations")
	rec, err := record.New(context.Background(), record.Config{Upstream: up.URL + "/v1", UpstreamKey: upstreamKey, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/conversations?user=u1", nil)
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("the client got %d, want the upstream's 302", resp.StatusCode)
	}
	hits.Range(func(k, v any) bool {
		t.Errorf("the redirect target got %v (Authorization %q)", k, v)
		return true
	})
}
