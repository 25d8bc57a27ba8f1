package mockserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Recorded values in the test cassettes; replays must replace all of them.
const (
	recConv    = "c0000000-0000-4000-8000-000000000001"
	recMsg     = "a0000000-0000-4000-8000-000000000002"
	recTask    = "b0000000-0000-4000-8000-000000000003"
	recCreated = 1700000000
)

// frame is one test frame: when it is sent and its exact bytes.
type frame struct {
	at  time.Duration
	raw string
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// envelope renders Dify's key order: event, conversation_id, message_id,
// created_at, task_id, then the event's fields.
func envelope(event, msgID, rest string) string {
	return fmt.Sprintf(`data: {"event":%q,"conversation_id":%q,"message_id":%q,"created_at":%d,"task_id":%q,%s}`+"\n\n",
		event, recConv, msgID, recCreated, recTask, rest)
}

func thought(at time.Duration, msgID, id string, pos int, text, tool, input, obs string, files ...string) frame {
	if files == nil {
		files = []string{}
	}
	fj, _ := json.Marshal(files)
	labels := "{}"
	if tool != "" {
		labels = fmt.Sprintf(`{%q:{"en_US":%q,"zh_Hans":%q}}`, tool, tool, tool)
	}
	rest := fmt.Sprintf(`"id":%q,"position":%d,"thought":%s,"observation":%s,"tool":%s,"tool_labels":%s,"tool_input":%s,"message_files":%s`,
		id, pos, js(text), js(obs), js(tool), labels, js(input), fj)
	return frame{at, envelope("agent_thought", msgID, rest)}
}

func js(s string) string { b, _ := json.Marshal(s); return string(b) }

func delta(at time.Duration, msgID, answer string) frame {
	return frame{at, envelope("agent_message", msgID, fmt.Sprintf(`"id":%q,"answer":%s`, msgID, js(answer)))}
}

func closing(at time.Duration, msgID, answer string) frame {
	return frame{at, envelope("message", msgID, fmt.Sprintf(`"id":%q,"answer":%s,"from_variable_selector":null`, msgID, js(answer)))}
}

func msgFile(at time.Duration, msgID, id string) frame {
	return frame{at, envelope("message_file", msgID, fmt.Sprintf(`"id":%q,"type":"image","belongs_to":"assistant","url":"/files/tools/%s.png?timestamp=1&nonce=n&sign=s"`, id, id))}
}

const usageJSON = `{"prompt_tokens":40,"prompt_unit_price":"0.001","prompt_price_unit":"0.001","prompt_price":"0.0000400","completion_tokens":12,"completion_unit_price":"0.002","completion_price_unit":"0.001","completion_price":"0.0000240","total_tokens":52,"total_price":"0.0000640","currency":"USD","latency":1.25}`

func end(at time.Duration, msgID string) frame {
	return frame{at, envelope("message_end", msgID, fmt.Sprintf(`"id":%q,"metadata":{"usage":%s},"files":null`, msgID, usageJSON))}
}

func ping(at time.Duration) frame { return frame{at, "event: ping\n\n"} }

// turn is one recorded POST /chat-messages.
type turn struct {
	query  string
	files  string // JSON for the request's files, "" for none
	frames []frame
	status int    // 0 = 200
	body   string // for non-200 turns
	// modelRequests sets X-Dify-Mock-Model-Requests when > 0.
	modelRequests int
}

func chatFile(t testing.TB, meta cassette.Meta, turns ...turn) []byte {
	t.Helper()
	meta.Format, meta.Kind, meta.Provenance = cassette.FormatVersion, cassette.KindChat, cassette.ProvenanceSynthesized
	if meta.Source == "" {
		meta.Source = "built by mockserver tests"
	}
	f := &cassette.File{Version: 1, Meta: meta}
	for _, tr := range turns {
		req := fmt.Sprintf(`{"query":%s,"inputs":{},"user":"recorder","response_mode":"streaming"`, js(tr.query))
		if tr.files != "" {
			req += `,"files":` + tr.files
		}
		req += "}"
		in := &vcr.Interaction{
			Request: vcr.Request{Body: req, URL: "http://127.0.0.1:5001/v1/chat-messages", Method: http.MethodPost,
				Headers: http.Header{"Content-Type": {"application/json"}}},
		}
		if tr.status != 0 && tr.status != 200 {
			in.Response = vcr.Response{Code: tr.status, Status: http.StatusText(tr.status), Body: tr.body,
				Headers: http.Header{"Content-Type": {"application/json"}}}
		} else {
			frames := make([]cassette.RecordedFrame, len(tr.frames))
			for i, fr := range tr.frames {
				frames[i] = cassette.RecordedFrame{Offset: fr.at, Raw: []byte(fr.raw)}
			}
			vals, body := cassette.EncodeFrames(frames)
			h := http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}, cassette.FramesHeader: vals}
			if tr.modelRequests > 0 {
				h.Set(cassette.ModelRequestsHeader, fmt.Sprint(tr.modelRequests))
			}
			in.Response = vcr.Response{Code: 200, Status: "200 OK", Body: body, Headers: h}
		}
		f.Interactions = append(f.Interactions, in)
	}
	data, err := cassette.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testParams is the test app's /parameters: a required text input with a
// max length and an optional select; every feature on; a 1 MB image limit.
const testParams = `{"opening_statement":"Hello from the test app","suggested_questions":["What can you do?"],"suggested_questions_after_answer":{"enabled":true},"speech_to_text":{"enabled":true},"text_to_speech":{"enabled":true,"voice":"alloy","language":"en-US","autoPlay":"disabled"},"retriever_resource":{"enabled":false},"annotation_reply":{"enabled":false},"more_like_this":{"enabled":false},"user_input_form":[{"text-input":{"label":"City","variable":"city","required":true,"default":"","max_length":10,"type":"text-input"}},{"select":{"label":"Budget","variable":"budget","required":false,"default":"","options":["low","high"],"type":"select"}}],"sensitive_word_avoidance":{"enabled":false,"type":"","configs":[]},"file_upload":{"image":{"enabled":true,"number_limits":3,"detail":"high","transfer_methods":["remote_url","local_file"]}},"system_parameters":{"image_file_size_limit":1,"video_file_size_limit":100,"audio_file_size_limit":50,"file_size_limit":15,"workflow_file_upload_limit":10}}`

// disabledParams turns every optional feature off and has no input form.
const disabledParams = `{"opening_statement":null,"suggested_questions":[],"suggested_questions_after_answer":{"enabled":false},"speech_to_text":{"enabled":false},"text_to_speech":{"enabled":false},"retriever_resource":{"enabled":false},"annotation_reply":{"enabled":false},"more_like_this":{"enabled":false},"user_input_form":[],"sensitive_word_avoidance":{"enabled":false,"type":"","configs":[]},"file_upload":{"image":{"enabled":false,"number_limits":3,"detail":"high","transfer_methods":["remote_url","local_file"]}},"system_parameters":{"image_file_size_limit":10,"video_file_size_limit":100,"audio_file_size_limit":50,"file_size_limit":15,"workflow_file_upload_limit":10}}`

const (
	testInfo = `{"name":"Test Agent","description":"An app for tests.","tags":["test"],"mode":"agent","author_name":"tests"}`
	testSite = `{"title":"Test Agent","chat_color_theme":null,"chat_color_theme_inverted":false,"icon_type":"emoji","icon":"🧪","icon_background":"#FFFFFF","icon_url":null,"description":"Tests","copyright":null,"privacy_policy":null,"input_placeholder":null,"custom_disclaimer":"","default_language":"en-US","show_workflow_steps":false,"use_icon_as_answer_icon":false}`
	testRoot = `{"welcome":"Dify OpenAPI","api_version":"v1","server_version":"9.9.9"}`
	testMeta = `{"tool_icons":{}}`
)

func appFile(t testing.TB, params string) []byte {
	t.Helper()
	f := &cassette.File{Version: 1, Meta: cassette.Meta{Format: cassette.FormatVersion, Kind: cassette.KindApp, Provenance: cassette.ProvenanceSynthesized, Source: "tests"}}
	for _, p := range []struct{ path, body string }{{"/", testRoot}, {"/info", testInfo}, {"/parameters", params}, {"/meta", testMeta}, {"/site", testSite}} {
		f.Interactions = append(f.Interactions, &vcr.Interaction{
			Request:  vcr.Request{URL: "http://127.0.0.1:5001/v1" + p.path, Method: http.MethodGet},
			Response: vcr.Response{Code: 200, Status: "200 OK", Body: p.body, Headers: http.Header{"Content-Type": {"application/json"}}},
		})
	}
	data, err := cassette.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Thought and file ids of the test cassettes.
const (
	th1  = "d0000000-0000-4000-8000-000000000011"
	th2  = "d0000000-0000-4000-8000-000000000012"
	th3  = "d0000000-0000-4000-8000-000000000013"
	tf1  = "e0000000-0000-4000-8000-000000000021"
	up1  = "f0000000-0000-4000-8000-000000000031"
	msg2 = "a0000000-0000-4000-8000-000000000004"
)

// timingFrames: uneven gaps so a scheduler that chains sleeps or ignores
// offsets shows up.
func timingFrames() []frame {
	return []frame{
		thought(0, recMsg, th1, 1, "", "", "", ""),
		delta(ms(80), recMsg, "One, "),
		delta(ms(200), recMsg, "two, "),
		delta(ms(260), recMsg, "three."),
		closing(ms(420), recMsg, "One, two, three."),
		end(ms(450), recMsg),
	}
}

// testSet writes the test cassettes into a folder and loads it.
func testSet(t testing.TB, params string) *cassette.Set {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app", appFile(t, params))
	write("timing", chatFile(t, cassette.Meta{Description: "uneven cadence", Mode: "agent", Default: true,
		SuggestedQuestions: []string{"Count again?", "Count to four?"}, Transcript: "count to three"},
		turn{query: "Count to three", frames: timingFrames()}))
	write("tools", chatFile(t, cassette.Meta{Description: "three model requests, a tool file", Mode: "agent"},
		turn{query: "Use your tools", frames: []frame{
			thought(0, recMsg, th1, 1, "", "", "", ""),
			thought(ms(10), recMsg, th1, 1, "I should search.", "web_search", `{"web_search": {"q": "x"}}`, ""),
			thought(ms(20), recMsg, th1, 1, "I should search.", "web_search", `{"web_search": {"q": "x"}}`, `{"web_search": "found"}`),
			thought(ms(30), recMsg, th2, 2, "Draw it.", "painter", `{"painter": {}}`, "", tf1),
			msgFile(ms(35), recMsg, tf1),
			thought(ms(40), recMsg, th3, 3, "", "", "", ""),
			delta(ms(50), recMsg, "Here "),
			delta(ms(60), recMsg, "it is."),
			closing(ms(70), recMsg, "Here it is."),
			end(ms(80), recMsg),
		}}))
	write("two-turn", chatFile(t, cassette.Meta{Description: "two turns", Mode: "agent"},
		turn{query: "First question", frames: []frame{delta(0, recMsg, "First answer."), closing(ms(5), recMsg, "First answer."), end(ms(10), recMsg)}},
		turn{query: "Second question", frames: []frame{delta(0, msg2, "Second answer."), closing(ms(5), msg2, "Second answer."), end(ms(10), msg2)}}))
	write("slow", chatFile(t, cassette.Meta{Description: "ten seconds of deltas", Mode: "agent"},
		turn{query: "Take your time", frames: slowFrames()}))
	write("file-read", chatFile(t, cassette.Meta{Description: "reads an upload", Mode: "agent"},
		turn{query: "Read my file", files: `[{"type":"document","transfer_method":"local_file","upload_file_id":"` + up1 + `"}]`,
			frames: []frame{
				thought(0, recMsg, th1, 1, "Reading "+up1, "read_file", `{"read_file": {"id": "`+up1+`"}}`, "ok", up1),
				delta(ms(5), recMsg, "Read it."), closing(ms(6), recMsg, "Read it."), end(ms(7), recMsg),
			}}))
	write("refused", chatFile(t, cassette.Meta{Description: "a recorded pre-stream error", Mode: "agent"},
		turn{query: "Refuse me", status: 400, body: `{"code":"agent_not_published","message":"Agent has not been published. Please publish the Agent before using the API.","status":400}`}))
	write("heavy", chatFile(t, cassette.Meta{Description: "declares 900 model requests", Mode: "agent"},
		turn{query: "Think hard", modelRequests: 900, frames: []frame{
			delta(0, recMsg, "Thinking"), closing(ms(5), recMsg, "Thinking"), end(ms(6), recMsg)}}))
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func slowFrames() []frame {
	fr := []frame{thought(0, recMsg, th1, 1, "", "", "", "")}
	answer := ""
	for i := 1; i <= 20; i++ {
		fr = append(fr, delta(ms(500*i), recMsg, fmt.Sprintf("part %d. ", i)))
		answer += fmt.Sprintf("part %d. ", i)
	}
	fr = append(fr, ping(ms(10_000)), closing(ms(10_050), recMsg, answer), end(ms(10_060), recMsg))
	return fr
}

// env is a running mock with a client.
type env struct {
	t   testing.TB
	srv *mockserver.Server
	ts  *httptest.Server
	set *cassette.Set
	hc  *http.Client
	key string // the API key sent; "" = app-test
}

// as is e sending key: another app's client of the same mock.
func (e *env) as(key string) *env {
	c := *e
	c.key = key
	return &c
}

// authorization is the Authorization header e sends.
func (e *env) authorization() string {
	if e.key == "" {
		return "Bearer app-test"
	}
	return "Bearer " + e.key
}

func newEnv(t testing.TB, cfg mockserver.Config) *env {
	t.Helper()
	if cfg.Cassettes == nil && len(cfg.Apps) == 0 {
		cfg.Cassettes = testSet(t, testParams)
	}
	srv, err := mockserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener = srv.Listener(ts.Listener) // streams as `dify-mock serve` runs them
	ts.Start()
	e := &env{t: t, srv: srv, ts: ts, set: cfg.Cassettes, hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})
	return e
}

func (e *env) url(path string) string { return e.ts.URL + "/v1" + path }

// do sends a request with the test key; body may be nil, a string (sent
// as is) or a value (sent as JSON). hdr holds name/value pairs.
func (e *env) do(method, path string, body any, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	resp := e.send(method, path, body, hdr...)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, data
}

func (e *env) send(method, path string, body any, hdr ...string) *http.Response {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.url(path), r)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", e.authorization())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// envelopeOf decodes a Dify error body.
type errBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

func (e *env) wantError(resp *http.Response, body []byte, status int, code, message string) {
	e.t.Helper()
	var eb errBody
	if err := json.Unmarshal(body, &eb); err != nil {
		e.t.Fatalf("error body %q is not JSON: %v", body, err)
	}
	if resp.StatusCode != status || eb.Status != status || eb.Code != code || (message != "*" && eb.Message != message) {
		e.t.Fatalf("got %d %s, want %d %q %q", resp.StatusCode, body, status, code, message)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("error Content-Type %q", ct)
	}
}

// sseFrame is a received frame and when it arrived.
type sseFrame struct {
	raw  string
	data map[string]any
	at   time.Duration // since the request was sent
}

func (f sseFrame) event() string {
	if f.data == nil {
		return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(f.raw), "event:"))
	}
	s, _ := f.data["event"].(string)
	return s
}

func (f sseFrame) str(k string) string { s, _ := f.data[k].(string); return s }

// readFrames reads SSE frames (blank-line separated) until EOF.
func readFrames(t testing.TB, r io.Reader, start time.Time, each func(sseFrame) bool) []sseFrame {
	t.Helper()
	br := bufio.NewReader(r)
	var out []sseFrame
	var cur strings.Builder
	for {
		line, err := br.ReadString('\n')
		cur.WriteString(line)
		if line == "\n" || line == "\r\n" {
			f := sseFrame{raw: cur.String(), at: time.Since(start)}
			cur.Reset()
			if strings.HasPrefix(f.raw, "data:") {
				payload := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(f.raw), "data:"))
				if err := json.Unmarshal([]byte(payload), &f.data); err != nil {
					t.Errorf("frame %q: %v", f.raw, err)
				}
			}
			out = append(out, f)
			if each != nil && !each(f) {
				return out
			}
		}
		if err != nil {
			if cur.Len() > 0 {
				t.Errorf("stream ended inside a frame: %q", cur.String())
			}
			return out
		}
	}
}

// chat sends a chat request and reads the whole stream.
func (e *env) chat(body map[string]any, hdr ...string) (*http.Response, []sseFrame) {
	e.t.Helper()
	start := time.Now()
	resp := e.send(http.MethodPost, "/chat-messages", body, hdr...)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("chat: %d %s", resp.StatusCode, data)
	}
	return resp, readFrames(e.t, resp.Body, start, nil)
}

func chatBody(query, user string, extra ...any) map[string]any {
	b := map[string]any{"query": query, "user": user, "inputs": map[string]any{"city": "Seoul"}, "response_mode": "streaming"}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

func decode[T any](t testing.TB, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, data, err)
	}
	return v
}
