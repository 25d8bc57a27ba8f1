package record_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// Replay tolerance for frame timing (docs/mock/running.md): a frame may be
// up to 2 ms early (timer rounding) and 50 ms late.
const (
	early = 2 * time.Millisecond
	late  = 50 * time.Millisecond
)

var (
	uuidRE      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	createdAtRE = regexp.MustCompile(`"created_at":[0-9]+`)
)

// withoutIDs blanks what a replay legitimately changes: ids and created_at.
func withoutIDs(b []byte) string {
	return createdAtRE.ReplaceAllString(uuidRE.ReplaceAllString(string(b), "<id>"), `"created_at":<t>`)
}

// TestRecordThenReplay records a two-turn conversation from a fake Dify that
// streams at known offsets, loads the written folder, and replays it through
// the real mock: frames come back byte for byte (ids aside) at the recorded
// offsets.
func TestRecordThenReplay(t *testing.T) {
	up := newFakeDify(t, agentTurn("Seoul in two days: ", "palaces, then markets."), agentTurn("On Sunday, ", "hike Bukhansan."))
	rec, srv, dir, logs := recorderFor(t, up, "")

	resp, got := chat(t, srv.URL, nil, chatBody("Plan a weekend in Seoul", ""))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if name := resp.Header.Get(cassette.NameHeader); name != "plan-a-weekend-in-seoul" {
		t.Errorf("cassette header %q, want the slug of the query", name)
	}
	if len(got) != len(up.turns[0]) {
		t.Fatalf("client got %d frames, want %d", len(got), len(up.turns[0]))
	}
	_, _ = chat(t, srv.URL, nil, chatBody("And on Sunday?", convID))
	if err := stop(srv, rec); err != nil {
		t.Fatalf("Close: %v\nlog:\n%s", err, logs)
	}

	// The upstream only ever saw its own key; the dummy key never left.
	for _, a := range up.auths {
		if a != "Bearer "+upstreamKey {
			t.Errorf("upstream saw Authorization %q", a)
		}
	}

	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	if set.App == nil || set.App.Info.Name != "Recorded Agent" || set.App.Meta.Provenance != cassette.ProvenanceRecorded || set.App.Meta.Mode != "agent" {
		t.Fatalf("app description: %+v", set.App)
	}
	if set.App.Responses["/site"] == nil || !strings.Contains(string(set.App.Responses["/site"].Body), `"title":"Recorded Agent"`) {
		t.Errorf("GET /site not recorded as sent")
	}
	if len(set.Names) != 1 || set.Names[0] != "plan-a-weekend-in-seoul" {
		t.Fatalf("cassettes %v, want one (the follow-up appends to the first)", set.Names)
	}
	c, _ := set.Get("plan-a-weekend-in-seoul")
	if c.Meta.Provenance != cassette.ProvenanceRecorded || c.Meta.Mode != "agent" || c.Meta.RecordedAt == "" ||
		c.Meta.Source != "recorded by dify-mock record from "+strings.TrimPrefix(up.srv.URL, "http://") {
		t.Errorf("meta %+v", c.Meta)
	}
	if len(c.Turns) != 2 || c.Turns[1].Request.ConversationID != convID {
		t.Fatalf("turns: %d", len(c.Turns))
	}
	for ti, turn := range c.Turns {
		sent := up.sent[ti]
		if len(turn.Frames) != len(up.turns[ti]) {
			t.Fatalf("turn %d: %d frames recorded, %d sent", ti, len(turn.Frames), len(up.turns[ti]))
		}
		// Offsets are measured from the recorder's request start, an unknown
		// moment before the upstream's. So offset - (sent - first sent) is
		// that constant plus how late the recorder read each frame; its
		// spread across frames is the recording's timing error.
		lo, hi := time.Duration(1<<62), time.Duration(-1<<62)
		for i, f := range turn.Frames {
			if string(f.Raw) != up.turns[ti][i].Raw {
				t.Errorf("turn %d frame %d:\n got %q\nwant %q", ti, i, f.Raw, up.turns[ti][i].Raw)
			}
			d := f.Offset - sent[i].Sub(sent[0])
			lo, hi = min(lo, d), max(hi, d)
		}
		if hi-lo > late+early {
			for i, f := range turn.Frames {
				t.Logf("turn %d frame %d: offset %v, sent %v after the first", ti, i, f.Offset, sent[i].Sub(sent[0]))
			}
			t.Errorf("turn %d: recorded offsets deviate from the send times by up to %v (tolerance %v)", ti, hi-lo, late+early)
		}
		if turn.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
			t.Errorf("turn %d: response headers %v", ti, turn.Header)
		}
	}

	// Replay through the mock at recorded speed.
	mock, err := mockserver.New(mockserver.Config{Cassettes: set, Speed: 1})
	if err != nil {
		t.Fatalf("mockserver.New: %v", err)
	}
	ms := httptest.NewServer(mock)
	t.Cleanup(ms.Close)
	want := c.Turns[0].Frames
	// Byte differences fail at once. Timing misses are retried twice: this
	// box is shared with parallel builds, and one overloaded moment should
	// not fail the test, while a replay that ignores offsets fails all three.
	var misses []string
	for attempt := 0; attempt < 3; attempt++ {
		resp, replayed := chat(t, ms.URL, nil, chatBody("Plan a weekend in Seoul", ""))
		if resp.StatusCode != 200 {
			t.Fatalf("replay status %d", resp.StatusCode)
		}
		if len(replayed) != len(want) {
			t.Fatalf("replay gave %d frames, want %d", len(replayed), len(want))
		}
		misses = nil
		for i := range want {
			if withoutIDs(replayed[i].Raw) != withoutIDs(want[i].Raw) {
				t.Fatalf("replayed frame %d:\n got %q\nwant %q", i, replayed[i].Raw, want[i].Raw)
			}
			if d := replayed[i].At - want[i].Offset; d < -early || d > late {
				misses = append(misses, fmt.Sprintf("frame %d at %v, recorded offset %v (off by %v)", i, replayed[i].At, want[i].Offset, d))
			}
		}
		if len(misses) == 0 {
			break
		}
		t.Logf("replay attempt %d missed the timing tolerance: %v", attempt+1, misses)
	}
	if len(misses) > 0 {
		t.Errorf("replay timing outside -%v/+%v: %v", early, late, misses)
	}
}

// TestRecordStreamsProgressively holds the upstream's last frame until the
// client has seen the first one: a recorder that buffered the stream would
// never deliver it and the request would time out.
func TestRecordStreamsProgressively(t *testing.T) {
	up := newFakeDify(t, agentTurn("Hello ", "there."))
	up.gate = make(chan struct{})
	rec, srv, _, logs := recorderFor(t, up, "")
	var firstAt time.Duration
	start := time.Now()
	_, got := chatWith(t, srv.URL, nil, chatBody("Hello", ""), func(i int) {
		if i == 0 {
			firstAt = time.Since(start)
			close(up.gate)
		}
	})
	if len(got) != 5 {
		t.Fatalf("got %d frames", len(got))
	}
	// The gate already proves the first frame was relayed before the last
	// one existed; its arrival time shows it was not held back either.
	if last := up.turns[0][len(up.turns[0])-1].At; firstAt >= last {
		t.Errorf("first frame arrived after %v; the last frame is due at %v", firstAt, last)
	}
	t.Logf("first frame after %v", firstAt)
	if err := stop(srv, rec); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
}

// TestRecordKeepsSecretsOutOfFiles has the upstream echo its key (and other
// credentials) in frames, headers and a JSON answer; none of it may reach a
// file, while the client still gets the upstream's bytes unchanged.
func TestRecordKeepsSecretsOutOfFiles(t *testing.T) {
	leaky := []scheduledFrame{
		{0, dataFrame(`"agent_thought","id":"11111111-2222-4333-8444-555555555555","position":1,"thought":"calling with ` + upstreamKey + `","observation":"{\"api_key\": \"sk-live-abcdefghijklmnopqrstuv\"}","tool":"http","tool_input":"{\"password\": \"hunter2\"}","tool_labels":{},"message_files":[]`)},
		{50 * time.Millisecond, dataFrame(`"agent_message","id":"` + msgID + `","answer":"Your key is ` + upstreamKey + `, token Bearer abcdefghijklmnopqrstuvwxyz"`)},
		{100 * time.Millisecond, dataFrame(`"message_end","id":"` + msgID + `","metadata":{"usage":{"total_tokens":3}},"access_token":"tok-123","files":null`)},
	}
	up := newFakeDify(t, leaky)
	up.extraHdr = http.Header{
		"Set-Cookie":       {"session=" + upstreamKey},
		"X-Api-Key":        {upstreamKey},
		"X-Upstream-Token": {"abc"},
		"X-Request-Id":     {"req-1"},
	}
	up.otherBody = `{"limit":20,"has_more":false,"data":[{"id":"` + convID + `","name":"about ` + upstreamKey + `","inputs":{"secret":"s3"},"status":"normal"}]}`
	rec, srv, dir, logs := recorderFor(t, up, "")

	_, got := chat(t, srv.URL, nil, chatBody("Show me "+upstreamKey, ""))
	var all []byte
	for _, f := range got {
		all = append(all, f.Raw...)
	}
	if !bytes.Contains(all, []byte(upstreamKey)) {
		t.Errorf("the client should get the upstream's stream unchanged")
	}
	if code, _ := do(t, http.MethodGet, srv.URL+"/v1/conversations?user=tester&api_key="+upstreamKey, "", ""); code != 200 {
		t.Fatalf("GET /conversations: %d", code)
	}
	if err := stop(srv, rec); err != nil {
		t.Fatalf("Close: %v\n%s", err, logs)
	}

	fs := files(t, dir)
	if len(fs) != 2 {
		t.Fatalf("files %v, want app.yaml and one cassette", keys(fs))
	}
	secretParts := []string{upstreamKey, upstreamKey[len("app-"):], strings.ToLower(upstreamKey), "sk-live-abcdefghijklmnopqrstuv", "hunter2", "tok-123", "abcdefghijklmnopqrstuvwxyz", `"s3"`, clientKey}
	for name, b := range fs {
		for _, s := range secretParts {
			if bytes.Contains(bytes.ToLower(b), []byte(strings.ToLower(s))) {
				t.Errorf("%s contains %q", name, s)
			}
		}
		for _, h := range []string{"Authorization", "Set-Cookie", "X-Api-Key", "X-Upstream-Token", "Cookie"} {
			if bytes.Contains(b, []byte(h+":")) {
				t.Errorf("%s keeps header %s", name, h)
			}
		}
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatalf("the scrubbed cassette must still load (frame lengths recomputed): %v", err)
	}
	c, _ := set.Get(set.Names[0])
	if len(c.Turns) != 1 || len(c.Turns[0].Frames) != 3 {
		t.Fatalf("turns %+v", c.Turns)
	}
	if !strings.Contains(string(c.Turns[0].Frames[1].Raw), `"answer":"Your key is [REDACTED], token Bearer [REDACTED]"`) {
		t.Errorf("frame 1 = %q", c.Turns[0].Frames[1].Raw)
	}
	if c.Turns[0].Header.Get("X-Request-Id") != "req-1" {
		t.Errorf("harmless headers should stay: %v", c.Turns[0].Header)
	}
	if len(c.Others) != 1 || !strings.Contains(c.Others[0].Response.Body, `"name":"about [REDACTED]"`) ||
		!strings.Contains(c.Others[0].Request.URL, "api_key=[REDACTED]") {
		t.Errorf("GET /conversations should be filed with the session, scrubbed: %+v", c.Others)
	}
}

// TestRecordRefusesCustomRuleLeavingAKey: a user rule whose replacement
// looks like a Dify key makes the save-time check refuse the cassette.
func TestRecordRefusesCustomRuleLeavingAKey(t *testing.T) {
	rule, err := record.ParseRule(`codeword-[0-9]+ => app-AAAAAAAAAAAAAAAAAAAAAAAA1`)
	if err != nil {
		t.Fatal(err)
	}
	up := newFakeDify(t, agentTurn("the codeword-42 ", "is safe"))
	rec, srv, dir, _ := recorderFor(t, up, "", rule)
	resp, got := chat(t, srv.URL, nil, chatBody("Tell me the codeword", ""))
	if resp.StatusCode != 200 || len(got) != 5 {
		t.Fatalf("the client still gets its answer: %d, %d frames", resp.StatusCode, len(got))
	}
	err = stop(srv, rec)
	var refused *record.SaveRefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("Close = %v, want a SaveRefusedError", err)
	}
	msg := err.Error()
	for _, want := range []string{"refusing to save cassette tell-me-the-codeword", "Dify API key", "interaction 0 (POST /chat-messages) response body, frame 1", "nothing was written"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "AAAAAAAAAAAAAAAAAAAAAAAA1") {
		t.Errorf("the error quotes the secret: %s", msg)
	}
	if fs := files(t, dir); len(fs) != 1 || fs["app.yaml"] == nil {
		t.Errorf("files %v, want only app.yaml (no cassette, no temporary file)", keys(fs))
	}
}

// TestRecordRefusesKeySplitAcrossFrames: a key streamed in two answer
// deltas passes per-frame scrubbing; the save-time check joins the deltas
// and refuses.
func TestRecordRefusesKeySplitAcrossFrames(t *testing.T) {
	up := newFakeDify(t, agentTurn("key: "+upstreamKey[:12], upstreamKey[12:]+" done"))
	rec, srv, dir, _ := recorderFor(t, up, "")
	chat(t, srv.URL, nil, chatBody("What is the key", ""))
	err := stop(srv, rec)
	var refused *record.SaveRefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("Close = %v, want a SaveRefusedError", err)
	}
	if !strings.Contains(err.Error(), "answer streamed across frames from frame 1") {
		t.Errorf("error does not locate the split: %v", err)
	}
	if strings.Contains(err.Error(), upstreamKey[4:12]) {
		t.Errorf("the error quotes the secret: %v", err)
	}
	if fs := files(t, dir); len(fs) != 1 {
		t.Errorf("files %v, want only app.yaml", keys(fs))
	}
}

// TestRecordNeverOverwrites: names that exist get -2, -3…; the existing
// file is untouched, and a session's later turns replace only its own file.
func TestRecordNeverOverwrites(t *testing.T) {
	up := newFakeDify(t, agentTurn("Hi ", "there."))
	dir := t.TempDir()
	sentinel := []byte("# someone else's cassette\n")
	if err := os.WriteFile(filepath.Join(dir, "hello.yaml"), sentinel, 0o644); err != nil {
		t.Fatal(err)
	}
	rec, srv, _, logs := recorderFor(t, up, dir)
	resp, _ := chat(t, srv.URL, nil, chatBody("Hello", ""))
	if got := resp.Header.Get(cassette.NameHeader); got != "hello-2" {
		t.Errorf("first session recorded into %q, want hello-2", got)
	}
	resp, _ = chat(t, srv.URL, http.Header{cassette.NameHeader: {"hello"}}, chatBody("Hello again", ""))
	if got := resp.Header.Get(cassette.NameHeader); got != "hello-3" {
		t.Errorf("named session recorded into %q, want hello-3", got)
	}
	// A follow-up turn (the fake reuses one conversation id, last learned
	// by hello-3) rewrites hello-3, the recorder's own file, in place.
	chat(t, srv.URL, nil, chatBody("More", convID))
	if err := stop(srv, rec); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	fs := files(t, dir)
	if !bytes.Equal(fs["hello.yaml"], sentinel) {
		t.Errorf("hello.yaml was modified")
	}
	if len(fs) != 4 {
		t.Errorf("files %v, want hello, hello-2, hello-3 and app", keys(fs))
	}
	for n, turns := range map[string]int{"hello-2.yaml": 1, "hello-3.yaml": 2} {
		f, err := cassette.Decode(n, fs[n])
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		c, err := cassette.ParseChat(n, n, f)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if len(c.Turns) != turns {
			t.Errorf("%s has %d turns, want %d", n, len(c.Turns), turns)
		}
	}
	if !strings.Contains(logs.String(), "hello.yaml exists; recording into hello-2.yaml") {
		t.Errorf("the rename is not logged:\n%s", logs)
	}
}

// TestRecordDoesNotReplaceAnEditedFile: once someone edits a cassette the
// recorder wrote, the session's next turn goes to a new file.
func TestRecordDoesNotReplaceAnEditedFile(t *testing.T) {
	up := newFakeDify(t, agentTurn("Hi ", "there."))
	rec, srv, dir, logs := recorderFor(t, up, "")
	chat(t, srv.URL, http.Header{cassette.NameHeader: {"edit-me"}}, chatBody("Hello", ""))
	edited := []byte("# edited by hand\n")
	if err := os.WriteFile(filepath.Join(dir, "edit-me.yaml"), edited, 0o644); err != nil {
		t.Fatal(err)
	}
	chat(t, srv.URL, nil, chatBody("More", convID))
	if err := stop(srv, rec); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	fs := files(t, dir)
	if !bytes.Equal(fs["edit-me.yaml"], edited) {
		t.Errorf("the edited file was replaced")
	}
	f, err := cassette.Decode("edit-me-2", fs["edit-me-2.yaml"])
	if err != nil {
		t.Fatalf("edit-me-2.yaml: %v (files %v)", err, keys(fs))
	}
	if c, err := cassette.ParseChat("edit-me-2", "edit-me-2", f); err != nil || len(c.Turns) != 2 {
		t.Errorf("edit-me-2.yaml should hold the whole session: %v", err)
	}
}

// TestRecordFilesRelatedRequests: an upload before the first turn, a stop
// and a rename during/after it all land in the turn's cassette.
func TestRecordFilesRelatedRequests(t *testing.T) {
	up := newFakeDify(t, agentTurn("One ", "two."))
	rec, srv, dir, logs := recorderFor(t, up, "")
	body := "--XyZ\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\ntester\r\n" +
		"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--XyZ--\r\n"
	if code, _ := do(t, http.MethodPost, srv.URL+"/v1/files/upload", "multipart/form-data; boundary=XyZ", body); code != 201 {
		t.Fatalf("upload: %d", code)
	}
	chat(t, srv.URL, nil, chatBody("Count", ""))
	if code, _ := do(t, http.MethodPost, srv.URL+"/v1/chat-messages/"+taskID+"/stop", "application/json", `{"user":"tester"}`); code != 200 {
		t.Fatalf("stop: %d", code)
	}
	if code, _ := do(t, http.MethodPost, srv.URL+"/v1/conversations/"+convID+"/name", "application/json", `{"name":"Weekend","user":"tester"}`); code != 200 {
		t.Fatalf("rename: %d", code)
	}
	if err := stop(srv, rec); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := set.Get("count")
	var paths []string
	for _, in := range c.Others {
		p, _ := cassette.APIPath(in.Request.URL)
		paths = append(paths, in.Request.Method+" "+p)
	}
	want := []string{"POST /files/upload", "POST /chat-messages/" + taskID + "/stop", "POST /conversations/" + convID + "/name"}
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Errorf("other interactions %v, want %v", paths, want)
	}
}

// TestRecordPreStreamError: a JSON error instead of a stream (docs/api §2.3) is
// relayed and recorded as such.
func TestRecordPreStreamError(t *testing.T) {
	up := newFakeDify(t, agentTurn("a", "b"))
	rec, srv, dir, logs := recorderFor(t, up, "")
	resp, _ := chat(t, srv.URL, nil, chatBody("please-fail now", ""))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("client got %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if err := stop(srv, rec); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := set.Get("please-fail-now")
	if !ok || len(c.Turns) != 1 {
		t.Fatalf("cassettes %v\n%s", set.Names, logs)
	}
	turn := c.Turns[0]
	if turn.Status != 429 || turn.Header.Get("Retry-After") != "7" || !strings.Contains(string(turn.Frames[0].Raw), `"code":"too_many_requests"`) {
		t.Errorf("recorded %d %v %q", turn.Status, turn.Header, turn.Frames[0].Raw)
	}
}

// TestRecordDropsTurnWhenClientLeaves: a turn the client abandoned is not
// recorded (its stream would look like a server-side truncation).
func TestRecordDropsTurnWhenClientLeaves(t *testing.T) {
	up := newFakeDify(t, agentTurn("a", "b"))
	up.gate = make(chan struct{}) // never opened: the stream stalls before its last frame
	rec, srv, dir, logs := recorderFor(t, up, "")
	b, _ := json.Marshal(chatBody("Leave early", ""))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat-messages", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dify.NewFrameReader(resp.Body).Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	if err := stop(srv, rec); err != nil {
		t.Fatal(err)
	}
	if fs := files(t, dir); len(fs) != 1 {
		t.Errorf("files %v, want only app.yaml", keys(fs))
	}
	if !strings.Contains(logs.String(), "turn not recorded: the client disconnected") {
		t.Errorf("log:\n%s", logs)
	}
}

func TestRecordRequiresBearerLikeDify(t *testing.T) {
	up := newFakeDify(t, agentTurn("a", "b"))
	_, srv, _, _ := recorderFor(t, up, "")
	before := len(up.auths)
	resp, err := http.Get(srv.URL + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("no key: status %d", resp.StatusCode)
	}
	if len(up.auths) != before {
		t.Errorf("a request without a key reached the upstream")
	}
	if code, body := do(t, http.MethodGet, srv.URL+"/v1/info", "", ""); code != 200 || !strings.Contains(body, "Recorded Agent") {
		t.Errorf("dummy key: %d %s", code, body)
	}
}

func TestRecordRejectsBadCassetteHeader(t *testing.T) {
	up := newFakeDify(t, agentTurn("a", "b"))
	_, srv, _, _ := recorderFor(t, up, "")
	for _, name := range []string{"../escape", "app", "UPPER"} {
		resp, _ := chat(t, srv.URL, http.Header{cassette.NameHeader: {name}}, chatBody("x", ""))
		if resp.StatusCode != 400 {
			t.Errorf("%q: status %d", name, resp.StatusCode)
		}
	}
}

func TestNewRefusesAnotherAppsFolder(t *testing.T) {
	up := newFakeDify(t, agentTurn("a", "b"))
	_, _, dir, _ := recorderFor(t, up, "")
	// Same app again: kept.
	if _, err := record.New(t.Context(), record.Config{Upstream: up.URL(), UpstreamKey: upstreamKey, Dir: dir}); err != nil {
		t.Fatalf("same app: %v", err)
	}
	other := newFakeDify(t, agentTurn("a", "b"))
	other.info = `{"name":"Another Agent","description":"","tags":[],"mode":"agent","author_name":"x"}`
	_, err := record.New(t.Context(), record.Config{Upstream: other.URL(), UpstreamKey: upstreamKey, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), `describes app "Recorded Agent"`) {
		t.Fatalf("another app: %v", err)
	}
	// A wrong key fails at start with Dify's message, without the key.
	_, err = record.New(t.Context(), record.Config{Upstream: up.URL(), UpstreamKey: "app-WrongWrongWrongWrongWrong1", Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "WrongWrong") {
		t.Fatalf("wrong key: %v", err)
	}
}

// stop ends the recorder as the CLI does: the HTTP server first (which
// waits for handlers, and so for their saves), then the recorder.
func stop(srv *httptest.Server, rec *record.Recorder) error {
	srv.Close()
	return rec.Close()
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
