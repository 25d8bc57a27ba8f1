// Package verify runs the conformance cases against a live Dify and against
// dify-mock, request for request, and reports where the mock answers
// differently: status, error code and message, response shape (field names,
// kinds, null vs missing), the headers clients read, and for a real chat
// turn the event sequence and each event type's fields. Timing and text are
// never compared.
//
// It is made to be safe on a real app: every request runs as a dedicated
// end user (dify-mock-verify-<random>), it deletes only the conversations
// that user created (also when ctx is cancelled), it caps the chat turns it
// sends, and the app key never reaches a report, a log line or a file.
// `dify-mock verify` is the command; docs/mock/verify.md describes it.
package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/conformance"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/upstream"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// DefaultMaxChatTurns is the CLI's chat-turn cap per server.
const DefaultMaxChatTurns = conformance.DefaultMaxChatTurns

// UserPrefix starts the dedicated end-user string of every run.
const UserPrefix = "dify-mock-verify-"

// Options configures a run. Upstream and UpstreamKey are required.
type Options struct {
	// Upstream is the live Dify's Service API base URL
	// ("https://dify.example.com/v1").
	Upstream    string
	UpstreamKey string
	// Mock is the base URL of a running dify-mock; "" starts the mock
	// in-process on 127.0.0.1, describing the upstream's app (its GET /,
	// /info, /parameters, /meta and /site answers, read at the start).
	Mock string
	// MockKey is the key sent to Mock; "" = a random "app-…" key, which the
	// in-process mock is configured to accept (and only it).
	MockKey string
	// MockKeyName says which key MockKey is, for the report (never the key:
	// e.g. `app "support" (DIFY_MOCK_APP_KEYS)`); "" = "--mock-key" when
	// MockKey is set.
	MockKeyName string
	// Cassettes are the in-process mock's chat cassettes; nil = the
	// built-in set. Their app description is replaced by the upstream's.
	Cassettes *cassette.Set
	// MaxChatTurns caps the chat turns sent to each server (they cost model
	// tokens upstream): cases that would spend more are skipped on both
	// sides. 0 = none at all; negative = no cap.
	MaxChatTurns int
	// Inputs are the chat turns' `inputs` (apps whose form has required
	// fields need them). nil = {}.
	Inputs map[string]any
	// User is the dedicated end-user string; "" = UserPrefix + random hex.
	User string
	// Timeout bounds each request (a chat turn included); 0 =
	// conformance.Timeout.
	Timeout time.Duration
	// Confirm is asked once, before the first request, with what the run
	// will spend; false ends the run with ErrDeclined. nil = proceed.
	Confirm func(Plan) bool
	// Logf receives progress lines (never the key). nil discards.
	Logf func(format string, args ...any)
	// RecordDiff, when set, is the folder the live answers of differing
	// cases are written to as cassettes (see Report.Recorded).
	RecordDiff string
	// Rules are extra redactions for RecordDiff, as `record --redact`.
	Rules []record.Rule
	// Transport carries the upstream's requests under the outbound
	// policy (mockserver/internal/upstream: the upstream's origin only, no
	// redirects, bounded answers); nil = upstream.NewBaseTransport.
	Transport http.RoundTripper
	// Cases replaces the case list (tests); nil = Cases().
	Cases []conformance.Case
}

// Plan is what a run is about to do, for Options.Confirm.
type Plan struct {
	Upstream string `json:"upstream"` // without credentials
	Mock     string `json:"mock"`     // "built-in" or the URL
	User     string `json:"user"`
	Cases    int    `json:"cases"`
	// ChatTurns are the chat turns the cases plan to send the upstream
	// (within the cap).
	ChatTurns int `json:"chat_turns"`
	// MaxChatTurns is the hard cap (-1 = none): the upstream is never
	// sent a chat request once it has accepted this many.
	MaxChatTurns int `json:"max_chat_turns"`
	// ChatRoutes counts the other cases that POST /chat-messages: they
	// are meant to be refused (bad input), but a server that accepts one
	// runs a turn for it.
	ChatRoutes int `json:"chat_route_cases"`
}

// turnLimit is the upstream's hard chat-turn cap: it counts the chat
// requests the upstream accepted (HTTP 200, a turn ran) and refuses to send
// another once max is reached. Cases meant to be refused count as soon as
// a server accepts one.
type turnLimit struct {
	base http.RoundTripper
	max  int

	mu       sync.Mutex
	accepted int
}

// errTurnCap is the transport error of a chat request the cap stopped.
var errTurnCap = errors.New("not sent: the chat-turn cap is spent")

func (l *turnLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	chat := req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/chat-messages")
	if chat && l.spent() {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errTurnCap
	}
	resp, err := l.base.RoundTrip(req)
	if err == nil && chat && resp.StatusCode == http.StatusOK {
		l.mu.Lock()
		l.accepted++
		l.mu.Unlock()
	}
	return resp, err
}

// spent reports whether no further chat request may be sent (false for a
// nil limit: no cap).
func (l *turnLimit) spent() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted >= l.max
}

// ErrDeclined is returned when Options.Confirm said no.
var ErrDeclined = errors.New("not confirmed; nothing was sent")

// UsageError is a problem with the options themselves.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// TransportError is a server that could not be reached or read at all.
type TransportError struct {
	Side string // "upstream" or "mock"
	Err  error
}

func (e *TransportError) Error() string { return e.Side + ": " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// StreamCaseName names the case that runs one real chat turn when the
// conformance table has none of its own.
const StreamCaseName = "stream/chat-turn"

// StreamQuery is the query of that turn.
const StreamQuery = "dify-mock verify: please answer with one short sentence."

// StreamCase is one streamed chat turn in a new conversation: its event
// sequence and each event type's fields are compared (the stream layout of
// the app's mode). inputs are the turn's `inputs`.
func StreamCase(inputs map[string]any) conformance.Case {
	if inputs == nil {
		inputs = map[string]any{}
	}
	in, _ := json.Marshal(inputs)
	q, _ := json.Marshal(StreamQuery)
	return conformance.Case{
		Name: StreamCaseName, Route: "POST /chat-messages", Class: conformance.ClassValid,
		Source: "api/controllers/service_api/app/completion.py ChatApi.post (response_mode streaming)",
		Request: conformance.Request{Method: http.MethodPost, Path: "/chat-messages",
			Header: map[string]string{"Content-Type": "application/json"},
			Body:   fmt.Sprintf(`{"query":%s,"inputs":%s,"user":"{user}","response_mode":"streaming"}`, q, in)},
		ChatTurn: true,
		Expect:   conformance.Expect{Status: http.StatusOK, ContentType: "text/event-stream"},
	}
}

// Cases is the default case list: the conformance table (which keeps its
// destructive cases last), with inputs as the `inputs` of its chat-turn
// cases, and StreamCase first should the table have no streamed turn.
func Cases(inputs map[string]any) []conformance.Case {
	table := conformance.Cases()
	streamed := false
	for i, c := range table {
		if !c.ChatTurn {
			continue
		}
		streamed = streamed || c.Expect.ContentType == "text/event-stream"
		if inputs != nil {
			table[i].Request.Body = withInputs(c.Request.Body, inputs)
		}
	}
	if streamed {
		return table
	}
	return append([]conformance.Case{StreamCase(inputs)}, table...)
}

// withInputs sets the `inputs` member of a JSON object body (placeholders
// sit inside strings, so the body is JSON as written).
func withInputs(body string, inputs map[string]any) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &m) != nil || m == nil {
		return body
	}
	in, err := json.Marshal(inputs)
	if err != nil {
		return body
	}
	m["inputs"] = in
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return string(out)
}

// Report is a run's result. It holds no key.
type Report struct {
	Upstream     string `json:"upstream"`
	Mock         string `json:"mock"`
	User         string `json:"user"`
	UpstreamMode string `json:"upstream_mode"`
	MockMode     string `json:"mock_mode"`
	// UpstreamApp and MockApp are the names (GET /info) of the apps the
	// keys reached: a dify-mock serving several apps answers each key with
	// its own (docs/mock/apps.md). MockKey says which key was sent to the
	// mock, never the key itself.
	UpstreamApp string `json:"upstream_app"`
	MockApp     string `json:"mock_app"`
	MockKey     string `json:"mock_key"`
	Cases       int    `json:"cases"`
	// Compared counts the cases both servers answered.
	Compared    int          `json:"compared"`
	Differences []Difference `json:"differences"`
	// Skipped are the cases skipped on both sides, with the reason.
	Skipped []Skip `json:"skipped,omitempty"`
	// Errors are cases without an answer from a server (timeouts,
	// refused connections): the comparison is incomplete.
	Errors []Difference `json:"errors,omitempty"`
	// Recorded are the cassettes --record-diff wrote; NotRecorded says
	// why a differing case has none.
	Recorded    []string `json:"recorded,omitempty"`
	NotRecorded []Skip   `json:"not_recorded,omitempty"`
	// Cleanup lists what could not be removed again.
	Cleanup     []string `json:"cleanup_errors,omitempty"`
	Interrupted bool     `json:"interrupted,omitempty"`
	// Error says why the run stopped before comparing every case (a
	// server that could not be reached or is not the Service API, an
	// interrupt); "" when it ran to the end.
	Error string `json:"error,omitempty"`
}

// Difference is one way the mock answered a case differently from the
// upstream.
type Difference struct {
	Case   string `json:"case"`
	Route  string `json:"route"`
	Class  string `json:"class"`
	Aspect string `json:"aspect"`
	Path   string `json:"path,omitempty"`
	// Upstream and Mock are what each side showed ("" = nothing).
	Upstream string `json:"upstream"`
	Mock     string `json:"mock"`
}

// Skip is a case and a reason.
type Skip struct {
	Case   string `json:"case"`
	Reason string `json:"reason"`
}

// Aspects of a Difference besides conformance.Diff's (status,
// content_type, code, message, params, field, location).
const (
	AspectError       = "error"        // one side gave no answer
	AspectSkipped     = "skipped"      // a case ran on one side only
	AspectEvents      = "events"       // the event sequence, repeats folded
	AspectEventFields = "event_fields" // one event type's fields
	AspectHeader      = "header"       // a header clients read
)

// Run verifies the mock against the upstream. The report is returned also
// when err is not nil, as far as the run got (an interrupted run has
// Interrupted set and has cleaned up). Errors are *UsageError,
// *TransportError, ErrDeclined or ctx's error.
func Run(ctx context.Context, opts Options) (_ *Report, err error) {
	v, err := newRun(opts)
	if err != nil {
		return nil, err
	}
	rep := v.rep
	// Runs last, after both cleanups: no key in anything reported.
	defer rep.redact(v.opts.UpstreamKey, v.mockKey)
	// Runs before the redaction: a report of a run that stopped says why.
	defer func() {
		if err != nil {
			rep.Error = err.Error()
		}
	}()

	upRun := newRunner(v.opts.Upstream, v.opts.UpstreamKey, v.user, v.upCap, v.timeout, v.opts, v.logf, "upstream")
	defer cleanup(upRun, rep, "upstream")
	if err := v.probeUpstream(ctx, upRun); err != nil {
		return rep, err
	}
	if v.mockURL == "" {
		stop, err := v.startBuiltInMock(ctx)
		if err != nil {
			return rep, err
		}
		defer stop()
	}
	mockCap := &capturing{base: newMockTransport()}
	mockRun := newRunner(v.mockURL, v.mockKey, v.user, mockCap, v.timeout, v.opts, v.logf, "mock")
	defer cleanup(mockRun, rep, "mock")
	if err := mockRun.Probe(ctx); err != nil {
		return rep, sideError(ctx, rep, "mock", err)
	}
	rep.MockMode, rep.MockApp = mockRun.Mode(), mockRun.AppName()
	v.logf("the mock answered as app %q (key: %s)", rep.MockApp, rep.MockKey)

	differing := v.playCases(ctx, upRun, mockRun, mockCap)
	if err := ctx.Err(); err != nil {
		rep.Interrupted = true
		return rep, err
	}
	if v.opts.RecordDiff != "" {
		recordDiff(rep, v.opts, v.up, v.upCap.since(0), differing)
	}
	return rep, nil
}

// run is one verification's settings and state, checked and built by
// newRun before the first request, and used by Run's steps.
type run struct {
	opts   Options // Upstream and Mock canonical
	up     *url.URL
	policy *upstream.Upstream
	logf   func(string, ...any)
	user   string
	cases  []conformance.Case
	rep    *Report
	// mockURL is "" for the built-in mock until it runs; mockKey is the
	// key both the mock and the redaction use.
	mockURL, mockKey string
	timeout          time.Duration
	limit            *turnLimit // nil without a chat-turn cap
	upTransport      http.RoundTripper
	upCap            *capturing
}

// newRun checks opts, asks Options.Confirm with the plan, and builds the
// report and the upstream's transport. Nothing is sent yet.
func newRun(opts Options) (*run, error) {
	up, err := checkURL(opts.Upstream, "upstream")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(opts.UpstreamKey) == "" {
		return nil, &UsageError{"no upstream API key"}
	}
	policy, err := upstream.New(upstream.Config{URL: up.String(), Key: opts.UpstreamKey, Base: opts.Transport})
	if err != nil {
		return nil, &UsageError{err.Error()}
	}
	opts.Upstream = up.String()
	mockLabel := "built-in"
	if opts.Mock != "" {
		mu, err := checkURL(opts.Mock, "mock")
		if err != nil {
			return nil, err
		}
		opts.Mock, mockLabel = mu.String(), mu.Redacted()
	}
	v := &run{opts: opts, up: up, policy: policy, logf: opts.Logf, user: opts.User, cases: opts.Cases}
	if v.logf == nil {
		v.logf = func(string, ...any) {}
	}
	if v.user == "" {
		v.user = UserPrefix + randomHex(6)
	}
	if v.cases == nil {
		v.cases = Cases(opts.Inputs)
	}
	plan := v.plan(mockLabel)
	if opts.Confirm != nil && !opts.Confirm(plan) {
		return nil, ErrDeclined
	}
	v.newReport(plan)
	v.timeout = opts.Timeout
	if v.timeout <= 0 {
		v.timeout = conformance.Timeout
	}
	v.upTransport = policy.Transport()
	// The hard cap: whatever the cases expect, the upstream never gets a
	// chat request once it has accepted MaxChatTurns of them.
	if opts.MaxChatTurns >= 0 {
		v.limit = &turnLimit{base: v.upTransport, max: opts.MaxChatTurns}
		v.upTransport = v.limit
	}
	v.upCap = &capturing{base: v.upTransport}
	return v, nil
}

// plan is what Options.Confirm is shown.
func (v *run) plan(mockLabel string) Plan {
	plan := Plan{Upstream: v.up.Redacted(), Mock: mockLabel, User: v.user, Cases: len(v.cases), ChatTurns: conformance.ChatTurns(v.cases)}
	plan.MaxChatTurns = -1
	if v.opts.MaxChatTurns >= 0 {
		plan.ChatTurns = min(plan.ChatTurns, v.opts.MaxChatTurns)
		plan.MaxChatTurns = v.opts.MaxChatTurns
	}
	for _, c := range v.cases {
		if !c.ChatTurn && isChatPost(c) {
			plan.ChatRoutes++
		}
	}
	return plan
}

// newReport starts the report and picks the mock's key: --mock-key's, else
// a random one (the built-in mock is started with it).
func (v *run) newReport(plan Plan) {
	rep := &Report{Upstream: plan.Upstream, Mock: plan.Mock, User: v.user, Cases: len(v.cases), Differences: []Difference{}}
	v.mockURL, v.mockKey = v.opts.Mock, v.opts.MockKey
	rep.MockKey = v.opts.MockKeyName
	if v.mockKey == "" {
		v.mockKey = "app-" + randomHex(12)
		rep.MockKey = "a random app-… key"
	} else if rep.MockKey == "" {
		rep.MockKey = "--mock-key"
	}
	v.rep = rep
}

// probeUpstream asks the upstream for its app and warns when it is not an
// Agent app.
func (v *run) probeUpstream(ctx context.Context, upRun *conformance.Runner) error {
	if err := upRun.Probe(ctx); err != nil {
		return sideError(ctx, v.rep, "upstream", err)
	}
	v.rep.UpstreamMode, v.rep.UpstreamApp = upRun.Mode(), upRun.AppName()
	if v.rep.UpstreamMode != dify.ModeAgent && v.rep.UpstreamMode != dify.ModeAgentChat {
		v.logf("warning: the upstream app's mode is %q, not an Agent app (agent or agent-chat); expect differences that come from the app type", v.rep.UpstreamMode)
	}
	return nil
}

// startBuiltInMock mirrors the upstream app into a mock of the same mode
// and starts it; Run stops it with stop.
func (v *run) startBuiltInMock(ctx context.Context) (stop func(), err error) {
	mode := ""
	if v.rep.UpstreamMode == dify.ModeAgent || v.rep.UpstreamMode == dify.ModeAgentChat {
		mode = v.rep.UpstreamMode
	}
	set, err := mirrorApp(ctx, v.opts.Cassettes, upstream.NoRedirectClient(v.upTransport, v.timeout), v.policy)
	if err != nil {
		return nil, sideError(ctx, v.rep, "upstream", err)
	}
	stop, base, err := startMock(set, mode, v.mockKey)
	if err != nil {
		return nil, err
	}
	v.mockURL = base
	v.logf("built-in mock on %s", base)
	return stop, nil
}

// playCases plays every case on both sides and compares them, until ctx
// ends; it returns the cases that differ, for Options.RecordDiff.
func (v *run) playCases(ctx context.Context, upRun, mockRun *conformance.Runner, mockCap *capturing) []pending {
	rep := v.rep
	var differing []pending
	for _, c := range v.cases {
		if ctx.Err() != nil {
			break
		}
		if why := v.skip(c); why != "" {
			rep.Skipped = append(rep.Skipped, Skip{c.Name, why})
			v.logf("%-60s skipped: %s", c.Name, why)
			continue
		}
		uo, uex := play(ctx, upRun, v.upCap, c, v.opts.MaxChatTurns)
		mo, mex := play(ctx, mockRun, mockCap, c, v.opts.MaxChatTurns)
		if ctx.Err() != nil {
			break // an answer cut by the interrupt is no evidence
		}
		ds := compare(c, uo, mo, uex, mex)
		switch {
		case uo.Skipped != "" && mo.Skipped != "":
			rep.Skipped = append(rep.Skipped, Skip{c.Name, uo.Skipped})
		case uo.Err != "" || mo.Err != "":
			rep.Errors = append(rep.Errors, ds...)
		default:
			if uo.Skipped == "" && mo.Skipped == "" {
				rep.Compared++
			}
			rep.Differences = append(rep.Differences, ds...)
			if len(ds) > 0 {
				differing = append(differing, pending{c, uex, ds})
			}
		}
		v.logf("%-60s %d difference(s)", c.Name, len(ds))
	}
	return differing
}

// skip is why a case is not sent ("" = it is).
func (v *run) skip(c conformance.Case) string {
	if c.OtherUser != "" {
		// Every request of a run acts as the run's end user: a case
		// that would make the app create another end user is not sent.
		return "acts as an end user other than the run's (" + c.OtherUser + ")"
	}
	if isChatPost(c) && v.limit.spent() {
		return fmt.Sprintf("the chat-turn cap (%d) is spent; no further chat request is sent", v.opts.MaxChatTurns)
	}
	return ""
}

// pending is a differing case and its live exchange, for RecordDiff.
type pending struct {
	c  conformance.Case
	ex *exchange
	ds []Difference
}

// checkURL parses a Service API base URL as `dify-mock record` does
// (upstream.ParseBase: an empty path means /v1, no credentials, query or
// fragment).
func checkURL(raw, what string) (*url.URL, error) {
	u, err := upstream.ParseBase(raw)
	if err != nil {
		return nil, &UsageError{fmt.Sprintf("--%s: %v", what, err)}
	}
	return u, nil
}

// newMockTransport carries the requests to the mock under test (its key is
// a throwaway, but the client follows the same no-redirect rule).
func newMockTransport() http.RoundTripper {
	t := upstream.NewBaseTransport()
	t.MaxIdleConnsPerHost = 4
	return t
}

func newRunner(base, key, user string, tr http.RoundTripper, timeout time.Duration, opts Options, logf func(string, ...any), side string) *conformance.Runner {
	turns := opts.MaxChatTurns
	if turns < 0 {
		turns = -1
	}
	return &conformance.Runner{
		Target:       conformance.Target{BaseURL: base, Key: key, Client: upstream.NoRedirectClient(tr, timeout)},
		User:         user,
		MaxChatTurns: turns, // 0 never reaches the runner's default: play skips every costly case
		Inputs:       opts.Inputs,
		Logf:         func(f string, a ...any) { logf(side+": "+f, a...) },
	}
}

func sideError(ctx context.Context, rep *Report, side string, err error) error {
	if ctx.Err() != nil {
		rep.Interrupted = true
		return ctx.Err()
	}
	return &TransportError{Side: side, Err: err}
}

// cleanup removes what the run created on one side, on a fresh context
// (the runner's Cleanup), and notes what it could not remove.
func cleanup(r *conformance.Runner, rep *Report, side string) {
	for _, err := range r.Cleanup() {
		rep.Cleanup = append(rep.Cleanup, side+": "+err.Error())
	}
}

// play runs one case on one side and returns its observation and the
// case's own exchange (fixture requests come before it).
func play(ctx context.Context, r *conformance.Runner, c *capturing, cs conformance.Case, maxTurns int) (conformance.Observed, *exchange) {
	if maxTurns == 0 && costsTurn(cs) {
		return conformance.Observed{Case: cs.Name, Route: cs.Route, Class: cs.Class, Skipped: "chat-turn cap is 0"}, nil
	}
	n := c.count()
	o := r.RunCase(ctx, cs)
	if o.Skipped != "" || o.Err != "" {
		return o, nil
	}
	list := c.since(n)
	if len(list) == 0 {
		return o, nil
	}
	return o, list[len(list)-1]
}

// isChatPost reports whether c sends POST /chat-messages (which runs a
// turn whenever the server accepts it).
func isChatPost(c conformance.Case) bool {
	return c.Request.Method == http.MethodPost && strings.SplitN(c.Request.Path, "?", 2)[0] == "/chat-messages"
}

func costsTurn(c conformance.Case) bool {
	if c.ChatTurn {
		return true
	}
	for _, f := range c.Needs {
		if f.ChatCost() {
			return true
		}
	}
	return false
}

func isLiveTurn(ex *exchange) bool {
	return ex.method == http.MethodPost && strings.HasSuffix(strings.SplitN(ex.url, "?", 2)[0], "/chat-messages") &&
		ex.status == http.StatusOK && ex.isStream() && len(ex.frames()) > 0
}

// startMock serves a mockserver on a loopback port.
func startMock(set *cassette.Set, mode, key string) (stop func(), base string, err error) {
	srv, err := mockserver.New(mockserver.Config{Cassettes: set, Mode: mode, APIKeys: []string{key}})
	if err != nil {
		return nil, "", &UsageError{"built-in mock: " + err.Error()}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", &TransportError{Side: "mock", Err: err}
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	stop = func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = hs.Shutdown(sctx)
		hs.Close()
	}
	return stop, "http://" + ln.Addr().String() + "/v1", nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
