package mockserver_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

var createdAtRE = regexp.MustCompile(`"created_at":([0-9]+)`)

// TestReplayIsByteFaithful: a replay equals the recording once the fresh ids
// and created_at are mapped back (docs/api §2.4, §2.5), and the fresh values are
// consistent within the turn.
func TestReplayIsByteFaithful(t *testing.T) {
	fixed := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	e := newEnv(t, mockserver.Config{Now: func() time.Time { return fixed }})
	resp, frames := e.chat(chatBody("Use your tools", "alice"))
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("Content-Type %q, want the recorded one", ct)
	}
	if got := resp.Header.Get(mockserver.HeaderCassette); got != "tools" {
		t.Errorf("%s = %q", mockserver.HeaderCassette, got)
	}
	c, _ := e.set.Get("tools")
	rec := c.Turns[0].Frames
	if len(frames) != len(rec) {
		t.Fatalf("got %d frames, recorded %d", len(frames), len(rec))
	}
	conv, msg, task := frames[0].str("conversation_id"), frames[0].str("message_id"), frames[0].str("task_id")
	thoughtIDs := map[string]string{} // recorded → replayed
	recThoughts := []string{th1, th1, th1, th2, "", th3}
	for i, f := range frames {
		if f.str("conversation_id") != conv || f.str("message_id") != msg || f.str("task_id") != task {
			t.Fatalf("frame %d: ids not consistent: %s", i, f.raw)
		}
		if f.event() == "agent_thought" {
			thoughtIDs[recThoughts[i]] = f.str("id")
		}
	}
	for _, id := range []string{conv, msg, task, thoughtIDs[th1], thoughtIDs[th2], thoughtIDs[th3]} {
		if id == "" || strings.Contains(string(c.Turns[0].Frames[0].Raw)+string(rec[3].Raw), id) {
			t.Fatalf("id %q was not rewritten", id)
		}
	}
	if len(map[string]bool{thoughtIDs[th1]: true, thoughtIDs[th2]: true, thoughtIDs[th3]: true}) != 3 {
		t.Fatalf("thought ids collapsed: %v", thoughtIDs)
	}
	fileID := frames[4].str("id")
	// The tool file URL is signed for this replay (docs/mock/annotations.md#signed-urls):
	// a fresh timestamp, nonce and signature in place of the recorded ones.
	// It is behind the mock's address, as from a Dify whose FILES_URL is set.
	fileURL, query, _ := strings.Cut(frames[4].str("url"), "?")
	if want := e.ts.URL + "/files/tools/" + fileID + ".png"; fileURL != want {
		t.Errorf("tool file URL %q, want %q", fileURL, want)
	}
	if !strings.HasPrefix(query, fmt.Sprintf("timestamp=%d&nonce=", fixed.Unix())) || !strings.Contains(query, "&sign=") {
		t.Errorf("tool file URL query %q is not signed at replay time", query)
	}
	back := strings.NewReplacer(conv, recConv, msg, recMsg, task, recTask,
		thoughtIDs[th1], th1, thoughtIDs[th2], th2, thoughtIDs[th3], th3, fileID, tf1, e.ts.URL+"/files/", "/files/", query, "timestamp=1&nonce=n&sign=s")
	for i, f := range frames {
		for _, m := range createdAtRE.FindAllStringSubmatch(f.raw, -1) {
			if m[1] != fmt.Sprint(fixed.Unix()) {
				t.Errorf("frame %d created_at %s, want %d", i, m[1], fixed.Unix())
			}
		}
		got := createdAtRE.ReplaceAllString(back.Replace(f.raw), fmt.Sprintf(`"created_at":%d`, recCreated))
		if got != string(rec[i].Raw) {
			t.Errorf("frame %d differs from the recording:\n got %s\nwant %s", i, got, rec[i].Raw)
		}
	}

	// A second replay of the same turn is a fresh turn.
	_, again := e.chat(chatBody("Use your tools", "alice"))
	if again[0].str("conversation_id") == conv || again[0].str("message_id") == msg || again[0].str("task_id") == task {
		t.Fatal("second replay reused ids")
	}
}

// TestStateMatchesStream: what was streamed is what the list endpoints return.
func TestStateMatchesStream(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	_, frames := e.chat(chatBody("Use your tools", "alice", "auto_generate_name", true))
	conv, msg := frames[0].str("conversation_id"), frames[0].str("message_id")
	created := int64(frames[0].data["created_at"].(float64))

	resp, body := e.do(http.MethodGet, "/conversations?user=alice", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	page := decode[dify.ConversationPage](t, body)
	if len(page.Data) != 1 || page.Data[0].ID != conv || page.Limit != 20 || page.HasMore {
		t.Fatalf("conversations: %s", body)
	}
	c := page.Data[0]
	if c.Name != "Use your tools" || c.Status != "normal" || c.Inputs["city"] != "Seoul" || c.Introduction == nil || *c.Introduction != "Hello from the test app" {
		t.Errorf("conversation: %+v", c)
	}
	for _, k := range []string{`"introduction"`, `"inputs"`, `"updated_at"`} {
		if !strings.Contains(string(body), k) {
			t.Errorf("conversation JSON lacks %s", k)
		}
	}

	resp, body = e.do(http.MethodGet, "/messages?user=alice&conversation_id="+conv, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	mp := decode[dify.MessagePage](t, body)
	if len(mp.Data) != 1 || mp.HasMore {
		t.Fatalf("messages: %s", body)
	}
	m := mp.Data[0]
	if m.ID != msg || m.ConversationID != conv || m.Query != "Use your tools" || m.Answer != "Here it is." || m.CreatedAt != created {
		t.Errorf("message: %+v", m)
	}
	// Service API messages are not threaded: parent_message_id is
	// UUID_NIL (AgentAppGenerator.generate, InvokeFrom.SERVICE_API).
	if m.Status != "normal" || m.Error != nil || m.ParentMessageID == nil || *m.ParentMessageID != "00000000-0000-0000-0000-000000000000" {
		t.Errorf("status %q error %v parent %v", m.Status, m.Error, m.ParentMessageID)
	}
	if m.MessageTokens != 40 || m.AnswerTokens != 12 || m.TotalTokens != 52 || m.ProviderResponseLatency != 1.25 ||
		m.TotalPrice == nil || *m.TotalPrice != "0.0000640" || m.Currency == nil || *m.Currency != "USD" {
		t.Errorf("usage fields: %+v", m)
	}
	if len(m.AgentThoughts) != 3 {
		t.Fatalf("agent_thoughts: %+v", m.AgentThoughts)
	}
	t1, t2 := m.AgentThoughts[0], m.AgentThoughts[1]
	if t1.Position != 1 || t1.Thought != "I should search." || t1.Tool != "web_search" || t1.Observation != `{"web_search": "found"}` ||
		t1.MessageID != msg || t1.ChainID != nil || t1.CreatedAt != created || t1.ID != frames[0].str("id") {
		t.Errorf("thought 1 (last snapshot wins): %+v", t1)
	}
	if t2.Position != 2 || len(t2.Files) != 1 || t2.Files[0] != frames[4].str("id") {
		t.Errorf("thought 2 files must be the replayed file id: %+v", t2)
	}
	if len(m.MessageFiles) != 1 || m.MessageFiles[0].ID != frames[4].str("id") || *m.MessageFiles[0].BelongsTo != "assistant" {
		t.Errorf("message_files: %+v", m.MessageFiles)
	}
	// History form (docs/api §6): files, chain_id, message_id, created_at.
	for _, k := range []string{`"files"`, `"chain_id":null`, `"retriever_resources":[]`, `"extra_contents":[]`, `"feedback":null`} {
		if !strings.Contains(string(body), k) {
			t.Errorf("message JSON lacks %s: %s", k, body)
		}
	}
	if strings.Contains(string(body), `"message_files":["`) {
		t.Error("history thoughts must not use the SSE field message_files")
	}

	// Another user sees nothing of it (docs/api §1.3).
	_, body = e.do(http.MethodGet, "/conversations?user=bob", nil)
	if p := decode[dify.ConversationPage](t, body); len(p.Data) != 0 {
		t.Errorf("bob sees %s", body)
	}
	resp, body = e.do(http.MethodGet, "/messages?user=bob&conversation_id="+conv, nil)
	e.wantError(resp, body, 404, "not_found", "Conversation Not Exists.")
}

func TestFollowUpTurnsAndLifecycle(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	_, first := e.chat(chatBody("First question", "alice"))
	conv := first[0].str("conversation_id")
	// inputs are validated on every turn (_prepare_user_inputs), so the
	// follow-up repeats them; a follow-up without them is refused.
	resp, body := e.do(http.MethodPost, "/chat-messages", chatBody("anything at all", "alice", "conversation_id", conv, "inputs", map[string]any{}))
	e.wantError(resp, body, 400, "invalid_param", "city is required in input form")
	resp, second := e.chat(chatBody("anything at all", "alice", "conversation_id", conv))
	if got := second[0].str("conversation_id"); got != conv {
		t.Fatalf("follow-up conversation id %s, want %s", got, conv)
	}
	if resp.Header.Get(mockserver.HeaderTurn) != "1" || second[0].str("answer") != "Second answer." {
		t.Fatalf("follow-up did not replay the second turn: %s", second[0].raw)
	}
	// The cassette is exhausted: the query picks a turn again.
	resp, third := e.chat(chatBody("Count to three", "alice", "conversation_id", strings.ToUpper(conv)))
	if resp.Header.Get(mockserver.HeaderCassette) != "timing" || third[0].str("conversation_id") != conv {
		t.Fatalf("third turn: cassette %q conv %q", resp.Header.Get(mockserver.HeaderCassette), third[0].str("conversation_id"))
	}

	_, body = e.do(http.MethodGet, "/messages?user=alice&conversation_id="+conv, nil)
	mp := decode[dify.MessagePage](t, body)
	if len(mp.Data) != 3 || mp.Data[0].Answer != "First answer." || mp.Data[2].Answer != "One, two, three." {
		t.Fatalf("messages: %s", body)
	}
	if mp.Data[1].ParentMessageID == nil || *mp.Data[1].ParentMessageID != "00000000-0000-0000-0000-000000000000" {
		t.Errorf("parent_message_id of a Service API follow-up: %+v, want UUID_NIL", mp.Data[1].ParentMessageID)
	}
	// Paging: newest page first, oldest first inside it (docs/api §6).
	_, body = e.do(http.MethodGet, "/messages?user=alice&limit=2&conversation_id="+conv, nil)
	p1 := decode[dify.MessagePage](t, body)
	if len(p1.Data) != 2 || !p1.HasMore || p1.Data[0].ID != mp.Data[1].ID || p1.Data[1].ID != mp.Data[2].ID {
		t.Fatalf("page 1: %s", body)
	}
	_, body = e.do(http.MethodGet, "/messages?user=alice&limit=2&conversation_id="+conv+"&first_id="+p1.Data[0].ID, nil)
	p2 := decode[dify.MessagePage](t, body)
	if len(p2.Data) != 1 || p2.HasMore || p2.Data[0].ID != mp.Data[0].ID {
		t.Fatalf("page 2: %s", body)
	}
	resp, body = e.do(http.MethodGet, "/messages?user=alice&conversation_id="+conv+"&first_id="+recMsg, nil)
	e.wantError(resp, body, 404, "not_found", "First Message Not Exists.")

	// Rename, auto-generate, delete (docs/api §7, §8).
	resp, body = e.do(http.MethodPost, "/conversations/"+conv+"/name", map[string]any{"name": "Trip", "user": "alice"})
	if resp.StatusCode != 200 {
		t.Fatalf("rename: %d %s", resp.StatusCode, body)
	}
	if c := decode[dify.Conversation](t, body); c.Name != "Trip" || c.ID != conv {
		t.Fatalf("rename: %s", body)
	}
	_, body = e.do(http.MethodPost, "/conversations/"+conv+"/name", map[string]any{"auto_generate": true, "user": "alice"})
	if c := decode[dify.Conversation](t, body); c.Name != "First question" {
		t.Fatalf("auto_generate: %s", body)
	}
	resp, body = e.do(http.MethodPost, "/conversations/"+conv+"/name", map[string]any{"user": "alice"})
	e.wantError(resp, body, 400, "invalid_param", "*")
	resp, body = e.do(http.MethodPost, "/conversations/"+conv+"/name", map[string]any{"name": "x", "user": "bob"})
	e.wantError(resp, body, 404, "not_found", "Conversation Not Exists.")

	resp, body = e.do(http.MethodDelete, "/conversations/"+conv, map[string]any{"user": "alice"})
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("delete: %d %q", resp.StatusCode, body)
	}
	resp, body = e.do(http.MethodDelete, "/conversations/"+conv, map[string]any{"user": "alice"})
	e.wantError(resp, body, 404, "not_found", "Conversation Not Exists.")
	_, body = e.do(http.MethodGet, "/conversations?user=alice", nil)
	if p := decode[dify.ConversationPage](t, body); len(p.Data) != 0 {
		t.Fatalf("deleted conversation listed: %s", body)
	}
	resp, body = e.do(http.MethodPost, "/chat-messages", chatBody("hi", "alice", "conversation_id", conv))
	e.wantError(resp, body, 404, "not_found", "Conversation Not Exists.")
	resp, body = e.do(http.MethodPost, "/conversations/"+conv+"/name", map[string]any{"name": "x", "user": "alice"})
	e.wantError(resp, body, 404, "not_found", "Conversation Not Exists.")
}

// TestDeleteReadsUserFromJSONOnly: DELETE /conversations/{id} reads
// `user` through request.get_json() (wraps.py validate_app_token,
// FetchUserArg JSON): no JSON Content-Type → 415, ?user= is never read.
// (This test used to expect a body-less DELETE with ?user= to succeed,
// which no Dify version does.)
func TestDeleteReadsUserFromJSONOnly(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	_, fr := e.chat(chatBody("Count to three", "carol"))
	conv := fr[0].str("conversation_id")
	resp, body := e.do(http.MethodDelete, "/conversations/"+conv+"?user=carol", nil)
	e.wantError(resp, body, 415, "unsupported_media_type", "Did not attempt to load JSON data because the request Content-Type was not 'application/json'.")
	resp, body = e.do(http.MethodDelete, "/conversations/"+conv+"?user=carol", map[string]any{})
	e.wantError(resp, body, 404, "not_found", "Conversation Not Exists.")
	resp, body = e.do(http.MethodDelete, "/conversations/"+conv, map[string]any{"user": "carol"})
	if resp.StatusCode != 204 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp, body = e.do(http.MethodDelete, "/conversations/not-a-uuid", map[string]any{})
	wantHTML404(t, resp, body)
}

func TestSelectionRule(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	pick := func(query string, hdr ...string) string {
		t.Helper()
		resp, _ := e.chat(chatBody(query, "sel"), hdr...)
		return resp.Header.Get(mockserver.HeaderCassette) + "#" + resp.Header.Get(mockserver.HeaderTurn)
	}
	cases := []struct {
		name, query, header, want string
	}{
		{"exact query", "Use your tools", "", "tools#0"},
		{"normalised query", "  use   YOUR\ttools ", "", "tools#0"},
		{"follow-up query opens a conversation at its turn", "Second question", "", "two-turn#1"},
		{"no match: default", "Something else entirely", "", "timing#0"},
		{"header wins over the query", "Use your tools", "two-turn", "two-turn#0"},
		{"header + matching turn", "second question", "two-turn", "two-turn#1"},
	}
	for _, c := range cases {
		if got := pick(c.query, mockserver.HeaderCassette, c.header); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
	// A conversation's cassette beats the query for follow-ups.
	_, fr := e.chat(chatBody("First question", "sel"))
	resp, _ := e.chat(chatBody("Use your tools", "sel", "conversation_id", fr[0].str("conversation_id")))
	if got := resp.Header.Get(mockserver.HeaderCassette) + "#" + resp.Header.Get(mockserver.HeaderTurn); got != "two-turn#1" {
		t.Errorf("follow-up: got %s", got)
	}

	d := newEnv(t, mockserver.Config{DefaultCassette: "tools"})
	resp, _ = d.chat(chatBody("nothing matches", "sel"))
	if resp.Header.Get(mockserver.HeaderCassette) != "tools" {
		t.Errorf("configured default not used: %s", resp.Header.Get(mockserver.HeaderCassette))
	}
	if _, err := mockserver.New(mockserver.Config{Cassettes: e.set, DefaultCassette: "nope"}); err == nil {
		t.Error("unknown default cassette accepted")
	}
}

func TestRecordedPreStreamError(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	resp, body := e.do(http.MethodPost, "/chat-messages", chatBody("Refuse me", "erin"))
	e.wantError(resp, body, 400, "agent_not_published", "Agent has not been published. Please publish the Agent before using the API.")
	_, body = e.do(http.MethodGet, "/conversations?user=erin", nil)
	if p := decode[dify.ConversationPage](t, body); len(p.Data) != 0 {
		t.Errorf("a refused turn created a conversation: %s", body)
	}
}

func TestUploadedFileFlowsIntoTheTurn(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	up := e.upload("frank", "itinerary.md", "text/markdown", []byte("# Day 1\nSeoul"))
	_, frames := e.chat(chatBody("Read my file", "frank", "files", []map[string]any{
		{"type": "document", "transfer_method": "local_file", "upload_file_id": up.ID},
		{"type": "image", "transfer_method": "remote_url", "url": "https://example.com/a/map.png?x=1"},
	}))
	if !strings.Contains(frames[0].raw, up.ID) || strings.Contains(frames[0].raw, up1) {
		t.Fatalf("the recorded upload id must be replaced by the live one: %s", frames[0].raw)
	}
	if got := frames[0].data["message_files"].([]any); len(got) != 1 || got[0] != up.ID {
		t.Fatalf("message_files %v", got)
	}
	_, body := e.do(http.MethodGet, "/messages?user=frank&conversation_id="+frames[0].str("conversation_id"), nil)
	m := decode[dify.MessagePage](t, body).Data[0]
	if len(m.MessageFiles) != 2 {
		t.Fatalf("message_files: %s", body)
	}
	f := m.MessageFiles[0]
	if f.UploadFileID == nil || *f.UploadFileID != up.ID || f.Filename != "itinerary.md" || *f.BelongsTo != "user" ||
		f.TransferMethod != "local_file" || *f.Size != up.Size || f.ID == up.ID {
		t.Errorf("user file: %+v", f)
	}
	if r := m.MessageFiles[1]; r.TransferMethod != "remote_url" || r.Filename != "map.png" || r.UploadFileID != nil {
		t.Errorf("remote file: %+v", r)
	}
	// Someone else's upload is not usable (docs/api §2.1).
	resp, body := e.do(http.MethodPost, "/chat-messages", chatBody("Read my file", "grace", "files", []map[string]any{
		{"type": "document", "transfer_method": "local_file", "upload_file_id": up.ID}}))
	e.wantError(resp, body, 400, "invalid_param", "Invalid upload file")
	// files: null is accepted (dify-client sends it).
	if resp, _ := e.chat(chatBody("Count to three", "frank", "files", nil)); resp.StatusCode != 200 {
		t.Fatal("files:null refused")
	}
}

// TestBuiltinCassettesReplay: every built-in cassette replays through the
// server, ends with message_end or error, and GET /messages holds the
// answer the stream accumulated (docs/api §2.5: deltas append, `message` and
// `message_replace` replace).
func TestBuiltinCassettesReplay(t *testing.T) {
	e := newEnv(t, mockserver.Config{Cassettes: mustBuiltin(t)})
	for _, name := range e.srv.CassetteNames() {
		c, _ := e.srv.Cassette(name)
		conv := ""
		for ti := range c.Turns {
			if c.Turns[ti].Status != http.StatusOK {
				continue
			}
			body := chatBody(c.Turns[ti].Request.Query, "builtin")
			if conv != "" {
				body["conversation_id"] = conv
			}
			resp, frames := e.chat(body, mockserver.HeaderCassette, name)
			if got := resp.Header.Get(mockserver.HeaderTurn); got != fmt.Sprint(ti) {
				t.Errorf("%s: replayed turn %s, want %d", name, got, ti)
			}
			last := frames[len(frames)-1]
			var answer strings.Builder
			final := ""
			for _, f := range frames {
				switch f.event() {
				case "agent_message":
					answer.WriteString(f.str("answer"))
				case "message", "message_replace":
					final = f.str("answer")
					answer.Reset()
					answer.WriteString(final)
				}
			}
			conv = frames[0].str("conversation_id")
			_, page := e.do(http.MethodGet, "/messages?user=builtin&conversation_id="+conv, nil)
			msgs := decode[dify.MessagePage](t, page).Data
			m := msgs[len(msgs)-1]
			switch last.event() {
			case "message_end":
				if m.Status != "normal" || m.Answer != answer.String() {
					t.Errorf("%s turn %d: stored %q (%s), streamed %q", name, ti, m.Answer, m.Status, answer.String())
				}
			case "error":
				if m.Status != "error" || m.Error == nil || *m.Error != last.str("message") {
					t.Errorf("%s turn %d: stored %s %v for error %s", name, ti, m.Status, m.Error, last.raw)
				}
			default:
				t.Errorf("%s turn %d ends with %s", name, ti, last.event())
			}
		}
	}
}

func mustBuiltin(t testing.TB) *cassette.Set {
	t.Helper()
	set, err := mockserver.BuiltinSet()
	if err != nil {
		t.Fatal(err)
	}
	return set
}
