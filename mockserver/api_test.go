package mockserver_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/conformance"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
)

func TestAuth(t *testing.T) {
	anyKey := newEnv(t, mockserver.Config{})
	keyed := newEnv(t, mockserver.Config{APIKeys: []string{"app-one", "app-two"}})
	cases := []struct {
		env    *env
		header string
		status int
		msg    string
	}{
		{anyKey, "", 401, "Authorization header must be provided and start with 'Bearer'"},
		{anyKey, "Bearer", 401, "Authorization header must be provided and start with 'Bearer'"},
		{anyKey, "Basic dXNlcjpwYXNz", 401, "Authorization scheme must be 'Bearer'"},
		{anyKey, "Bearer sk-123", 401, "Access token is invalid"},
		{anyKey, "Bearer app-", 401, "Access token is invalid"},
		{anyKey, "Bearer app-anything", 200, ""},
		{anyKey, "bEaReR app-anything", 200, ""},
		{keyed, "Bearer app-anything", 401, "Access token is invalid"},
		{keyed, "Bearer app-two", 200, ""},
		{keyed, "Bearer \u00a0", 401, "Access token is invalid"},
		{keyed, "Bearer \u3000\u0085", 401, "Access token is invalid"},
	}
	for _, c := range cases {
		t.Run(c.header, func(t *testing.T) {
			c.env.t = t
			resp, body := c.env.do(http.MethodGet, "/info", nil, "Authorization", c.header)
			if c.status == 200 {
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				return
			}
			c.env.wantError(resp, body, 401, "unauthorized", c.msg)
			if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer realm="api"` {
				t.Errorf("WWW-Authenticate %q", got)
			}
		})
	}
	anyKey.t = t
	// Auth comes before validation: a bad body without a key is a 401.
	resp, body := anyKey.do(http.MethodPost, "/chat-messages", "{", "Authorization", "")
	anyKey.wantError(resp, body, 401, "unauthorized", "*")
	// GET /v1/ needs no key (docs/api §1.1).
	resp, body = anyKey.do(http.MethodGet, "/", nil, "Authorization", "")
	if resp.StatusCode != 200 || string(body) != testRoot {
		t.Fatalf("GET /v1/: %d %s", resp.StatusCode, body)
	}
}

// TestEmptyAPIKeysAreRefused: a configured key that is empty or holds
// white space is refused at New; "Bearer " followed by a Unicode space used
// to match an empty key.
func TestEmptyAPIKeysAreRefused(t *testing.T) {
	for _, k := range []string{"", " ", "\u00a0", "app-a b", "app-\u0085", "app-\xff"} {
		if _, err := mockserver.New(mockserver.Config{APIKeys: []string{"app-ok", k}}); err == nil {
			t.Errorf("APIKeys %q accepted", k)
		}
	}
}

func TestAppDescriptionIsServedAsRecorded(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	for path, want := range map[string]string{"/info": testInfo, "/parameters": testParams, "/meta": testMeta, "/site": testSite} {
		resp, body := e.do(http.MethodGet, path+"?user=x", nil)
		if resp.StatusCode != 200 || string(body) != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q\n got %s\nwant %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
		}
	}
	legacy := newEnv(t, mockserver.Config{Mode: dify.ModeAgentChat})
	_, body := legacy.do(http.MethodGet, "/info", nil)
	if want := strings.Replace(testInfo, `"mode":"agent"`, `"mode":"agent-chat"`, 1); string(body) != want {
		t.Errorf("--mode agent-chat /info: %s", body)
	}
	// The built-in set serves with zero configuration.
	srv, err := mockserver.New(mockserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if srv.Mode() != dify.ModeAgent || len(srv.CassetteNames()) == 0 || srv.DefaultCassette() == "" {
		t.Errorf("built-in: mode %s cassettes %v default %q", srv.Mode(), srv.CassetteNames(), srv.DefaultCassette())
	}
}

// wantHTML404 checks Werkzeug's HTML NotFound page: the Service API does
// not set flask-restx's catch_all_404s, so URLs no route matches never get
// the JSON envelope (api/controllers/service_api/__init__.py).
func wantHTML404(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(body), "<title>404 Not Found</title>") {
		t.Errorf("want Werkzeug's HTML 404, got %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// TestRoutingErrors: 404 pages are HTML, 405 keeps the JSON envelope
// (flask-restx handles 405 for its own routes), no trailing-slash
// redirect, /v1 → 308 /v1/ (Werkzeug routing; the old expectation of a
// JSON 404 encoded the wrong behaviour).
func TestRoutingErrors(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	resp, body := e.do(http.MethodGet, "/nope", nil)
	wantHTML404(t, resp, body)
	resp, body = e.do(http.MethodGet, "/info/", nil)
	wantHTML404(t, resp, body)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(e.url(""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 308 || resp.Header.Get("Location") != "/v1/" {
		t.Errorf("/v1: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body = e.do(http.MethodGet, "/chat-messages", nil)
	e.wantError(resp, body, 405, "method_not_allowed", "The method is not allowed for the requested URL.")
	if allow := resp.Header.Get("Allow"); !strings.Contains(allow, "POST") {
		t.Errorf("Allow %q", allow)
	}
	resp, body = e.do(http.MethodPut, "/conversations/"+recConv, nil)
	e.wantError(resp, body, 405, "method_not_allowed", "*")
	resp, body = e.do(http.MethodPost, "/conversations/not-a-uuid/name", map[string]any{"name": "x"})
	wantHTML404(t, resp, body)
	resp, err = e.hc.Get(e.ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	wantHTML404(t, resp, body)
}

func TestCORS(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	req, _ := http.NewRequest(http.MethodOptions, e.url("/chat-messages"), nil)
	req.Header.Set("Origin", "http://localhost:3000")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, x-dify-mock-speed, x-dify-mock-fault")
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	for _, want := range []string{"Authorization", "Content-Type", "X-Dify-Mock-Cassette", "X-Dify-Mock-Speed", "x-dify-mock-fault"} {
		// Header names are case-insensitive in CORS lists as anywhere.
		if !strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), strings.ToLower(want)) {
			t.Errorf("Allow-Headers %q lacks %s", h.Get("Access-Control-Allow-Headers"), want)
		}
	}
	// Errors carry CORS headers too, so a browser can read them.
	resp, _ = e.do(http.MethodGet, "/info", nil, "Authorization", "", "Origin", "http://localhost:3000")
	if resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "X-Dify-Mock-Cassette") {
		t.Errorf("401 without CORS headers: %v", resp.Header)
	}

	only := newEnv(t, mockserver.Config{CORSOrigin: "http://app.test, http://localhost:5173"})
	resp, _ = only.do(http.MethodGet, "/info", nil, "Origin", "http://localhost:5173")
	if resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" || resp.Header.Get("Vary") != "Origin" {
		t.Errorf("listed origin: %v", resp.Header)
	}
	resp, _ = only.do(http.MethodGet, "/info", nil, "Origin", "http://evil.test")
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("unlisted origin allowed: %v", resp.Header)
	}
}

// browserCanRead is a browser's rule for a cross-origin answer: a script
// reads a response header only when it is CORS-safelisted or named in
// Access-Control-Expose-Headers (and the answer grants the page's origin).
func browserCanRead(resp *http.Response, origin, name string) bool {
	if ao := resp.Header.Get("Access-Control-Allow-Origin"); ao != "*" && ao != origin {
		return false
	}
	switch http.CanonicalHeaderKey(name) {
	case "Cache-Control", "Content-Language", "Content-Length", "Content-Type", "Expires", "Last-Modified", "Pragma":
		return true
	}
	for _, v := range strings.Split(resp.Header.Get("Access-Control-Expose-Headers"), ",") {
		if v = strings.TrimSpace(v); v == "*" || strings.EqualFold(v, name) {
			return true
		}
	}
	return false
}

// A page on another origin reads every X-Dify-Mock-* header the mock sets
// on /v1 answers: the cassette, turn, fault and annotation headers the docs
// point frontends to. (X-Dify-Mock-Annotation was missing from
// Access-Control-Expose-Headers, so a browser hid it; and an origin
// configured with a trailing "/" was never granted.)
func TestBrowserOnAnotherOriginReadsEveryMockHeader(t *testing.T) {
	const origin = "http://app.test"
	e := newEnv(t, mockserver.Config{CORSOrigin: "http://other.test, " + origin + "/"})
	a := e.createAnnotation("What are your opening hours?", "9–5, Mon–Fri.")
	if j := e.replyJob("enable", 0.8, "openai", "text-embedding-3-small"); j.JobStatus != "completed" {
		t.Fatalf("enable = %+v", j)
	}
	annotated, _ := e.chat(chatBody("What are your opening hours?", "u1"), "Origin", origin)
	replayed, _ := e.chat(chatBody("Hello", "u1"), "Origin", origin, fault.Header, "error-after:1")
	faulted, _ := e.do(http.MethodGet, "/meta", nil, "Origin", origin, fault.Header, "status:429")
	if annotated.Header.Get(mockserver.HeaderAnnotation) != a.ID || replayed.Header.Get(mockserver.HeaderTurn) == "" || faulted.Header.Get(fault.Header) == "" {
		t.Fatalf("the answers lack the headers under test: %v / %v / %v", annotated.Header, replayed.Header, faulted.Header)
	}
	seen := map[string]bool{}
	for _, resp := range []*http.Response{annotated, replayed, faulted} {
		for name := range resp.Header {
			if !strings.HasPrefix(name, "X-Dify-Mock-") {
				continue
			}
			seen[name] = true
			if !browserCanRead(resp, origin, name) {
				t.Errorf("%s %s: a page on %s cannot read %s (Allow-Origin %q, Expose-Headers %q)", resp.Request.Method, resp.Request.URL.Path,
					origin, name, resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Expose-Headers"))
			}
		}
	}
	for _, want := range []string{mockserver.HeaderCassette, mockserver.HeaderTurn, mockserver.HeaderAnnotation, fault.Header} {
		if !seen[want] {
			t.Errorf("no answer carried %s", want)
		}
	}
}

// pyMsg is conformance.PydanticError: str(ValidationError) of one error.
func pyMsg(model, loc, msg, typ, input, inputType string) string {
	return conformance.PydanticError(model, loc, msg, typ, input, inputType)
}

func TestChatValidation(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	legacy := newEnv(t, mockserver.Config{Mode: dify.ModeAgentChat})
	big := `{"user":"u","inputs":{},"query":"` + strings.Repeat("x", 5<<20) + `"}`
	cases := []struct {
		name    string
		env     *env
		body    any
		hdr     []string
		status  int
		code    string
		message string
	}{
		// Flask's get_json() outside debug mode: Werkzeug's BadRequest text;
		// a JSON value that is not an object breaks validate_app_token's
		// .get("user") → Dify's unhandled-exception 500.
		{"empty body", e, "", nil, 400, "bad_request", "The browser (or proxy) sent a request that this server could not understand."},
		{"malformed JSON", e, `{"query":`, nil, 400, "bad_request", "The browser (or proxy) sent a request that this server could not understand."},
		{"not an object", e, `[1,2]`, nil, 500, "unknown", "Internal Server Error"},
		{"oversize body", e, big, nil, 413, "request_entity_too_large", "*"},
		{"missing user", e, map[string]any{"query": "q", "inputs": map[string]any{"city": "x"}}, nil, 400, "invalid_param", "Arg user must be provided."},
		// validate_app_token takes any truthy user as str(user), so a
		// number is a valid user; the turn then fails on the form.
		{"user of the wrong type", e, map[string]any{"query": "q", "user": 5, "inputs": map[string]any{}}, nil, 400, "invalid_param", "city is required in input form"},
		// ChatRequestPayload's pydantic messages (str(ValidationError)).
		{"missing query", e, `{"user":"u","inputs":{}}`, nil, 400, "invalid_param", pyMsg("ChatRequestPayload", "query", "Field required", "missing", "{'user': 'u', 'inputs': {}}", "dict")},
		{"query of the wrong type", e, `{"user":"u","query":[1],"inputs":{}}`, nil, 400, "invalid_param", pyMsg("ChatRequestPayload", "query", "Input should be a valid string", "string_type", "[1]", "list")},
		{"missing inputs", e, `{"user":"u","query":"q"}`, nil, 400, "invalid_param", pyMsg("ChatRequestPayload", "inputs", "Field required", "missing", "{'user': 'u', 'query': 'q'}", "dict")},
		{"inputs not an object", e, `{"user":"u","query":"q","inputs":"x"}`, nil, 400, "invalid_param", pyMsg("ChatRequestPayload", "inputs", "Input should be a valid dictionary", "dict_type", "'x'", "str")},
		{"empty query", e, chatBody("", "u"), nil, 400, "invalid_param", "query is required"},
		{"blocking on agent", e, chatBody("q", "u", "response_mode", "blocking"), nil, 400, "bad_request", "Agent App only supports streaming response mode."},
		{"blocking on agent-chat", legacy, chatBody("q", "u", "response_mode", "blocking"), nil, 400, "invalid_param", "Agent Chat App does not support blocking mode"},
		{"omitted mode on agent-chat", legacy, map[string]any{"user": "u", "query": "q", "inputs": map[string]any{"city": "x"}}, nil, 400, "invalid_param", "Agent Chat App does not support blocking mode"},
		{"unknown response_mode", e, chatBody("q", "u", "response_mode", "fast"), nil, 400, "invalid_param", "*"},
		{"bad conversation id", e, chatBody("q", "u", "conversation_id", "123"), nil, 400, "invalid_param", pyMsg("ChatRequestPayload", "conversation_id", "Value error, conversation_id must be a valid UUID", "value_error", "'123'", "str")},
		{"unknown conversation", e, chatBody("q", "u", "conversation_id", recConv), nil, 404, "not_found", "Conversation Not Exists."},
		{"required input missing", e, chatBody("q", "u", "inputs", map[string]any{}), nil, 400, "invalid_param", "city is required in input form"},
		{"input too long", e, chatBody("q", "u", "inputs", map[string]any{"city": "Llanfairpwllgwyngyll"}), nil, 400, "invalid_param", "city in input form must be less than 10 characters"},
		{"input not a string", e, chatBody("q", "u", "inputs", map[string]any{"city": 3}), nil, 400, "invalid_param", "city in input form must be a string"},
		{"select outside its options", e, chatBody("q", "u", "inputs", map[string]any{"city": "x", "budget": "mid"}), nil, 400, "invalid_param", "budget in input form must be one of the following: ['low', 'high']"},
		{"files not a list", e, chatBody("q", "u", "files", "x"), nil, 400, "invalid_param", "*"},
		{"file type unknown", e, chatBody("q", "u", "files", []map[string]any{{"type": "pdf", "transfer_method": "remote_url", "url": "http://x/a.pdf"}}), nil, 400, "invalid_param", "*"},
		{"remote file without url", e, chatBody("q", "u", "files", []map[string]any{{"type": "image", "transfer_method": "remote_url"}}), nil, 400, "invalid_param", "Missing file url"},
		{"unknown upload", e, chatBody("q", "u", "files", []map[string]any{{"type": "image", "transfer_method": "local_file", "upload_file_id": recConv}}), nil, 400, "invalid_param", "Invalid upload file"},
		{"bad transfer method", e, chatBody("q", "u", "files", []map[string]any{{"type": "image", "transfer_method": "ftp"}}), nil, 400, "invalid_param", "*"},
		{"unknown cassette header", e, chatBody("q", "u"), []string{mockserver.HeaderCassette, "missing"}, 400, "invalid_param", "*"},
		{"cassette header escaping the folder", e, chatBody("q", "u"), []string{mockserver.HeaderCassette, "../app"}, 400, "invalid_param", "*"},
		{"bad speed header", e, chatBody("q", "u"), []string{mockserver.HeaderSpeed, "-1"}, 400, "invalid_param", "*"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.env.t = t
			resp, body := c.env.do(http.MethodPost, "/chat-messages", c.body, c.hdr...)
			c.env.wantError(resp, body, c.status, c.code, c.message)
		})
	}
	e.t = t
	// Omitted response_mode streams on a New Agent app (docs/api §2.1).
	resp := e.send(http.MethodPost, "/chat-messages", map[string]any{"user": "u", "query": "Count to three", "inputs": map[string]any{"city": "x"}})
	frames := readFrames(t, resp.Body, time.Now(), nil)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(frames) == 0 || frames[len(frames)-1].event() != "message_end" {
		t.Fatalf("omitted response_mode: %d %d frames", resp.StatusCode, len(frames))
	}
}

func TestConversationPaging(t *testing.T) {
	tick := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	// A clock that never advances: paging must still be stable (ties are
	// broken by creation order, not skipped).
	e := newEnv(t, mockserver.Config{Now: func() time.Time { return tick }})
	var ids []string
	for i := 0; i < 5; i++ {
		_, fr := e.chat(chatBody(fmt.Sprintf("question %d", i), "pat"))
		ids = append(ids, fr[0].str("conversation_id"))
	}
	// Renaming the oldest makes it the most recently updated.
	e.do(http.MethodPost, "/conversations/"+ids[0]+"/name", map[string]any{"name": "renamed", "user": "pat"})

	collect := func(sortBy string) []string {
		var got []string
		last := ""
		for page := 0; page < 10; page++ {
			q := "/conversations?user=pat&limit=2&sort_by=" + sortBy
			if last != "" {
				q += "&last_id=" + last
			}
			resp, body := e.do(http.MethodGet, q, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", q, resp.StatusCode, body)
			}
			p := decode[dify.ConversationPage](t, body)
			if p.Limit != 2 {
				t.Fatalf("limit echo %d", p.Limit)
			}
			for _, c := range p.Data {
				got = append(got, c.ID)
			}
			if !p.HasMore {
				return got
			}
			last = p.Data[len(p.Data)-1].ID
		}
		t.Fatalf("%s: paging never ended", sortBy)
		return nil
	}
	want := map[string][]string{
		"created_at":  {ids[0], ids[1], ids[2], ids[3], ids[4]},
		"-created_at": {ids[4], ids[3], ids[2], ids[1], ids[0]},
		"updated_at":  {ids[1], ids[2], ids[3], ids[4], ids[0]},
		"-updated_at": {ids[0], ids[4], ids[3], ids[2], ids[1]},
	}
	for sortBy, w := range want {
		if got := collect(sortBy); strings.Join(got, ",") != strings.Join(w, ",") {
			t.Errorf("sort_by=%s:\n got %v\nwant %v", sortBy, got, w)
		}
	}
	// Default is -updated_at; has_more is false on an exactly full last page.
	_, body := e.do(http.MethodGet, "/conversations?user=pat&limit=5", nil)
	if p := decode[dify.ConversationPage](t, body); len(p.Data) != 5 || p.HasMore || p.Data[0].ID != ids[0] {
		t.Errorf("limit=5: %s", body)
	}
	for q, code := range map[string]string{
		"limit=0": "invalid_param", "limit=101": "invalid_param", "limit=x": "invalid_param",
		"sort_by=name": "invalid_param", "last_id=nope": "invalid_param",
	} {
		resp, body := e.do(http.MethodGet, "/conversations?user=pat&"+q, nil)
		e.wantError(resp, body, 400, code, "*")
	}
	resp, body := e.do(http.MethodGet, "/conversations?user=other&last_id="+ids[0], nil)
	e.wantError(resp, body, 404, "not_found", "Last Conversation Not Exists.")
	resp, body = e.do(http.MethodGet, "/messages?user=pat", nil)
	e.wantError(resp, body, 400, "invalid_param", "*")
	resp, body = e.do(http.MethodGet, "/messages?user=pat&limit=101&conversation_id="+ids[0], nil)
	e.wantError(resp, body, 400, "invalid_param", "*")
	// Unknown query parameters are ignored (dify-client sends first_id, pinned).
	if resp, _ := e.do(http.MethodGet, "/conversations?user=pat&first_id=&pinned=false", nil); resp.StatusCode != 200 {
		t.Errorf("unknown params: %d", resp.StatusCode)
	}
}

// TestSetWithoutAppFallsBackToTheBuiltinApp: a folder with chat cassettes
// only is served with the built-in app description.
func TestSetWithoutAppFallsBackToTheBuiltinApp(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "only.yaml"), chatFile(t, cassette.Meta{Mode: "agent"},
		turn{query: "hi", frames: []frame{delta(0, recMsg, "hey"), end(ms(1), recMsg)}}), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, mockserver.Config{Cassettes: set})
	builtin := mustBuiltin(t)
	_, body := e.do(http.MethodGet, "/info", nil)
	if string(body) != string(builtin.App.Responses["/info"].Body) {
		t.Errorf("/info %s", body)
	}
	if _, frames := e.chat(map[string]any{"query": "hi", "user": "u", "inputs": map[string]any{}}); frames[0].str("answer") != "hey" {
		t.Errorf("%v", frames)
	}
}
