package control_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/control"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/rules"
)

// The app key the tests send; it must never show up in the journal.
const apiKey = "app-Zq8Xw3Vt5Rk1Lm9Np2Bc7Yd4"

type env struct {
	t   *testing.T
	srv *mockserver.Server
	ts  *httptest.Server
}

func newEnv(t *testing.T, cfg mockserver.Config) *env {
	t.Helper()
	srv, err := mockserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &env{t: t, srv: srv, ts: ts}
}

// do sends a request and returns status, headers and body.
func (e *env) do(method, path, contentType, body string, hdr ...string) (int, http.Header, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// api calls the control API and decodes a JSON answer into out (if given),
// failing unless the status is want.
func (e *env) api(method, path, body string, want int, out any, hdr ...string) []byte {
	e.t.Helper()
	ct := ""
	if body != "" || method == http.MethodPost {
		ct = "application/json"
	}
	status, _, b := e.do(method, path, ct, body, hdr...)
	if status != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return b
}

// chat sends a chat request and returns status, headers and body.
func (e *env) chat(user, query, conv string, hdr ...string) (int, http.Header, string) {
	e.t.Helper()
	body := fmt.Sprintf(`{"query":%q,"inputs":{},"user":%q,"response_mode":"streaming","conversation_id":%q,"api_key":"sk-should-not-be-kept-123456"}`, query, user, conv)
	status, h, b := e.do(http.MethodPost, "/v1/chat-messages", "application/json", body, append([]string{"Authorization", "Bearer " + apiKey}, hdr...)...)
	return status, h, string(b)
}

func convID(t *testing.T, stream string) string {
	t.Helper()
	i := strings.Index(stream, `"conversation_id":"`)
	if i < 0 {
		t.Fatalf("no conversation id in %.300s", stream)
	}
	return stream[i+len(`"conversation_id":"`) : i+len(`"conversation_id":"`)+36]
}

func listJournal(e *env, query string) []journal.Entry {
	e.t.Helper()
	var out struct {
		Data []journal.Entry `json:"data"`
	}
	e.api(http.MethodGet, "/__mock/api/journal"+query, "", http.StatusOK, &out)
	return out.Data
}

func wantErrCode(t *testing.T, b []byte, code string) {
	t.Helper()
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Status  int    `json:"status"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Code != code || e.Message == "" || e.Status == 0 {
		t.Fatalf("want error code %q with a message, got %s", code, b)
	}
}

func TestJournalRecordsChatsWithFramesAndNoSecrets(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 20})
	status, h, stream := e.chat("alice", "What will three nights in Lisbon cost for two?", "")
	if status != 200 || !strings.Contains(stream, "message_end") {
		t.Fatalf("chat: %d %.200s", status, stream)
	}
	conv := convID(t, stream)
	entries := listJournal(e, "")
	if len(entries) != 1 {
		t.Fatalf("want 1 entry, got %d", len(entries))
	}
	s := entries[0]
	if s.Method != "POST" || s.Path != "/v1/chat-messages" || s.User != "alice" || s.Status != 200 || !s.Done ||
		s.Cassette != "tool-use" || s.Turn == nil || *s.Turn != 0 || s.Outcome != "completed" || s.Conversation != "" {
		t.Fatalf("summary: %+v", s)
	}
	if h.Get(mockserver.HeaderCassette) != s.Cassette {
		t.Fatalf("journal cassette %q, response header %q", s.Cassette, h.Get(mockserver.HeaderCassette))
	}
	if s.FrameCount == 0 || len(s.Frames) != s.FrameCount || s.Frames[0].Data != "" {
		t.Fatalf("listing frames: count %d, kept %d, data in listing %q", s.FrameCount, len(s.Frames), s.Frames[0].Data)
	}
	var full journal.Entry
	e.api(http.MethodGet, fmt.Sprintf("/__mock/api/journal/%d", s.ID), "", 200, &full)
	var joined strings.Builder
	last := -1.0
	for i, f := range full.Frames {
		joined.WriteString(f.Data)
		if f.Index != i || f.Event == "" {
			t.Fatalf("frame %d: %+v", i, f)
		}
		if f.ActualMS < last {
			t.Fatalf("frame %d sent at %v, before the previous one (%v)", i, f.ActualMS, last)
		}
		last = f.ActualMS
		// Generous bound: a frame is never sent before it is due, and on a
		// loaded machine at most a second late.
		if f.ActualMS+1 < f.PlannedMS || f.ActualMS > f.PlannedMS+1000 {
			t.Fatalf("frame %d planned %vms, sent %vms", i, f.PlannedMS, f.ActualMS)
		}
	}
	if joined.String() != stream {
		t.Fatalf("journaled frames differ from the stream the client read")
	}
	if full.Frames[len(full.Frames)-1].Event != "message_end" {
		t.Fatalf("last frame %q", full.Frames[len(full.Frames)-1].Event)
	}
	raw := e.api(http.MethodGet, fmt.Sprintf("/__mock/api/journal/%d", s.ID), "", 200, nil)
	for _, secret := range []string{apiKey, "sk-should-not-be-kept", "Authorization", "Bearer"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Fatalf("journal entry contains %q: %s", secret, raw)
		}
	}
	var body map[string]any
	if err := json.Unmarshal(full.Body, &body); err != nil || body["query"] != "What will three nights in Lisbon cost for two?" || body["api_key"] != secrets.Redacted {
		t.Fatalf("body %s", full.Body)
	}

	// A follow-up, a listing and a 4xx: filters.
	if st, _, _ := e.chat("alice", "and for three?", conv); st != 200 {
		t.Fatal(st)
	}
	e.do(http.MethodGet, "/v1/conversations?user=alice", "", "", "Authorization", "Bearer "+apiKey)
	e.do(http.MethodGet, "/v1/messages?user=bob&conversation_id="+conv, "", "", "Authorization", "Bearer "+apiKey)
	if got := listJournal(e, "?route=/v1/chat-messages"); len(got) != 2 {
		t.Fatalf("route filter: %d", len(got))
	}
	if got := listJournal(e, "?route=GET+/v1/conversations"); len(got) != 1 || got[0].User != "alice" {
		t.Fatalf("method route filter: %+v", got)
	}
	if got := listJournal(e, "?user=bob"); len(got) != 1 || got[0].Status != 404 {
		t.Fatalf("user filter: %+v", got)
	}
	if got := listJournal(e, "?conversation_id="+conv); len(got) != 2 {
		t.Fatalf("conversation filter: %d", len(got))
	}
	if got := listJournal(e, "?status=4xx"); len(got) != 1 {
		t.Fatalf("status class filter: %d", len(got))
	}
	if got := listJournal(e, "?status=200&limit=1"); len(got) != 1 || got[0].Path != "/v1/conversations" {
		t.Fatalf("status+limit: %+v", got)
	}
	if got := listJournal(e, "?since="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); len(got) != 0 {
		t.Fatalf("since in the future: %d", len(got))
	}
	if got := listJournal(e, fmt.Sprintf("?after_id=%d", s.ID)); len(got) != 3 {
		t.Fatalf("after_id: %d", len(got))
	}
	// Control requests are not journaled.
	if got := listJournal(e, "?route=/__mock/*"); len(got) != 0 {
		t.Fatalf("control requests journaled: %d", len(got))
	}

	e.api(http.MethodDelete, "/__mock/api/journal", "", 200, nil)
	if got := listJournal(e, ""); len(got) != 0 {
		t.Fatalf("after clear: %d", len(got))
	}
	wantErrCode(t, e.api(http.MethodGet, fmt.Sprintf("/__mock/api/journal/%d", s.ID), "", 404, nil), "not_found")
}

func TestJournalBadInput(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0})
	for _, q := range []string{"?status=abc", "?status=6xx", "?since=yesterday", "?limit=0", "?limit=x", "?after_id=-1", "?route=chat"} {
		wantErrCode(t, e.api(http.MethodGet, "/__mock/api/journal"+q, "", 400, nil), "invalid_param")
	}
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api/journal/abc", "", 400, nil), "invalid_param")
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api/journal/0", "", 400, nil), "invalid_param")
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api/journal/999", "", 404, nil), "not_found")
	wantErrCode(t, e.api(http.MethodPut, "/__mock/api/journal", "{}", 405, nil), "method_not_allowed")
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api/nope", "", 404, nil), "not_found")
}

func TestJournalIsARingBuffer(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0, Control: mockserver.ControlConfig{JournalSize: 3}})
	for i := range 5 {
		e.do(http.MethodGet, fmt.Sprintf("/v1/conversations?user=u%d", i), "", "", "Authorization", "Bearer "+apiKey)
	}
	got := listJournal(e, "")
	if len(got) != 3 || got[0].User != "u2" || got[2].User != "u4" {
		t.Fatalf("want the last 3 requests, got %+v", got)
	}
}

// Both ways the journal reads an upload: a small body kept and parsed when
// the request ends, a large one (75 KB, past the 64 KiB it keeps) streamed
// to a parser as it arrives.
func TestJournalUploadsKeepNameSizeAndHashOnly(t *testing.T) {
	for _, lines := range []int{70, 5000} {
		t.Run(fmt.Sprintf("%d bytes", lines*15), func(t *testing.T) { journalUpload(t, lines) })
	}
}

func journalUpload(t *testing.T, lines int) {
	e := newEnv(t, mockserver.Config{Speed: 0})
	content := bytes.Repeat([]byte("itinerary line\n"), lines)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("user", "alice")
	_ = mw.WriteField("password", "hunter2-secret")
	fw, _ := mw.CreateFormFile("file", "trip.txt")
	_, _ = fw.Write(content)
	_ = mw.Close()
	status, _, b := e.do(http.MethodPost, "/v1/files/upload", mw.FormDataContentType(), buf.String(), "Authorization", "Bearer "+apiKey)
	if status != 201 && status != 200 {
		t.Fatalf("upload: %d %s", status, b)
	}
	got := listJournal(e, "?route=/v1/files/upload")
	if len(got) != 1 {
		t.Fatalf("entries: %d", len(got))
	}
	sum := sha256.Sum256(content)
	u := got[0].Uploads
	if len(u) != 1 || u[0].Filename != "trip.txt" || u[0].Size != int64(len(content)) || u[0].SHA256 != hex.EncodeToString(sum[:]) || u[0].Field != "file" {
		t.Fatalf("uploads %+v", u)
	}
	if got[0].User != "alice" || got[0].Fields["password"] != secrets.Redacted || len(got[0].Body) != 0 || got[0].BodyText != "" {
		t.Fatalf("entry %+v", got[0])
	}
	raw := e.api(http.MethodGet, fmt.Sprintf("/__mock/api/journal/%d", got[0].ID), "", 200, nil)
	if bytes.Contains(raw, []byte("itinerary line")) || bytes.Contains(raw, []byte("hunter2")) {
		t.Fatalf("upload contents or a password reached the journal: %.500s", raw)
	}
}

func addRule(e *env, body string) rules.Rule {
	e.t.Helper()
	var r rules.Rule
	e.api(http.MethodPost, "/__mock/api/rules", body, http.StatusCreated, &r)
	return r
}

func TestRuleFailsTheNextChatThenExpires(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0})
	r := addRule(e, `{"route":"/v1/chat-messages","fault":"status:429","times":1,"note":"rate limit once"}`)
	if r.ID == "" || r.Remaining == nil || *r.Remaining != 1 || r.Fault != "status:429" {
		t.Fatalf("rule %+v", r)
	}
	// A GET is not the rule's route: untouched, rule not used.
	if st, _, _ := e.do(http.MethodGet, "/v1/conversations?user=alice", "", "", "Authorization", "Bearer "+apiKey); st != 200 {
		t.Fatal(st)
	}
	status, h, body := e.chat("alice", "Hello", "")
	if status != 429 || !strings.Contains(body, `"too_many_requests"`) {
		t.Fatalf("first chat after the rule: %d %s", status, body)
	}
	if h.Get("X-Dify-Mock-Fault") != "status:429" {
		t.Fatalf("fault header %q", h.Get("X-Dify-Mock-Fault"))
	}
	if status, _, _ := e.chat("alice", "Hello", ""); status != 200 {
		t.Fatalf("second chat: %d (the rule was for one request)", status)
	}
	var list struct{ Data []rules.Rule }
	e.api(http.MethodGet, "/__mock/api/rules", "", 200, &list)
	if len(list.Data) != 0 {
		t.Fatalf("a spent rule is still listed: %+v", list.Data)
	}
	got := listJournal(e, "?route=/v1/chat-messages")
	if len(got) != 2 || got[0].Rule != r.ID || got[0].Fault != "status:429" || got[0].Status != 429 || got[1].Rule != "" {
		t.Fatalf("journal %+v", got)
	}
}

func TestRuleScopesCassetteSpeedAndPrecedence(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0})
	addRule(e, `{"user":"bob","cassette":"korean-answer","speed":0}`)
	addRule(e, `{"user":"carol","fault":"error-after:2"}`)
	// Someone else's chat is not affected.
	if _, h, _ := e.chat("alice", "Hello", ""); h.Get(mockserver.HeaderCassette) != "plain-answer" {
		t.Fatalf("alice got %q", h.Get(mockserver.HeaderCassette))
	}
	// bob gets the rule's cassette, again and again (no count).
	for range 2 {
		if _, h, _ := e.chat("bob", "Hello", ""); h.Get(mockserver.HeaderCassette) != "korean-answer" {
			t.Fatalf("bob got %q", h.Get(mockserver.HeaderCassette))
		}
	}
	// The request's own header wins over the rule.
	if _, h, _ := e.chat("bob", "Hello", "", mockserver.HeaderCassette, "plain-answer"); h.Get(mockserver.HeaderCassette) != "plain-answer" {
		t.Fatalf("header did not win: %q", h.Get(mockserver.HeaderCassette))
	}
	// carol's stream breaks after two frames with an error event.
	status, _, body := e.chat("carol", "Hello", "")
	if status != 200 || strings.Count(body, "data: ") != 3 || !strings.Contains(body, `"event":"error"`) {
		t.Fatalf("carol: %d %s", status, body)
	}
	// X-Dify-Mock-Fault: none turns the rule's fault off for one request.
	if _, _, body := e.chat("carol", "Hello", "", "X-Dify-Mock-Fault", "none"); strings.Contains(body, `"event":"error"`) {
		t.Fatalf("header none did not win: %s", body)
	}
	// A conversation-scoped rule.
	_, _, first := e.chat("dave", "Hello", "")
	conv := convID(t, first)
	addRule(e, fmt.Sprintf(`{"conversation_id":%q,"fault":"status:503","times":2}`, strings.ToUpper(conv)))
	if st, _, _ := e.chat("dave", "Hello", ""); st != 200 {
		t.Fatalf("new conversation hit the conversation rule: %d", st)
	}
	if st, _, _ := e.chat("dave", "Hello again", conv); st != 503 {
		t.Fatalf("follow-up: %d", st)
	}
	// A fault rule applies to other routes too when its scope says so.
	if st, _, _ := e.do(http.MethodGet, "/v1/messages?user=dave&conversation_id="+conv, "", "", "Authorization", "Bearer "+apiKey); st != 503 {
		t.Fatalf("messages of the conversation: %d", st)
	}
	if st, _, _ := e.chat("dave", "Hello again", conv); st != 200 {
		t.Fatalf("after the count: %d", st)
	}
}

func TestRulesBadInputAndDelete(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0})
	for _, body := range []string{
		`{}`,
		`{"cassette":"no-such-cassette"}`,
		`{"cassette":"../etc/passwd"}`,
		`{"fault":"explode"}`,
		`{"fault":"status:429","times":-1}`,
		`{"speed":-2}`,
		`{"speed":1e9}`,
		`{"route":"chat-messages","fault":"status:429"}`,
		`{"fault":"status:429","colour":"red"}`,
		`{"fault":`,
		`[1,2]`,
		`{"fault":"status:429"} {"fault":"status:500"}`,
	} {
		wantErrCode(t, e.api(http.MethodPost, "/__mock/api/rules", body, 400, nil), "invalid_param")
	}
	status, _, b := e.do(http.MethodPost, "/__mock/api/rules", "text/plain", `{"fault":"status:429"}`)
	if status != 415 {
		t.Fatalf("text/plain: %d %s", status, b)
	}
	var list struct{ Data []rules.Rule }
	e.api(http.MethodGet, "/__mock/api/rules", "", 200, &list)
	if len(list.Data) != 0 {
		t.Fatalf("bad input left rules behind: %+v", list.Data)
	}
	a := addRule(e, `{"fault":"status:500"}`)
	b2 := addRule(e, `{"fault":"status:502"}`)
	e.api(http.MethodGet, "/__mock/api/rules", "", 200, &list)
	if len(list.Data) != 2 || list.Data[0].ID != b2.ID {
		t.Fatalf("newest first: %+v", list.Data)
	}
	// The newest matching rule wins.
	if st, _, _ := e.chat("x", "Hello", ""); st != 502 {
		t.Fatalf("newest rule: %d", st)
	}
	e.api(http.MethodDelete, "/__mock/api/rules/"+b2.ID, "", 204, nil)
	wantErrCode(t, e.api(http.MethodDelete, "/__mock/api/rules/"+b2.ID, "", 404, nil), "not_found")
	if st, _, _ := e.chat("x", "Hello", ""); st != 500 {
		t.Fatalf("older rule after delete: %d", st)
	}
	var cleared struct{ Deleted int }
	e.api(http.MethodDelete, "/__mock/api/rules", "", 200, &cleared)
	if cleared.Deleted != 1 {
		t.Fatalf("clear: %+v (rule %s)", cleared, a.ID)
	}
	if st, _, _ := e.chat("x", "Hello", ""); st != 200 {
		t.Fatalf("after clear: %d", st)
	}
}

func TestStateListResetExportImport(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0})
	_, _, s1 := e.chat("alice", "Hello", "")
	conv := convID(t, s1)
	e.chat("alice", "What will three nights in Lisbon cost for two?", conv)
	e.chat("bob", "Hello", "")

	var sum struct {
		EndUsers []store.UserSummary `json:"end_users"`
		Totals   map[string]int
	}
	e.api(http.MethodGet, "/__mock/api/state", "", 200, &sum)
	if sum.Totals["end_users"] != 2 || sum.Totals["conversations"] != 2 || sum.Totals["messages"] != 3 {
		t.Fatalf("totals %+v", sum.Totals)
	}
	var alice struct {
		Conversations []store.SnapConvers
	}
	e.api(http.MethodGet, "/__mock/api/state/users/alice", "", 200, &alice)
	if len(alice.Conversations) != 1 || len(alice.Conversations[0].Messages) != 2 || alice.Conversations[0].ID != conv {
		t.Fatalf("alice %+v", alice)
	}
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api/state/users/nobody", "", 404, nil), "not_found")

	exported := e.api(http.MethodGet, "/__mock/api/state/export", "", 200, nil)

	// Reset one user.
	e.api(http.MethodPost, "/__mock/api/state/reset", `{"user":"bob"}`, 200, &sum)
	if sum.Totals["end_users"] != 1 {
		t.Fatalf("after resetting bob: %+v", sum.Totals)
	}
	wantErrCode(t, e.api(http.MethodPost, "/__mock/api/state/reset", `{"user":"bob"}`, 404, nil), "not_found")
	// Reset everything.
	e.api(http.MethodPost, "/__mock/api/state/reset", ``, 200, &sum)
	if sum.Totals["end_users"] != 0 {
		t.Fatalf("after reset: %+v", sum.Totals)
	}
	status, _, b := e.do(http.MethodGet, "/v1/conversations?user=alice", "", "", "Authorization", "Bearer "+apiKey)
	if status != 200 || strings.Contains(string(b), conv) {
		t.Fatalf("conversation survived reset: %s", b)
	}

	// Import into a fresh server: the conversation, its messages and its
	// replay position come back.
	e2 := newEnv(t, mockserver.Config{Speed: 0})
	e2.api(http.MethodPost, "/__mock/api/state/import", string(exported), 200, &sum)
	if sum.Totals["messages"] != 3 {
		t.Fatalf("imported totals %+v", sum.Totals)
	}
	status, _, b = e2.do(http.MethodGet, "/v1/messages?user=alice&conversation_id="+conv, "", "", "Authorization", "Bearer "+apiKey)
	if status != 200 || !strings.Contains(string(b), "What will three nights in Lisbon") {
		t.Fatalf("messages after import: %d %.300s", status, b)
	}
	// A follow-up continues the conversation.
	if st, _, body := e2.chat("alice", "thanks", conv); st != 200 || convID(t, body) != conv {
		t.Fatalf("follow-up after import: %d", st)
	}
	re := e2.api(http.MethodGet, "/__mock/api/state/export", "", 200, nil)
	var snap store.Snapshot
	if err := json.Unmarshal(re, &snap); err != nil || len(snap.Conversations) != 2 || len(snap.Conversations[0].Messages) != 3 {
		t.Fatalf("re-export: %v %+v", err, snap.Conversations)
	}
}

func TestStateImportBadInputChangesNothing(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0})
	e.chat("alice", "Hello", "")
	for _, body := range []string{
		`{"version":99,"end_users":[],"files":[],"conversations":[]}`,
		`{"version":1,"end_users":[{"id":"u1","user":"a"},{"id":"u1","user":"b"}]}`,
		`{"version":1,"end_users":[{"id":"u1","user":"a"}],"conversations":[{"id":"c1","owner_id":"nobody","messages":[]}]}`,
		`{"version":1,"end_users":[{"id":"u1","user":"a"}],"conversations":[{"id":"c1","owner_id":"u1","messages":[{"id":"m1","conversation_id":"other"}]}]}`,
		`{"version":1,"end_users":[{"id":"u1","user":"a"}],"files":[{"file":{"id":""},"owner_id":"u1"}]}`,
		`{"version":"one"}`,
		`not json`,
		``,
	} {
		wantErrCode(t, e.api(http.MethodPost, "/__mock/api/state/import", body, 400, nil), "invalid_param")
	}
	var sum struct{ Totals map[string]int }
	e.api(http.MethodGet, "/__mock/api/state", "", 200, &sum)
	if sum.Totals["end_users"] != 1 || sum.Totals["messages"] != 1 {
		t.Fatalf("a failed import changed the state: %+v", sum.Totals)
	}
	wantErrCode(t, e.api(http.MethodPost, "/__mock/api/state/reset", `{"user":5}`, 400, nil), "invalid_param")
}

// Saving from the journal goes through the recorder's save-time gate: a key
// streamed across two answer deltas passes every per-frame redaction (the
// journal's included) but is refused as it would be in a recording. (The
// console's own gate scanned only the encoded file and saved it.)
func TestSaveFromJournalRefusesAKeySplitAcrossDeltas(t *testing.T) {
	data, err := fs.ReadFile(cassettes.FS(), "plain-answer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := cassette.Decode("plain-answer.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	in := f.Interactions[0]
	frames, err := cassette.DecodeFrames(in.Response.Headers[cassette.FramesHeader], in.Response.Body)
	if err != nil {
		t.Fatal(err)
	}
	halves := []string{"my key is app-Q7xk2LmN", "9pRt4VwY6zAb8CdE, keep it"}
	n := 0
	for i := range frames {
		var ev map[string]any
		payload := strings.TrimSuffix(strings.TrimPrefix(string(frames[i].Raw), "data: "), "\n\n")
		if json.Unmarshal([]byte(payload), &ev) != nil || ev["event"] != "agent_message" || n == len(halves) {
			continue
		}
		ev["answer"] = halves[n]
		n++
		b, _ := json.Marshal(ev)
		frames[i].Raw = []byte("data: " + string(b) + "\n\n")
	}
	if n != len(halves) {
		t.Fatalf("plain-answer has %d agent_message frames, want %d", n, len(halves))
	}
	values, body := cassette.EncodeFrames(frames)
	in.Response.Headers[cassette.FramesHeader], in.Response.Body = values, body
	f.Meta.Default = false
	src := t.TempDir()
	enc, err := cassette.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "split-key.yaml"), enc, 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := cassette.LoadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := newEnv(t, mockserver.Config{Speed: 0, Cassettes: set, Control: mockserver.ControlConfig{CassetteDir: dir}})
	if _, _, stream := e.chat("alice", "Hello", "", "X-Dify-Mock-Cassette", "split-key"); !strings.Contains(stream, "app-Q7xk2LmN") {
		t.Fatalf("the test cassette did not stream its half key:\n%s", stream)
	}
	id := listJournal(e, "?route=/v1/chat-messages")[0].ID
	msg := e.api(http.MethodPost, "/__mock/api/cassettes", fmt.Sprintf(`{"entry_id":%d,"name":"split-key-copy"}`, id), 400, nil)
	wantErrCode(t, msg, "invalid_param")
	if !strings.Contains(string(msg), "split over several deltas") || strings.Contains(string(msg), "Q7xk2LmN") {
		t.Fatalf("refusal %s", msg)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused save wrote %v", entries)
	}
}

func TestCassettesListGetAndSaveFromJournal(t *testing.T) {
	dir := t.TempDir()
	set, err := mockserver.BuiltinSet()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, mockserver.Config{Speed: 0, Cassettes: set, Control: mockserver.ControlConfig{CassetteDir: dir}})
	var list struct{ Data []control.CassetteInfo }
	e.api(http.MethodGet, "/__mock/api/cassettes", "", 200, &list)
	if len(list.Data) != len(set.Names) {
		t.Fatalf("cassettes %d, want %d", len(list.Data), len(set.Names))
	}
	var d control.CassetteDetail
	e.api(http.MethodGet, "/__mock/api/cassettes/tool-use", "", 200, &d)
	if len(d.TurnList) != 1 || len(d.TurnList[0].Frames) < 5 || d.TurnList[0].Frames[0].Event != "agent_thought" || d.Provenance == "" {
		t.Fatalf("detail %+v", d.CassetteInfo)
	}
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api/cassettes/nope", "", 404, nil), "not_found")

	// A stream broken by a fault, saved as a cassette, replays the same way.
	_, _, broken := e.chat("alice", "Hello", "", "X-Dify-Mock-Fault", "error-after:1")
	entries := listJournal(e, "?route=/v1/chat-messages")
	id := entries[0].ID
	var saved control.SavedCassette
	e.api(http.MethodPost, "/__mock/api/cassettes", fmt.Sprintf(`{"entry_id":%d,"name":"broken-hello","description":"error after one frame"}`, id), 201, &saved)
	if saved.Path != filepath.Join(dir, "broken-hello.yaml") {
		t.Fatalf("saved %+v", saved)
	}
	data, err := os.ReadFile(saved.Path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(apiKey)) || bytes.Contains(data, []byte("sk-should-not")) || !bytes.Contains(data, []byte("provenance: synthesized")) {
		t.Fatalf("saved cassette:\n%s", data)
	}
	loaded, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(t, mockserver.Config{Speed: 0, Cassettes: loaded})
	_, _, replayed := e2.chat("alice", "Hello", "")
	if strings.Count(replayed, "data: ") != strings.Count(broken, "data: ") || !strings.Contains(replayed, `"event":"error"`) {
		t.Fatalf("replay of the saved cassette:\n%s\noriginal:\n%s", replayed, broken)
	}

	wantErrCode(t, e.api(http.MethodPost, "/__mock/api/cassettes", fmt.Sprintf(`{"entry_id":%d,"name":"broken-hello"}`, id), 409, nil), "conflict")
	wantErrCode(t, e.api(http.MethodPost, "/__mock/api/cassettes", fmt.Sprintf(`{"entry_id":%d,"name":"../x"}`, id), 400, nil), "invalid_param")
	wantErrCode(t, e.api(http.MethodPost, "/__mock/api/cassettes", `{"entry_id":999,"name":"x"}`, 404, nil), "not_found")
	wantErrCode(t, e.api(http.MethodPost, "/__mock/api/cassettes", `{"name":"x"}`, 400, nil), "invalid_param")
	e.do(http.MethodGet, "/v1/conversations?user=alice", "", "", "Authorization", "Bearer "+apiKey)
	other := listJournal(e, "?route=GET+/v1/conversations")[0].ID
	wantErrCode(t, e.api(http.MethodPost, "/__mock/api/cassettes", fmt.Sprintf(`{"entry_id":%d,"name":"not-a-chat"}`, other), 400, nil), "invalid_param")

	// The built-in set has no folder to save into.
	e3 := newEnv(t, mockserver.Config{Speed: 0})
	e3.chat("alice", "Hello", "")
	wantErrCode(t, e3.api(http.MethodPost, "/__mock/api/cassettes", `{"entry_id":1,"name":"x"}`, 409, nil), "conflict")
}

func TestGuardHostOriginTokenAndCORS(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0})
	for _, host := range []string{"localhost:5001", "127.0.0.1", "[::1]:80", "app.localhost"} {
		e.api(http.MethodGet, "/__mock/api", "", 200, nil, "Host", host)
	}
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api", "", 403, nil, "Host", "evil.example:5001"), "forbidden_host")
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api", "", 403, nil, "Host", "127.0.0.1.evil.example"), "forbidden_host")
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api", "", 403, nil, "Origin", "http://evil.example"), "forbidden_origin")
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api", "", 403, nil, "Origin", "null"), "forbidden_origin")
	// Only an http(s) page is one of this machine's pages (the same rule as
	// the recorder's; any scheme used to pass).
	wantErrCode(t, e.api(http.MethodGet, "/__mock/api", "", 403, nil, "Origin", "chrome-extension://localhost"), "forbidden_origin")
	e.api(http.MethodGet, "/__mock/api", "", 200, nil, "Origin", "http://localhost:3000")
	status, h, _ := e.do(http.MethodOptions, "/__mock/api/rules", "", "", "Origin", "http://localhost:3000", "Access-Control-Request-Method", "POST")
	if status != 403 || h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight: %d %v", status, h)
	}
	// The API under /v1 is unaffected by the control API's Host rule.
	if st, _, _ := e.do(http.MethodGet, "/v1/conversations?user=a", "", "", "Authorization", "Bearer "+apiKey, "Host", "evil.example"); st != 200 {
		t.Fatalf("/v1 with another host: %d", st)
	}

	// Configured names.
	e2 := newEnv(t, mockserver.Config{Speed: 0, Control: mockserver.ControlConfig{AllowedHosts: []string{"mock.internal"}, AdminToken: "s3cret-admin"}})
	e2.api(http.MethodGet, "/__mock/api", "", 200, nil, "Host", "mock.internal:5001", "Authorization", "Bearer s3cret-admin")
	wantErrCode(t, e2.api(http.MethodGet, "/__mock/api", "", 401, nil), "unauthorized")
	wantErrCode(t, e2.api(http.MethodGet, "/__mock/api", "", 401, nil, control.TokenHeader, "wrong"), "unauthorized")
	e2.api(http.MethodGet, "/__mock/api", "", 200, nil, control.TokenHeader, "s3cret-admin")
	status, h, _ = e2.do(http.MethodGet, "/__mock/?token=s3cret-admin&x=1", "", "")
	if status != 303 || h.Get("Location") != "/__mock/?x=1" || !strings.Contains(h.Get("Set-Cookie"), "HttpOnly") {
		t.Fatalf("token login: %d %v", status, h)
	}
	cookie := strings.SplitN(h.Get("Set-Cookie"), ";", 2)[0]
	status, h, page := e2.do(http.MethodGet, "/__mock/", "", "", "Cookie", cookie)
	if status != 200 || !strings.Contains(string(page), "<html") || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("console with cookie: %d %.100s", status, page)
	}
	// The admin token is not an API key and the API key is not an admin token.
	wantErrCode(t, e2.api(http.MethodGet, "/__mock/api", "", 401, nil, "Authorization", "Bearer "+apiKey), "unauthorized")
}

func TestConsoleAssetsAreEmbedded(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0})
	status, h, _ := e.do(http.MethodGet, "/__mock", "", "")
	if status != 301 || h.Get("Location") != "/__mock/" {
		t.Fatalf("/__mock: %d %v", status, h)
	}
	status, _, page := e.do(http.MethodGet, "/__mock/", "", "")
	if status != 200 {
		t.Fatal(status)
	}
	// Every script and stylesheet the page references is served, and none
	// is fetched from elsewhere.
	for _, ref := range findRefs(string(page)) {
		if !strings.HasPrefix(ref, "/__mock/") {
			t.Fatalf("the console references %q (only this server's own files are allowed)", ref)
		}
		st, h, _ := e.do(http.MethodGet, ref, "", "")
		if st != 200 || h.Get("Content-Type") == "" {
			t.Fatalf("%s: %d", ref, st)
		}
	}
	for _, p := range []string{"/__mock/static/../../go.mod", "/__mock/static/nope.js", "/__mock/static/.hidden.js"} {
		if st, _, _ := e.do(http.MethodGet, p, "", ""); st != 404 && st != 301 {
			t.Fatalf("%s: %d", p, st)
		}
	}
}

func findRefs(page string) []string {
	var out []string
	for _, attr := range []string{`src="`, `href="`} {
		rest := page
		for {
			i := strings.Index(rest, attr)
			if i < 0 {
				break
			}
			rest = rest[i+len(attr):]
			j := strings.IndexByte(rest, '"')
			if ref := rest[:j]; !strings.HasPrefix(ref, "#") && ref != "data:," {
				out = append(out, ref)
			}
		}
	}
	return out
}

func TestEventsStreamLiveUpdates(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0})
	req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/__mock/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	events := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- name
			}
		}
		close(events)
	}()
	if ev := <-events; ev != "hello" {
		t.Fatalf("first event %q", ev)
	}
	e.chat("alice", "Hello", "")
	addRule(e, `{"fault":"status:429","times":1}`)
	seen := map[string]int{}
	deadline := time.After(10 * time.Second)
	for seen["done"] == 0 || seen["rules"] == 0 {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("stream ended; seen %v", seen)
			}
			seen[ev]++
		case <-deadline:
			t.Fatalf("no done/rules event; seen %v", seen)
		}
	}
	// Two updates: what the mock chose, and the status when the headers
	// went out (the request is still in flight then).
	if seen["request"] != 1 || seen["frame"] < 3 || seen["update"] != 2 {
		t.Fatalf("events %v", seen)
	}
}

func TestControlNeedsATokenOffLoopback(t *testing.T) {
	// Tests bind 127.0.0.1 only, so the connection's local address (what
	// net/http puts in the request context) is set by hand: a request that
	// arrived on a LAN address, claiming Host: localhost.
	for _, token := range []string{"", "tok-123"} {
		srv, err := mockserver.New(mockserver.Config{Speed: 0, Control: mockserver.ControlConfig{AdminToken: token}})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "http://localhost/__mock/api", nil)
		req.Header.Set(control.TokenHeader, token)
		lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 20), Port: 5001}
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(lan)))
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if token == "" {
			if rec.Code != 403 {
				t.Fatalf("without a token: %d %s", rec.Code, rec.Body)
			}
			wantErrCode(t, rec.Body.Bytes(), "admin_token_required")
		} else if rec.Code != 200 {
			t.Fatalf("with the token: %d %s", rec.Code, rec.Body)
		}
	}
}

// copyBuiltins writes the built-in cassettes into a fresh folder.
func copyBuiltins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := fs.ReadDir(cassettes.FS(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := fs.ReadFile(cassettes.FS(), e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCassettesReloadKeepsTheSetOnErrors(t *testing.T) {
	dir := copyBuiltins(t)
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, mockserver.Config{Speed: 0, Cassettes: set, Control: mockserver.ControlConfig{CassetteDir: dir}})
	n := len(set.Names)

	// A broken file: 422 with the reason, and the loaded set still serves.
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("version: [unclosed"), 0o644); err != nil {
		t.Fatal(err)
	}
	var res control.ReloadResult
	e.api(http.MethodPost, "/__mock/api/cassettes/reload", "", http.StatusUnprocessableEntity, &res)
	if res.OK || !strings.Contains(res.Error, "broken.yaml") {
		t.Fatalf("reload of a broken folder: %+v", res)
	}
	if st, _, _ := e.chat("alice", "Hello", ""); st != 200 {
		t.Fatalf("chat after a failed reload: %d", st)
	}

	// Fixed: a new cassette (a copy of plain-answer under another name,
	// not marked default) is served after the reload.
	data, err := os.ReadFile(filepath.Join(dir, "plain-answer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("default: true"), []byte("default: false"), 1)
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	e.api(http.MethodPost, "/__mock/api/cassettes/reload", "", http.StatusOK, &res)
	if !res.OK || len(res.Cassettes) != n+1 {
		t.Fatalf("reload: %+v", res)
	}
	if _, h, _ := e.chat("alice", "Hello", "", mockserver.HeaderCassette, "broken"); h.Get(mockserver.HeaderCassette) != "broken" {
		t.Fatalf("the reloaded cassette is not served: %q", h.Get(mockserver.HeaderCassette))
	}

	// The built-in set cannot be reloaded.
	e2 := newEnv(t, mockserver.Config{Speed: 0})
	e2.api(http.MethodPost, "/__mock/api/cassettes/reload", "", http.StatusUnprocessableEntity, &res)
	if res.OK || !strings.Contains(res.Error, "--cassettes") {
		t.Fatalf("built-in reload: %+v", res)
	}
}

func TestWatchCassettesReloadsOnChange(t *testing.T) {
	dir := copyBuiltins(t)
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, mockserver.Config{Speed: 0, Cassettes: set, Control: mockserver.ControlConfig{CassetteDir: dir}})
	events, cancel := e.srv.Journal().Subscribe()
	defer cancel()
	e.srv.WatchCassettes(20 * time.Millisecond)
	t.Cleanup(func() { _ = e.srv.Shutdown(context.Background()) })
	data, err := os.ReadFile(filepath.Join(dir, "plain-answer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("default: true"), []byte("default: false"), 1)
	if err := os.WriteFile(filepath.Join(dir, "watched.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type != control.EventCassettes {
				continue
			}
		case <-timeout:
			t.Fatalf("no reload: %v", e.srv.CassetteNames())
		}
		break
	}
	if names := e.srv.CassetteNames(); len(names) != len(set.Names)+1 {
		t.Fatalf("after the reload event: %v", names)
	}
}

// serve --journal=false: the control API and its rules work, nothing is
// recorded, and the journal's routes say why they have nothing.
func TestJournalOffKeepsRulesAndSaysSo(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 0, Control: mockserver.ControlConfig{NoJournal: true}})
	addRule(e, `{"route":"/v1/chat-messages","fault":"status:429","times":1}`)
	if status, _, body := e.chat("alice", "Hello", ""); status != 429 || !strings.Contains(body, `"too_many_requests"`) {
		t.Fatalf("chat under a rule with the journal off: %d %s", status, body)
	}
	status, _, body := e.chat("alice", "Hello", "")
	if status != 200 || !strings.Contains(body, "message_end") {
		t.Fatalf("chat with the journal off: %d %s", status, body)
	}
	if n := len(e.srv.Journal().List(journal.Filter{})); n != 0 {
		t.Fatalf("the journal holds %d entries with --journal=false", n)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/__mock/api/journal", ""},
		{http.MethodGet, "/__mock/api/journal/1", ""},
		{http.MethodDelete, "/__mock/api/journal", ""},
		{http.MethodPost, "/__mock/api/cassettes", `{"entry_id":1,"name":"x"}`},
	} {
		b := e.api(c.method, c.path, c.body, http.StatusConflict, nil)
		wantErrCode(t, b, "journal_off")
		if !strings.Contains(string(b), "--journal=false") {
			t.Fatalf("%s %s: %s does not name the flag", c.method, c.path, b)
		}
	}
	var info map[string]any
	e.api(http.MethodGet, "/__mock/api", "", 200, &info)
	if info["journal"] != false {
		t.Fatalf("info journal = %v, want false", info["journal"])
	}
}
