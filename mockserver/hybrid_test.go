package mockserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/author"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/lint"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// hybridKey is shaped like a Dify app key (docs/api §1.1); it is not a live key.
const hybridKey = "app-HybridUpstr3amK3yF0rT3sts"

// upstreamScenario is the stand-in Dify's one answer, paced so that its
// frames come over about a second.
const upstreamScenario = `name: upstream-answer
default: true
query: anything
pacing: {start_delay: 100ms, time_to_first_token: 200ms, batch_interval: 150ms, chars_per_second: 40, step_gap: 100ms}
steps:
  - thinking: Let me plan this.
  - answer: Saturday Gyeongbokgung, Sunday Bukchon and a market dinner.
`

// fakeUpstream is a loopback stand-in for the real Dify: a dify-mock
// replaying upstreamScenario at its recorded pace, accepting only
// hybridKey, with its chat route switchable to the failures hybrid mode
// must survive.
type fakeUpstream struct {
	t      *testing.T
	mock   *mockserver.Server
	ts     *httptest.Server
	frames []cassette.RecordedFrame // the scenario's frames and offsets
	mode   atomic.Value             // "", "401", "503", "redirect", "slow"
	target string                   // where "redirect" points
	chats  atomic.Int32
	// answer, when set (mode "answer"), writes the chat answer: the tests
	// of what the upstream's stream may hold (hybrid_live_test.go).
	answer func(w http.ResponseWriter, r *http.Request)
}

// scenarioDir is a fresh folder holding the cassette authored from
// scenario (file names it in messages), and the cassette's name.
func scenarioDir(t *testing.T, file, scenario string) (dir, name string) {
	t.Helper()
	dir = t.TempDir()
	name, data, err := author.GenerateBytes(file, []byte(scenario), author.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := author.WriteCassette(dir, name, data, false); err != nil {
		t.Fatal(err)
	}
	return dir, name
}

func newFakeUpstream(t *testing.T) *fakeUpstream {
	t.Helper()
	dir, name := scenarioDir(t, "upstream.yaml", upstreamScenario)
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	mock, err := mockserver.New(mockserver.Config{Cassettes: set, APIKeys: []string{hybridKey}, Speed: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := set.Get(name)
	f := &fakeUpstream{t: t, mock: mock, frames: c.Turns[0].Frames}
	f.mode.Store("")
	f.ts = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.ts.Close)
	return f
}

func (f *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/chat-messages" {
		f.chats.Add(1)
		switch f.mode.Load().(string) {
		case "401":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"code":"unauthorized","message":"Access token is invalid","status":401}`)
			return
		case "503":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"code":"service_unavailable","message":"Down for maintenance","status":503}`)
			return
		case "redirect":
			http.Redirect(w, r, f.target+"/v1/chat-messages", http.StatusTemporaryRedirect)
			return
		case "break":
			// One frame, then the connection drops mid-stream.
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `data: {"event":"agent_message","conversation_id":"c1c1c1c1-0000-4000-8000-000000000001","message_id":"a1a1a1a1-0000-4000-8000-000000000002","created_at":1764471600,"task_id":"b1b1b1b1-0000-4000-8000-000000000003","id":"a1a1a1a1-0000-4000-8000-000000000002","answer":"Half an ans"}`+"\n\n")
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		case "answer":
			f.answer(w, r)
			return
		case "slow":
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
	}
	f.mock.ServeHTTP(w, r)
}

// upstreamGet is a GET on the stand-in with the real key.
func (f *fakeUpstream) get(path string, out any) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/v1"+path, nil)
	req.Header.Set("Authorization", "Bearer "+hybridKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil || resp.StatusCode != http.StatusOK {
		f.t.Fatalf("upstream GET %s: %d %v", path, resp.StatusCode, err)
	}
}

// hybridEnv is a mock in hybrid mode in front of up, serving and growing dir.
func hybridEnv(t *testing.T, up *fakeUpstream, dir string, edit func(*mockserver.Config)) (*env, *lockedBuffer) {
	t.Helper()
	return hybridEnvRec(t, up, dir, nil, edit)
}

// hybridEnvRec is hybridEnv with the recorder's configuration edited too.
func hybridEnvRec(t *testing.T, up *fakeUpstream, dir string, editRec func(*record.Config), edit func(*mockserver.Config)) (*env, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rc := record.Config{
		Upstream: up.ts.URL + "/v1", UpstreamKey: hybridKey, Dir: dir, MaxTurns: 20, SkipRecordedQueries: true,
		Logf: func(format string, args ...any) {
			logger.Info("upstream: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
		},
	}
	if editRec != nil {
		editRec(&rc)
	}
	rec, err := record.New(context.Background(), rc)
	if err != nil {
		t.Fatalf("record.New: %v", err)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mockserver.Config{Cassettes: set, Upstream: rec, Speed: 1, Logger: logger,
		UpstreamTimeout: 500 * time.Millisecond, Control: mockserver.ControlConfig{CassetteDir: dir}}
	if edit != nil {
		edit(&cfg)
	}
	return newEnv(t, cfg), logs
}

func hybridAsk(e *env, query, conv string) (*http.Response, []sseFrame) {
	e.t.Helper()
	body := map[string]any{"query": query, "user": "fe-dev", "inputs": map[string]any{}, "response_mode": "streaming"}
	if conv != "" {
		body["conversation_id"] = conv
	}
	return e.chat(body)
}

func answerOf(frames []sseFrame) (events []string, answer string) {
	for _, f := range frames {
		events = append(events, f.event())
		if f.event() == "agent_message" {
			answer += f.str("answer")
		}
	}
	return events, answer
}

// TestHybridWalkthrough is docs/mock/hybrid.md's walkthrough: the first
// ask streams live from the upstream, with its frames and timing, under
// the mock's ids, is stored and saved; a follow-up continues the same
// upstream conversation; with the upstream stopped the same question, and
// a similar one, are answered from the saved cassette with the same frames
// and timing; a new question falls back. The key is never on disk nor in
// any output.
func TestHybridWalkthrough(t *testing.T) {
	up := newFakeUpstream(t)
	dir := filepath.Join(t.TempDir(), "mock-cassettes")
	e, logs := hybridEnv(t, up, dir, nil)
	var outputs strings.Builder // every response the client saw

	resp, live := hybridAsk(e, "Plan a weekend in Seoul", "")
	if resp.Header.Get(mockserver.HeaderMatch) != "upstream" || resp.Header.Get(mockserver.HeaderUpstream) != "live" {
		t.Fatalf("first ask: match %q upstream %q", resp.Header.Get(mockserver.HeaderMatch), resp.Header.Get(mockserver.HeaderUpstream))
	}
	if len(live) != len(up.frames) {
		t.Fatalf("relayed %d frames, the upstream sends %d", len(live), len(up.frames))
	}
	// Live: each frame arrives about when the upstream sends it (generous
	// bounds for a loaded machine), not in one burst at the end.
	last := len(live) - 1
	for i, f := range live {
		if d := f.at - up.frames[i].Offset; d < -50*time.Millisecond || d > time.Second {
			t.Errorf("frame %d arrived at %v, the upstream sends it at %v", i, f.at, up.frames[i].Offset)
		}
	}
	if spread := up.frames[last].Offset - up.frames[0].Offset; live[last].at-live[0].at < spread/2 {
		t.Errorf("the frames arrived within %v, the upstream spreads them over %v: not relayed live", live[last].at-live[0].at, spread)
	}
	conv := live[0].str("conversation_id")
	var upConvs struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	up.get("/conversations?user=fe-dev", &upConvs)
	if len(upConvs.Data) != 1 || conv == "" || conv == upConvs.Data[0].ID {
		t.Fatalf("client conversation %q, upstream conversations %+v: want the mock's own id", conv, upConvs.Data)
	}
	upConv := upConvs.Data[0].ID
	for _, f := range live {
		if f.data != nil && (f.str("conversation_id") != conv || strings.Contains(f.raw, upConv)) {
			t.Errorf("frame carries the upstream's ids: %s", f.raw)
		}
		outputs.WriteString(f.raw)
	}
	liveEvents, liveAnswer := answerOf(live)

	// Stored locally with the mock's ids.
	_, body := e.do(http.MethodGet, "/messages?user=fe-dev&conversation_id="+conv, nil)
	var history struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &history); err != nil || len(history.Data) != 1 || history.Data[0]["answer"] != liveAnswer || history.Data[0]["id"] != live[0].str("message_id") {
		t.Fatalf("GET /messages after the live turn: %s (want the answer %q)", body, liveAnswer)
	}
	outputs.Write(body)

	// Saved as a cassette lint accepts, once the response has ended.
	mockserver.WaitLiveSaves(e.srv)
	saved := filepath.Join(dir, "plan-a-weekend-in-seoul.yaml")
	if _, err := os.Stat(saved); err != nil {
		t.Fatalf("not saved: %v\n%s", err, logs)
	}
	if rep := lint.Paths([]string{dir}); !rep.OK() {
		t.Fatalf("lint: %v", rep.Problems)
	}

	// A follow-up reaches the mapped upstream conversation.
	resp, follow := hybridAsk(e, "And where should we eat on Sunday?", conv)
	if resp.Header.Get(mockserver.HeaderMatch) != "upstream" || follow[0].str("conversation_id") != conv {
		t.Fatalf("follow-up: match %q conversation %q", resp.Header.Get(mockserver.HeaderMatch), follow[0].str("conversation_id"))
	}
	var upMsgs struct {
		Data []map[string]any `json:"data"`
	}
	up.get("/messages?user=fe-dev&conversation_id="+upConv, &upMsgs)
	if len(upMsgs.Data) != 2 || upMsgs.Data[1]["query"] != "And where should we eat on Sunday?" {
		t.Fatalf("upstream conversation %s holds %+v; want both turns", upConv, upMsgs.Data)
	}
	mockserver.WaitLiveSaves(e.srv)
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := set.Get("plan-a-weekend-in-seoul"); c == nil || len(c.Turns) != 2 {
		t.Fatalf("the cassette does not hold both turns: %+v\n%s", c, logs)
	}

	// The upstream stops: the same question is answered from the folder,
	// with the same frames and timing.
	up.ts.Close()
	resp, again := hybridAsk(e, "Plan a weekend in Seoul", "")
	if resp.Header.Get(mockserver.HeaderMatch) != "exact" || resp.Header.Get(mockserver.HeaderCassette) != "plan-a-weekend-in-seoul" || resp.Header.Get(mockserver.HeaderTurn) != "0" {
		t.Fatalf("second ask: match %q cassette %q turn %q", resp.Header.Get(mockserver.HeaderMatch), resp.Header.Get(mockserver.HeaderCassette), resp.Header.Get(mockserver.HeaderTurn))
	}
	againEvents, againAnswer := answerOf(again)
	if strings.Join(againEvents, ",") != strings.Join(liveEvents, ",") || againAnswer != liveAnswer {
		t.Fatalf("replay %v %q, live %v %q", againEvents, againAnswer, liveEvents, liveAnswer)
	}
	for i := range again {
		if d := again[i].at - live[i].at; d < -500*time.Millisecond || d > 500*time.Millisecond {
			t.Errorf("frame %d replayed at %v, streamed live at %v", i, again[i].at, live[i].at)
		}
		outputs.WriteString(again[i].raw)
	}
	if again[0].str("conversation_id") == conv {
		t.Error("the replay reused the first conversation's id")
	}

	// A similar question too.
	resp, _ = hybridAsk(e, "weekend plans in Seoul?", "")
	if resp.Header.Get(mockserver.HeaderMatch) != "similar" || resp.Header.Get(mockserver.HeaderCassette) != "plan-a-weekend-in-seoul" || resp.Header.Get(mockserver.HeaderScore) == "" {
		t.Fatalf("similar ask: match %q cassette %q score %q", resp.Header.Get(mockserver.HeaderMatch), resp.Header.Get(mockserver.HeaderCassette), resp.Header.Get(mockserver.HeaderScore))
	}

	// A new question, the upstream unreachable: the fallback, saying so.
	resp, fb := hybridAsk(e, "Tell me a joke", "")
	if resp.Header.Get(mockserver.HeaderMatch) != "fallback" || !strings.HasPrefix(resp.Header.Get(mockserver.HeaderUpstream), "fallback: the upstream could not be reached") || len(fb) == 0 {
		t.Fatalf("fallback: match %q upstream %q", resp.Header.Get(mockserver.HeaderMatch), resp.Header.Get(mockserver.HeaderUpstream))
	}
	if !strings.Contains(logs.String(), "answered from the recorded turns instead") {
		t.Errorf("no log line for the fallback:\n%s", logs)
	}

	// The journal and console say what happened.
	journalBody := journalJSON(t, e.ts.URL)
	var list struct {
		Data []struct {
			Match, Upstream, Cassette string
			Saved                     bool
		} `json:"data"`
	}
	if err := json.Unmarshal(journalBody, &list); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, en := range list.Data {
		if en.Match != "" {
			seen = append(seen, en.Match+"/"+en.Upstream+"/"+en.Cassette+"/"+boolWord(en.Saved))
		}
	}
	want := []string{"upstream/live/plan-a-weekend-in-seoul/saved", "upstream/live/plan-a-weekend-in-seoul/saved", "exact//plan-a-weekend-in-seoul/-",
		"similar//plan-a-weekend-in-seoul/-", "fallback/fallback: the upstream could not be reached"}
	got := strings.Join(seen, "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("journal lacks %q:\n%s", w, got)
		}
	}

	// The key: not on disk, in the log, the journal or any response.
	lower := strings.ToLower(hybridKey)
	for name, data := range folderFiles(t, dir) {
		if strings.Contains(strings.ToLower(string(data)), lower) {
			t.Errorf("%s contains the upstream key", name)
		}
	}
	for what, text := range map[string]string{"log": logs.String(), "journal": string(journalBody), "responses": outputs.String()} {
		if strings.Contains(strings.ToLower(text), lower) {
			t.Errorf("the %s contains the upstream key", what)
		}
	}
}

func boolWord(b bool) string {
	if b {
		return "saved"
	}
	return "-"
}

// folderFiles reads every file under dir, hidden ones included.
func folderFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// localScenario is a recorded turn to fall back to.
const localScenario = `name: local-answer
default: true
query: What is the capital of Portugal?
steps:
  - answer: Lisbon.
`

// Each way the upstream can fail before its first frame gets the
// documented fallback: the recorded default turn, with a header and a log
// line saying why, and nothing saved. A redirect is not followed.
func TestHybridUpstreamFailuresFallBack(t *testing.T) {
	up := newFakeUpstream(t)
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if strings.Contains(r.Header.Get("Authorization"), hybridKey) {
			t.Errorf("the key followed the redirect to %s", r.URL)
		}
	}))
	defer other.Close()
	up.target = other.URL

	dir, _ := scenarioDir(t, "local.yaml", localScenario)
	e, logs := hybridEnv(t, up, dir, func(c *mockserver.Config) { c.Speed = 0 })

	for _, tc := range []struct {
		mode, reason string
	}{
		{"401", "the upstream answered HTTP 401: unauthorized Access token is invalid (check --upstream-key)"},
		{"503", "the upstream answered HTTP 503: service_unavailable Down for maintenance"},
		{"redirect", "the upstream answered a redirect (HTTP 307), which is never followed"},
		{"slow", "the upstream sent no answer in time"},
	} {
		up.mode.Store(tc.mode)
		began := time.Now()
		resp, frames := hybridAsk(e, "A question nobody recorded: "+tc.mode, "")
		took := time.Since(began)
		h := resp.Header
		if h.Get(mockserver.HeaderMatch) != "fallback" || !strings.HasPrefix(h.Get(mockserver.HeaderUpstream), "fallback: "+tc.reason) ||
			h.Get(mockserver.HeaderCassette) != "local-answer" {
			t.Errorf("%s: match %q upstream %q cassette %q", tc.mode, h.Get(mockserver.HeaderMatch), h.Get(mockserver.HeaderUpstream), h.Get(mockserver.HeaderCassette))
		}
		if _, answer := answerOf(frames); answer != "Lisbon." {
			t.Errorf("%s: the fallback answered %q", tc.mode, answer)
		}
		if tc.mode == "slow" && took > 2*time.Second {
			t.Errorf("slow: the fallback took %v with a 500ms --upstream-timeout", took)
		}
		if !strings.Contains(logs.String(), tc.reason) {
			t.Errorf("%s: the log does not say %q:\n%s", tc.mode, tc.reason, logs)
		}
	}
	if elsewhere.Load() != 0 {
		t.Errorf("the redirect target got %d request(s)", elsewhere.Load())
	}
	if n := len(folderFiles(t, dir)); n != 2 { // app.yaml and local-answer.yaml
		t.Errorf("%d files in the folder after failures, want 2", n)
	}
}

// With no chat cassette in the folder yet and the upstream failing, there
// is nothing to fall back to: 502, saying why.
func TestHybridWithAnEmptyFolderAndNoUpstream(t *testing.T) {
	up := newFakeUpstream(t)
	e, _ := hybridEnv(t, up, t.TempDir(), nil)
	up.mode.Store("503")
	resp, body := e.do(http.MethodPost, "/chat-messages", map[string]any{"query": "hi", "user": "fe-dev", "inputs": map[string]any{}, "response_mode": "streaming"})
	e.wantError(resp, body, http.StatusBadGateway, "bad_gateway",
		"dify-mock: the upstream Dify did not answer (the upstream answered HTTP 503: service_unavailable Down for maintenance) and no cassette is loaded to answer instead.")
}

// A live stream the upstream cuts after it started cannot fall back: the
// client gets the frames so far and a Dify-style error event; the turn is
// stored as an error and not saved. A stop ends a live turn with
// message_end, as Dify answers a stop, and it is not saved either.
func TestHybridLiveStreamBreaksAndStops(t *testing.T) {
	up := newFakeUpstream(t)
	dir := t.TempDir()
	e, logs := hybridEnv(t, up, dir, nil)

	up.mode.Store("break")
	resp, frames := hybridAsk(e, "A question the upstream drops", "")
	if resp.Header.Get(mockserver.HeaderUpstream) != "live" || len(frames) != 2 || frames[0].str("answer") != "Half an ans" ||
		frames[1].event() != "error" || !strings.HasPrefix(frames[1].str("message"), "dify-mock: the upstream stream broke") {
		t.Fatalf("broken stream: %v %+v", resp.Header, frames)
	}
	conv := frames[0].str("conversation_id")
	if strings.Contains(frames[0].raw, "a1a1a1a1-0000-4000-8000-000000000002") || frames[0].str("message_id") != frames[1].str("message_id") {
		t.Errorf("the live frame kept the upstream's message id: %s", frames[0].raw)
	}
	if frames[1].str("conversation_id") != conv {
		t.Errorf("the error frame names conversation %q, the stream %q", frames[1].str("conversation_id"), conv)
	}
	_, body := e.do(http.MethodGet, "/messages?user=fe-dev&conversation_id="+conv, nil)
	var history struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &history); err != nil || len(history.Data) != 1 || history.Data[0]["status"] != "error" {
		t.Errorf("GET /messages after a broken live turn: %s", body)
	}
	if !strings.Contains(logs.String(), "the live stream broke") {
		t.Errorf("no log line for the broken stream:\n%s", logs)
	}

	up.mode.Store("")
	start := time.Now()
	stream := e.send(http.MethodPost, "/chat-messages", map[string]any{"query": "Plan a long trip", "user": "fe-dev", "inputs": map[string]any{}, "response_mode": "streaming"})
	defer stream.Body.Close()
	stopped := false
	got := readFrames(t, stream.Body, start, func(f sseFrame) bool {
		if !stopped && f.str("task_id") != "" {
			stopped = true
			r, b := e.do(http.MethodPost, "/chat-messages/"+f.str("task_id")+"/stop", map[string]any{"user": "fe-dev"})
			if r.StatusCode != http.StatusOK {
				t.Errorf("stop: %d %s", r.StatusCode, b)
			}
		}
		return true
	})
	if len(got) == 0 || got[len(got)-1].event() != "message_end" || len(got) >= len(up.frames) {
		t.Errorf("stopped live turn: %d frames (the whole turn has %d), last %q", len(got), len(up.frames), got[len(got)-1].event())
	}
	if n := len(folderFiles(t, dir)); n != 1 { // app.yaml only
		t.Errorf("%d files in the folder; a broken or stopped turn was saved", n)
	}
}

// A mock serving the same folder with --watch-cassettes picks up what a
// hybrid mock saves.
func TestHybridSavesReachWatchingMocks(t *testing.T) {
	up := newFakeUpstream(t)
	dir, _ := scenarioDir(t, "local.yaml", localScenario)
	e, _ := hybridEnv(t, up, dir, func(c *mockserver.Config) { c.Speed = 0 })
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	other := newEnv(t, mockserver.Config{Cassettes: set, Control: mockserver.ControlConfig{CassetteDir: dir}})
	other.srv.WatchCassettes(20 * time.Millisecond)

	if resp, _ := hybridAsk(e, "Which museums open on Mondays?", ""); resp.Header.Get(mockserver.HeaderUpstream) != "live" {
		t.Fatalf("not answered live: %v", resp.Header)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, ok := other.srv.Cassette("which-museums-open-on-mondays"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watching mock never loaded the new cassette: %v", other.srv.CassetteNames())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, _ := hybridAsk(other, "which museums open on mondays", "")
	if resp.Header.Get(mockserver.HeaderCassette) != "which-museums-open-on-mondays" {
		t.Errorf("the watching mock answered from %q", resp.Header.Get(mockserver.HeaderCassette))
	}
}

// The upstream key is spent only for this machine's own clients: a page of
// another site (any site may use the recorded turns, CORS "*") and a
// DNS-rebound host name get the recorded turns, saying why.
func TestHybridKeyOnlyForThisMachinesClients(t *testing.T) {
	up := newFakeUpstream(t)
	dir, _ := scenarioDir(t, "local.yaml", localScenario)
	e, _ := hybridEnv(t, up, dir, func(c *mockserver.Config) { c.Speed = 0; c.CORSOrigin = "*" })
	send := func(query, host, origin string) *http.Response {
		t.Helper()
		body := `{"query":` + js(query) + `,"user":"fe-dev","inputs":{},"response_mode":"streaming"}`
		req, _ := http.NewRequest(http.MethodPost, e.url("/chat-messages"), strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer app-test")
		req.Header.Set("Content-Type", "application/json")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// A recorded query is answered as always, whoever asks.
	if h := send("What is the capital of Portugal?", "", "https://evil.example").Header; h.Get(mockserver.HeaderMatch) != "exact" || h.Get(mockserver.HeaderUpstream) != "" {
		t.Errorf("a recorded query from another site: match %q upstream %q", h.Get(mockserver.HeaderMatch), h.Get(mockserver.HeaderUpstream))
	}
	for _, tc := range []struct{ query, host, origin, want string }{
		{"Which bridges cross the Seine?", "", "https://evil.example", "fallback: the request comes from a web page of another site"},
		{"Where do the trams stop?", "evil.example", "", "fallback: the request names another host than this machine"},
		{"Is the opera open on Sunday?", "", "http://localhost:5173", "live"},
		{"How far is the airport by taxi?", "localhost", "", "live"},
	} {
		before := up.chats.Load()
		resp := send(tc.query, tc.host, tc.origin)
		if got := resp.Header.Get(mockserver.HeaderUpstream); !strings.HasPrefix(got, tc.want) {
			t.Errorf("host %q origin %q: %s %q, want %q", tc.host, tc.origin, mockserver.HeaderUpstream, got, tc.want)
		}
		if forwarded := up.chats.Load() > before; forwarded != (tc.want == "live") {
			t.Errorf("host %q origin %q: forwarded %v", tc.host, tc.origin, forwarded)
		}
	}
}
