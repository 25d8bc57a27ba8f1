package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/conformance"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/verify"
)

// upstreamKey is the fake upstream's key. It is long and distinctive so a
// leak anywhere is found by a plain substring search.
const upstreamKey = "app-VerifyUpstreamSecret7f3a9c21"

// deviation makes the fake upstream answer differently from the mock in
// one known way, and says which differences it explains.
type deviation struct {
	name string
	// rewrite may change a captured answer (status, header, body) of req.
	rewrite func(req *http.Request, reqBody []byte, status *int, h http.Header, body *[]byte)
	// before may answer req itself (return true) or just delay it.
	before func(w http.ResponseWriter, req *http.Request) bool
	// explains reports whether d is caused by this deviation.
	explains func(d verify.Difference) bool
	// mustSee are differences that must be reported (Case, Aspect, Path,
	// Upstream, Mock; an empty Upstream or Mock is not compared).
	mustSee []verify.Difference
}

// fakeUpstream is an in-process dify-mock behind the deviations: a stand-in
// for a Dify version that differs from the mock in exactly those ways.
type fakeUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	Method, Path, Body string
	Query              url.Values
	Header             http.Header
}

func newFakeUpstream(t *testing.T, devs ...deviation) *fakeUpstream {
	t.Helper()
	return newFakeUpstreamOf(t, nil, devs...)
}

// newFakeUpstreamOf serves set (nil = the built-in cassettes).
func newFakeUpstreamOf(t *testing.T, set *cassette.Set, devs ...deviation) *fakeUpstream {
	t.Helper()
	srv, err := mockserver.New(mockserver.Config{Cassettes: set, APIKeys: []string{upstreamKey}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeUpstream{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.seen = append(f.seen, seenRequest{req.Method, req.URL.Path, string(body), req.URL.Query(), req.Header.Clone()})
		f.mu.Unlock()
		for _, d := range devs {
			if d.before != nil && d.before(w, req) {
				return
			}
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		status, h, out := rec.Code, rec.Header(), rec.Body.Bytes()
		for _, d := range devs {
			if d.rewrite != nil {
				d.rewrite(req, body, &status, h, &out)
			}
		}
		for k, v := range h {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(status)
		_, _ = w.Write(out)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeUpstream) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

func (f *fakeUpstream) base() string { return f.URL + "/v1" }

var (
	renamedField = deviation{
		name: "renamed field: GET /conversations says hasMore, not has_more",
		rewrite: func(req *http.Request, _ []byte, status *int, _ http.Header, body *[]byte) {
			if req.Method == http.MethodGet && req.URL.Path == "/v1/conversations" && *status == http.StatusOK {
				*body = bytes.Replace(*body, []byte(`"has_more":`), []byte(`"hasMore":`), 1)
			}
		},
		explains: func(d verify.Difference) bool {
			return d.Route == "GET /conversations" && d.Aspect == "field" && (d.Path == "$.has_more" || d.Path == "$.hasMore")
		},
		mustSee: []verify.Difference{
			{Case: "bounds/conversations-limit-100", Aspect: "field", Path: "$.hasMore", Upstream: "boolean", Mock: "(missing)"},
			{Case: "bounds/conversations-limit-100", Aspect: "field", Path: "$.has_more", Upstream: "(missing)", Mock: "boolean"},
		},
	}
	status422 = deviation{
		name: "422 instead of 400 for a bad response_mode",
		rewrite: func(req *http.Request, reqBody []byte, status *int, _ http.Header, body *[]byte) {
			if req.URL.Path == "/v1/chat-messages" && bytes.Contains(reqBody, []byte(`"response_mode":"fast"`)) && *status == http.StatusBadRequest {
				*status = http.StatusUnprocessableEntity
				*body = bytes.Replace(*body, []byte(`"status":400`), []byte(`"status":422`), 1)
			}
		},
		explains: func(d verify.Difference) bool {
			return d.Case == "wrong-type/chat-response-mode" && d.Aspect == "status"
		},
		mustSee: []verify.Difference{{Case: "wrong-type/chat-response-mode", Aspect: "status", Upstream: "422", Mock: "400"}},
	}
	missingRoute = deviation{
		name: "missing route: no GET /end-users/{id} (an older Dify); its 404 page quotes the Authorization header",
		before: func(w http.ResponseWriter, req *http.Request) bool {
			if !strings.HasPrefix(req.URL.Path, "/v1/end-users/") {
				return false
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			// A careless proxy page that echoes the key: it must not reach
			// a report or a written cassette.
			fmt.Fprintf(w, "<!doctype html>\n<title>404 Not Found</title>\n<p>Not found (%s)</p>\n", req.Header.Get("Authorization"))
			return true
		},
		explains: func(d verify.Difference) bool { return d.Route == "GET /end-users/{id}" },
		mustSee: []verify.Difference{
			{Case: "valid/end-user", Aspect: "status", Upstream: "404", Mock: "200"},
			{Case: "valid/end-user", Aspect: "content_type", Upstream: "text/html", Mock: "application/json"},
			{Case: "valid/end-user", Aspect: "field", Path: "$", Upstream: "(missing)", Mock: "object"},
			{Case: "state/end-user-unknown", Aspect: "code", Upstream: "", Mock: "end_user_not_found"},
		},
	}
	appWideField = deviation{
		name: "an extra field in GET /app/feedbacks, an app-wide listing that --record-diff must not write",
		rewrite: func(req *http.Request, _ []byte, status *int, _ http.Header, body *[]byte) {
			if req.Method == http.MethodGet && req.URL.Path == "/v1/app/feedbacks" && *status == http.StatusOK && bytes.HasPrefix(*body, []byte("{")) {
				*body = append([]byte(`{"extra_field":1,`), (*body)[1:]...)
			}
		},
		explains: func(d verify.Difference) bool {
			return d.Route == "GET /app/feedbacks" && d.Aspect == "field" && d.Path == "$.extra_field"
		},
		mustSee: []verify.Difference{{Route: "GET /app/feedbacks", Aspect: "field", Path: "$.extra_field", Upstream: "number", Mock: "(missing)"}},
	}
	extraEvent = deviation{
		name: "extra stream event: an agent_log frame before message_end",
		rewrite: func(req *http.Request, _ []byte, status *int, h http.Header, body *[]byte) {
			if req.URL.Path != "/v1/chat-messages" || *status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				return
			}
			i := bytes.Index(*body, []byte(`data: {"event": "message_end"`))
			if i < 0 {
				i = bytes.Index(*body, []byte(`data: {"event":"message_end"`))
			}
			if i < 0 {
				return
			}
			extra := []byte(`data: {"event": "agent_log", "conversation_id": "x", "data": {"label": "step"}}` + "\n\n")
			*body = append((*body)[:i:i], append(extra, (*body)[i:]...)...)
		},
		explains: func(d verify.Difference) bool { return d.Route == "POST /chat-messages" && d.Aspect == "events" },
		mustSee:  []verify.Difference{{Route: "POST /chat-messages", Aspect: "events"}},
	}
)

func run(t *testing.T, opts verify.Options) *verify.Report {
	t.Helper()
	if opts.MaxChatTurns == 0 {
		opts.MaxChatTurns = verify.DefaultMaxChatTurns
	}
	rep, err := verify.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return rep
}

// smallCases is the default case list without its multi-megabyte uploads,
// for tests about something else (they are slow under -race).
func smallCases() []conformance.Case {
	var out []conformance.Case
	for _, c := range verify.Cases(nil) {
		big := false
		for _, p := range c.Request.Multipart {
			big = big || p.Size > 1<<20
		}
		if !big {
			out = append(out, c)
		}
	}
	return out
}

func showReport(rep *verify.Report) string {
	var b strings.Builder
	_ = rep.WriteTable(&b)
	return b.String()
}

// TestAgainstItselfNoDifferences: a fake upstream without deviations is
// the mock, so nothing may be reported, and most cases must have run.
func TestAgainstItselfNoDifferences(t *testing.T) {
	up := newFakeUpstream(t)
	// No path: /v1 is implied, as for `dify-mock record`.
	rep := run(t, verify.Options{Upstream: up.URL, UpstreamKey: upstreamKey})
	if len(rep.Differences) != 0 || len(rep.Errors) != 0 {
		t.Fatalf("differences against the mock itself:\n%s", showReport(rep))
	}
	if rep.Compared < rep.Cases*3/4 {
		t.Errorf("only %d of %d cases compared:\n%s", rep.Compared, rep.Cases, showReport(rep))
	}
	if rep.UpstreamMode == "" || rep.UpstreamMode != rep.MockMode {
		t.Errorf("modes: upstream %q, mock %q", rep.UpstreamMode, rep.MockMode)
	}
	if len(rep.Cleanup) != 0 {
		t.Errorf("cleanup errors: %v", rep.Cleanup)
	}
}

// TestAnyKeyUpstream: an upstream that accepts any key (a mock started
// without --api-key) answers the unknown-key case with the app instead of
// 401. That case alone differs, in status, code, message and header; the
// two bodies' fields are not listed (one is an error, one is not).
func TestAnyKeyUpstream(t *testing.T) {
	srv, err := mockserver.New(mockserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	rep := run(t, verify.Options{Upstream: ts.URL + "/v1", UpstreamKey: upstreamKey, Cases: smallCases()})
	aspects := map[string]bool{}
	for _, d := range rep.Differences {
		if d.Case != "auth/unknown-key" {
			t.Errorf("unexpected difference %+v", d)
		}
		aspects[d.Aspect] = true
	}
	if !aspects["status"] || !aspects["code"] || aspects["field"] {
		t.Errorf("aspects %v:\n%s", aspects, showReport(rep))
	}
}

// TestCasesTakeInputs: --inputs reaches every chat turn of the table, and
// a streamed turn is always in the list.
func TestCasesTakeInputs(t *testing.T) {
	cases := verify.Cases(map[string]any{"destination": "Seoul"})
	turns, streamed := 0, false
	for _, c := range cases {
		if !c.ChatTurn {
			continue
		}
		turns++
		streamed = streamed || c.Expect.ContentType == "text/event-stream"
		var body struct {
			Inputs map[string]any `json:"inputs"`
			User   string         `json:"user"`
		}
		if err := json.Unmarshal([]byte(c.Request.Body), &body); err != nil || body.Inputs["destination"] != "Seoul" || body.User != "{user}" {
			t.Errorf("%s: body %s (%v)", c.Name, c.Request.Body, err)
		}
	}
	if turns == 0 || !streamed {
		t.Errorf("%d chat-turn case(s), streamed %v", turns, streamed)
	}
}

// TestAgainstARunningMock checks a mock given by URL (--mock) with its own
// key instead of the in-process one.
func TestAgainstARunningMock(t *testing.T) {
	const mockKey = "app-running-mock-key"
	srv, err := mockserver.New(mockserver.Config{APIKeys: []string{mockKey}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	up := newFakeUpstream(t, renamedField)
	rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, Mock: ts.URL + "/v1", MockKey: mockKey, Cases: smallCases()})
	if rep.Mock != ts.URL+"/v1" || len(rep.Errors) != 0 {
		t.Fatalf("mock %q, errors %+v", rep.Mock, rep.Errors)
	}
	for _, d := range rep.Differences {
		if !renamedField.explains(d) {
			t.Errorf("unexpected difference %+v", d)
		}
	}
	if len(rep.Differences) == 0 {
		t.Error("the renamed field was not reported")
	}
}

// TestMirrorsTheUpstreamApp: the in-process mock describes the upstream's
// app, so an app with suggested questions switched off (unlike the
// built-in one) compares like for like: the feature-gated case runs on
// both sides and nothing differs.
func TestMirrorsTheUpstreamApp(t *testing.T) {
	set, err := mockserver.BuiltinSet()
	if err != nil {
		t.Fatal(err)
	}
	app := *set.App
	app.Responses = map[string]*cassette.Response{}
	for k, v := range set.App.Responses {
		app.Responses[k] = v
	}
	var params map[string]any
	if err := json.Unmarshal(set.App.Responses["/parameters"].Body, &params); err != nil {
		t.Fatal(err)
	}
	params["suggested_questions_after_answer"] = map[string]any{"enabled": false}
	body, _ := json.Marshal(params)
	resp := *set.App.Responses["/parameters"]
	resp.Body = body
	app.Responses["/parameters"] = &resp
	if err := json.Unmarshal(body, &app.Parameters); err != nil {
		t.Fatal(err)
	}
	off := *set
	off.App = &app

	up := newFakeUpstreamOf(t, &off)
	rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, Cases: smallCases()})
	if len(rep.Differences) != 0 || len(rep.Errors) != 0 {
		t.Fatalf("differences:\n%s", showReport(rep))
	}
	for _, s := range rep.Skipped {
		if s.Case == "state/suggested-disabled-403" {
			t.Errorf("the feature-gated case did not run: %s", s.Reason)
		}
	}
}

// TestReportsExactlyTheDeviations: each deviation is found, and nothing
// else is reported.
func TestReportsExactlyTheDeviations(t *testing.T) {
	devs := []deviation{renamedField, status422, missingRoute, appWideField, extraEvent}
	up := newFakeUpstream(t, devs...)
	dir := t.TempDir()
	var logs bytes.Buffer
	var logMu sync.Mutex
	rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, RecordDiff: dir, Cases: smallCases(),
		Logf: func(f string, a ...any) { logMu.Lock(); fmt.Fprintf(&logs, f+"\n", a...); logMu.Unlock() }})
	table := showReport(rep)
	if len(rep.Errors) != 0 {
		t.Errorf("errors:\n%s", table)
	}
	for _, d := range rep.Differences {
		n := 0
		for _, dev := range devs {
			if dev.explains(d) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("difference explained by %d deviations: %+v", n, d)
		}
	}
	for _, dev := range devs {
		for _, want := range dev.mustSee {
			if !reported(rep.Differences, want) {
				t.Errorf("%s: not reported: %+v", dev.name, want)
			}
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("report:\n%s", table)
	}

	// The live answers of the differing cases were written as cassettes
	// that load, and the key is nowhere.
	if len(rep.Recorded) == 0 {
		t.Fatalf("no cassettes recorded; not recorded: %+v", rep.NotRecorded)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatalf("recorded cassettes do not load: %v", err)
	}
	if len(set.Names) != len(rep.Recorded) {
		t.Errorf("%d cassettes load, %d recorded", len(set.Names), len(rep.Recorded))
	}
	if _, ok := set.Get("verify-differences"); !ok {
		t.Errorf("no verify-differences cassette; recorded %v, not recorded %+v", rep.Recorded, rep.NotRecorded)
	}
	if strings.Contains(readAll(t, filepath.Join(dir, "verify-differences.yaml")), "/app/feedbacks") {
		t.Error("an app-wide listing was written")
	}
	for _, d := range rep.Differences {
		if d.Route != "GET /app/feedbacks" {
			continue
		}
		found := false
		for _, n := range rep.NotRecorded {
			found = found || (n.Case == d.Case && strings.Contains(n.Reason, "other users"))
		}
		if !found {
			t.Errorf("%s: not listed as not recorded: %+v", d.Case, rep.NotRecorded)
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	assertNoKey(t, "the table", table)
	assertNoKey(t, "the JSON report", js.String())
	assertNoKey(t, "the log", logs.String())
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, p := range files {
		data, _ := os.ReadFile(p)
		assertNoKey(t, p, string(data))
		if bytes.Contains(data, []byte("app-VerifyUpstream")) {
			t.Errorf("%s: part of the key survived", p)
		}
	}
	if !strings.Contains(readAll(t, filepath.Join(dir, "verify-differences.yaml")), secrets.Redacted) {
		t.Errorf("the echoed key was not redacted in the recorded 404 page")
	}
}

func readAll(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func assertNoKey(t *testing.T, where, text string) {
	t.Helper()
	if strings.Contains(strings.ToLower(text), strings.ToLower(upstreamKey)) {
		t.Errorf("the upstream key appears in %s", where)
	}
}

func reported(list []verify.Difference, want verify.Difference) bool {
	for _, d := range list {
		if (want.Case == "" || d.Case == want.Case) && (want.Route == "" || d.Route == want.Route) && d.Aspect == want.Aspect && (want.Path == "" || d.Path == want.Path) &&
			(want.Upstream == "" || d.Upstream == want.Upstream) && (want.Mock == "" || d.Mock == want.Mock) {
			if want.Aspect == "events" && !strings.Contains(d.Upstream, "agent_log") {
				continue
			}
			return true
		}
	}
	return false
}

// TestSlowUpstreamIsNoDifference: timing is never compared; an answer that
// does not come within the timeout is reported as missing for that case
// only, and the run says its comparison is incomplete.
func TestSlowUpstream(t *testing.T) {
	slow := deviation{before: func(w http.ResponseWriter, req *http.Request) bool {
		if req.URL.Path == "/v1/info/" { // routing/trailing-slash-404: never answers
			<-req.Context().Done()
			return true
		}
		time.Sleep(5 * time.Millisecond) // every other answer is late, but in time
		return false
	}}
	up := newFakeUpstream(t, slow)
	// The timeout is generous for a loaded machine; only the hanging
	// request waits it out.
	rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, Timeout: 10 * time.Second, Cases: smallCases()})
	if len(rep.Differences) != 0 {
		t.Errorf("a slow upstream gave differences:\n%s", showReport(rep))
	}
	if len(rep.Errors) != 1 || rep.Errors[0].Case != "routing/trailing-slash-404" || rep.Errors[0].Aspect != verify.AspectError ||
		!strings.Contains(rep.Errors[0].Upstream, "no answer") || rep.Errors[0].Mock != "answered 404" {
		t.Errorf("want one error for routing/trailing-slash-404, got %+v", rep.Errors)
	}
}

// TestFailingUpstream: an upstream that cannot be reached, or that fails
// the first read, ends the run with a TransportError before any case (and
// before the mock is involved); one that drops connections on a route
// gets "no answer" for exactly that route's cases.
func TestFailingUpstream(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		_, err = verify.Run(context.Background(), verify.Options{Upstream: "http://" + addr + "/v1", UpstreamKey: upstreamKey, MaxChatTurns: 1})
		var te *verify.TransportError
		if !errors.As(err, &te) || te.Side != "upstream" {
			t.Fatalf("want an upstream TransportError, got %v", err)
		}
		assertNoKey(t, "the error", err.Error())
	})
	t.Run("bad-gateway", func(t *testing.T) {
		up := newFakeUpstream(t, deviation{before: func(w http.ResponseWriter, req *http.Request) bool {
			http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
			return true
		}})
		_, err := verify.Run(context.Background(), verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, MaxChatTurns: 1})
		var te *verify.TransportError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "502") {
			t.Fatalf("want a TransportError naming the 502, got %v", err)
		}
		for _, r := range up.requests() {
			if r.Method != http.MethodGet {
				t.Errorf("a failing upstream got %s %s", r.Method, r.Path)
			}
		}
	})
	t.Run("drops-a-route", func(t *testing.T) {
		up := newFakeUpstream(t, deviation{before: func(w http.ResponseWriter, req *http.Request) bool {
			if req.URL.Path != "/v1/text-to-audio" {
				return false
			}
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		}})
		rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, Cases: smallCases()})
		if len(rep.Differences) != 0 {
			t.Errorf("differences:\n%s", showReport(rep))
		}
		if len(rep.Errors) == 0 {
			t.Fatal("no errors for the dropped route")
		}
		for _, e := range rep.Errors {
			if e.Route != "POST /text-to-audio" || e.Aspect != verify.AspectError {
				t.Errorf("unexpected error entry %+v", e)
			}
		}
	})
}

// TestChatTurnCapIsHard: an upstream that accepts a chat request the
// cases expect it to refuse (so it runs a turn) spends the cap like any
// other turn; once the cap is reached no further chat request is sent, and
// the accidental conversation is deleted with the others.
func TestChatTurnCapIsHard(t *testing.T) {
	const user = "dify-mock-verify-cap-test"
	var mu sync.Mutex
	accepted := 0
	lenient := deviation{
		before: func(w http.ResponseWriter, req *http.Request) bool {
			if req.Method != http.MethodPost || req.URL.Path != "/v1/chat-messages" {
				return false
			}
			body, _ := io.ReadAll(req.Body)
			// An older, lenient server: two requests the cases expect it to
			// refuse run turns; with the two planned turns that is one more
			// than the cap.
			if bytes.Contains(body, []byte(`"response_mode":"fast"`)) || bytes.Contains(body, []byte(`"query":5`)) {
				body = []byte(fmt.Sprintf(`{"query":"hi","inputs":{},"user":%q,"response_mode":"streaming"}`, user))
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			return false
		},
		rewrite: func(req *http.Request, _ []byte, status *int, _ http.Header, _ *[]byte) {
			if req.Method == http.MethodPost && req.URL.Path == "/v1/chat-messages" && *status == http.StatusOK {
				mu.Lock()
				accepted++
				mu.Unlock()
			}
		},
	}
	up := newFakeUpstream(t, lenient)
	const maxTurns = 3
	rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, User: user, MaxChatTurns: maxTurns, Cases: smallCases()})
	mu.Lock()
	n := accepted
	mu.Unlock()
	if n > maxTurns {
		t.Errorf("the upstream ran %d chat turns, cap %d", n, maxTurns)
	}
	if !reported(rep.Differences, verify.Difference{Case: "wrong-type/chat-response-mode", Aspect: "status", Upstream: "200", Mock: "400"}) {
		t.Errorf("the accepted refusal case is not reported:\n%s", showReport(rep))
	}
	capped := 0
	for _, s := range rep.Skipped {
		if strings.Contains(s.Reason, "chat-turn cap") {
			capped++
		}
	}
	if capped == 0 {
		t.Errorf("no chat case was skipped for the cap:\n%s", showReport(rep))
	}
	if ids := conversations(t, up.base(), user); len(ids) != 0 {
		t.Errorf("conversations left after the run: %v", ids)
	}
}

// TestInterruptCleansUp cancels the run while the fixture conversation and
// the streamed turn's conversation exist: both are deleted, the other
// user's conversation is untouched, and no request ran as anyone else.
func TestInterruptCleansUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupt := deviation{before: func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method == http.MethodGet && req.URL.Path == "/v1/messages" && strings.Contains(req.URL.RawQuery, "conversation_id") {
			cancel() // Ctrl-C while a case that uses the fixture runs
		}
		return false
	}}
	up := newFakeUpstream(t, interrupt)
	other := chat(t, up.base(), "someone-else")

	const user = "dify-mock-verify-interrupt-test"
	rep, err := verify.Run(ctx, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, User: user, MaxChatTurns: verify.DefaultMaxChatTurns})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if rep == nil || !rep.Interrupted {
		t.Fatalf("report not marked interrupted: %+v", rep)
	}
	if len(rep.Cleanup) != 0 {
		t.Errorf("cleanup errors: %v", rep.Cleanup)
	}

	deleted := map[string]bool{}
	for _, r := range up.requests() {
		if r.Method == http.MethodGet {
			continue
		}
		if strings.HasPrefix(r.Path, "/v1/conversations/") && r.Method == http.MethodDelete {
			deleted[strings.TrimPrefix(r.Path, "/v1/conversations/")] = true
		}
		if r.Body != "" && strings.Contains(r.Body, `"user"`) && !strings.Contains(r.Body, user) && !strings.Contains(r.Body, "someone-else") {
			// bodies without the run's user are the cases' own bad inputs
			// (missing user); they create nothing.
			continue
		}
		if strings.Contains(r.Body, "someone-else") && r.Method != http.MethodPost {
			t.Errorf("the run touched the other user: %s %s", r.Method, r.Path)
		}
	}
	if deleted[other] {
		t.Errorf("the other user's conversation %s was deleted", other)
	}
	if ids := conversations(t, up.base(), user); len(ids) != 0 {
		t.Errorf("the run's conversations survived the interrupt: %v", ids)
	}
	if ids := conversations(t, up.base(), "someone-else"); len(ids) != 1 || ids[0] != other {
		t.Errorf("the other user's conversations: %v, want [%s]", ids, other)
	}
	if len(deleted) < 2 {
		t.Errorf("want the fixture's and the streamed turn's conversations deleted, saw deletes of %v", deleted)
	}
}

var convIDRE = regexp.MustCompile(`"conversation_id": ?"([0-9a-f-]{36})"`)

// chat runs one streamed turn as user and returns its conversation id.
func chat(t *testing.T, base, user string) string {
	t.Helper()
	body := fmt.Sprintf(`{"query":"hello","inputs":{},"user":%q,"response_mode":"streaming"}`, user)
	req, _ := http.NewRequest(http.MethodPost, base+"/chat-messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+upstreamKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	m := convIDRE.FindSubmatch(data)
	if m == nil {
		t.Fatalf("no conversation id in %s", data)
	}
	return string(m[1])
}

func conversations(t *testing.T, base, user string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/conversations?limit=100&user="+user, nil)
	req.Header.Set("Authorization", "Bearer "+upstreamKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Data {
		ids = append(ids, c.ID)
	}
	return ids
}

// keyCatcher is another origin (same host, another port): the upstream key
// must never reach it. It counts the requests it got.
func keyCatcher(t *testing.T) (*httptest.Server, func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		if strings.Contains(req.Header.Get("Authorization"), upstreamKey) {
			t.Errorf("the upstream key reached another origin: %s %s", req.Method, req.URL)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"tool_icons":{}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestRedirectingUpstreamGetsNoKeyElsewhere: an upstream that answers the
// app-description fetch, or a case, with a redirect to another origin is
// not followed (the outbound policy, mockserver/internal/upstream): the fetch
// fails naming the redirect, a case reports the 3xx, and the other server
// never sees a request.
func TestRedirectingUpstreamGetsNoKeyElsewhere(t *testing.T) {
	other, hits := keyCatcher(t)
	t.Run("app-description", func(t *testing.T) {
		up := newFakeUpstream(t, deviation{before: func(w http.ResponseWriter, req *http.Request) bool {
			if req.URL.Path != "/v1/meta" {
				return false
			}
			http.Redirect(w, req, other.URL+"/v1/meta", http.StatusFound)
			return true
		}})
		_, err := verify.Run(context.Background(), verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, MaxChatTurns: 0, Cases: smallCases()[:3]})
		if err == nil || !strings.Contains(err.Error(), "redirect") {
			t.Fatalf("want the redirect refused, got %v", err)
		}
		assertNoKey(t, "the error", err.Error())
	})
	t.Run("a-case", func(t *testing.T) {
		up := newFakeUpstream(t, deviation{before: func(w http.ResponseWriter, req *http.Request) bool {
			if req.URL.Path != "/v1/conversations" {
				return false
			}
			http.Redirect(w, req, other.URL+req.URL.RequestURI(), http.StatusTemporaryRedirect)
			return true
		}})
		rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, MaxChatTurns: 0, Cases: smallCases()})
		seen := false
		for _, d := range append(rep.Differences, rep.Errors...) {
			seen = seen || (d.Route == "GET /conversations" && d.Aspect == "status" && d.Upstream == "307")
		}
		if !seen {
			t.Errorf("the redirect is not reported as the upstream's answer:\n%s", showReport(rep))
		}
	})
	if n := hits(); n != 0 {
		t.Fatalf("the redirect target got %d request(s)", n)
	}
}

// TestRecordDiffStoresUploadSummariesNotContents: a differing upload case
// is written by --record-diff as an upload summary (name, size, type,
// sha256), never its bytes: the oversized-upload case's raw 20 MB body went
// into verify-differences.yaml and took ~15 s to scrub.
func TestRecordDiffStoresUploadSummariesNotContents(t *testing.T) {
	contents := "UPLOADED-CONTENTS-" + strings.Repeat("z", 256<<10)
	var cases []conformance.Case
	for _, c := range smallCases() {
		if c.Name == "valid/upload" {
			for i := range c.Request.Multipart {
				if c.Request.Multipart[i].Filename != "" {
					c.Request.Multipart[i].Data = contents
				}
			}
		}
		cases = append(cases, c)
	}
	extraUploadField := deviation{
		name: "an extra field in the upload answer",
		rewrite: func(req *http.Request, _ []byte, status *int, _ http.Header, body *[]byte) {
			if req.URL.Path == "/v1/files/upload" && *status == http.StatusCreated && bytes.HasPrefix(*body, []byte("{")) {
				*body = append([]byte(`{"extra_field":1,`), (*body)[1:]...)
			}
		},
	}
	up := newFakeUpstream(t, extraUploadField)
	dir := t.TempDir()
	rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, RecordDiff: dir, Cases: cases})
	if len(rep.Recorded) == 0 {
		t.Fatalf("nothing recorded: %+v", rep.NotRecorded)
	}
	found := false
	for _, p := range rep.Recorded {
		data := readAll(t, p)
		if strings.Contains(data, "UPLOADED-CONTENTS") {
			t.Errorf("%s holds the uploaded file's contents", p)
		}
		found = found || strings.Contains(data, cassette.UploadSummaryHeader)
	}
	if !found {
		t.Errorf("no recorded cassette holds an upload summary: %v", rep.Recorded)
	}
	if _, err := cassette.LoadDir(dir); err != nil {
		t.Errorf("recorded cassettes do not load: %v", err)
	}
}
