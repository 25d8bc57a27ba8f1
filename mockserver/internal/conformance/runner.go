package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Target is the server a run talks to.
type Target struct {
	// BaseURL is the Service API base, e.g. "https://dify.example.com/v1"
	// or an httptest server's URL + "/v1". A trailing slash is ignored.
	BaseURL string
	// Key is the app key ("app-…"). It is sent in Authorization headers and
	// never written into an Observed.
	Key string
	// Client is the HTTP client; nil = a client with Timeout that does not
	// follow redirects. A given client should not follow redirects either,
	// or redirect cases report the target's answer instead.
	Client *http.Client
}

// Runner plays cases against a Target.
type Runner struct {
	Target Target
	// User is the dedicated end-user string every request runs as; "" =
	// "dify-mock-conformance-<random>". Nothing of other users is touched.
	User string
	// MaxChatTurns caps the requests that may run a chat turn (fixtures
	// included); cases past the cap are skipped. 0 = DefaultMaxChatTurns;
	// negative = no cap.
	MaxChatTurns int
	// Inputs are sent as `inputs` with the fixture's chat turn (apps whose
	// form has required fields need them). nil = {}.
	Inputs map[string]any
	// Logf, when set, receives progress lines (never the key).
	Logf func(format string, args ...any)

	client       *http.Client
	base         string
	basePrefix   string
	probed       bool
	mode         string
	appName      string
	features     map[string]bool
	values       map[string]string // placeholder -> value
	fixtureErr   map[Fixture]error
	turns        int
	toDelete     []string // conversation ids created by the run
	deletedConvs map[string]bool
}

// DefaultMaxChatTurns is the chat-turn cap when Runner.MaxChatTurns is 0.
const DefaultMaxChatTurns = 3

// Mode is the app mode read from GET /info (after Run or Probe).
func (r *Runner) Mode() string { return r.mode }

// AppName is the app's name read from GET /info (after Run or Probe):
// which app the key reached.
func (r *Runner) AppName() string { return r.appName }

// ChatTurns counts the requests of cases that may run a chat turn, plus
// the fixture turn if any case needs it: what a run would spend at most.
func ChatTurns(cases []Case) int {
	n, fixture := 0, false
	for _, c := range cases {
		if c.ChatTurn {
			n++
		}
		for _, f := range c.Needs {
			fixture = fixture || f.ChatCost()
		}
	}
	if fixture {
		n++
	}
	return n
}

func (r *Runner) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

func (r *Runner) init() error {
	if r.client != nil {
		return nil
	}
	base := strings.TrimRight(r.Target.BaseURL, "/")
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("base URL %q: want an absolute http(s) URL ending in /v1", r.Target.BaseURL)
	}
	r.base = base
	r.basePrefix = strings.TrimSuffix(u.Path, "/v1")
	r.client = r.Target.Client
	if r.client == nil {
		r.client = &http.Client{
			Timeout:       Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if r.User == "" {
		r.User = "dify-mock-conformance-" + randomHex(6)
	}
	r.values = map[string]string{PhUser: r.User, PhUserNumber: userNumber(r.User), PhUnknownUUID: randomUUID()}
	r.fixtureErr = map[Fixture]error{}
	r.deletedConvs = map[string]bool{}
	return nil
}

// userNumber is the run's number-typed user: 18 digits taken from a hash
// of user, so a run never sends a number some app already has as an
// end-user id (customer ids such as 7), and both servers of a verify run
// get the same one.
func userNumber(user string) string {
	sum := sha256.Sum256([]byte("user-number:" + user))
	n := binary.BigEndian.Uint64(sum[:8])%9e17 + 1e17
	return strconv.FormatUint(n, 10)
}

// Probe reads the app's mode (GET /info) and feature switches
// (GET /parameters); Run calls it first.
func (r *Runner) Probe(ctx context.Context) error {
	if err := r.init(); err != nil {
		return err
	}
	if r.probed {
		return nil
	}
	var info struct {
		Mode string `json:"mode"`
		Name string `json:"name"`
	}
	if err := r.getJSON(ctx, "/info", &info); err != nil {
		return err
	}
	var params map[string]json.RawMessage
	if err := r.getJSON(ctx, "/parameters", &params); err != nil {
		return err
	}
	r.features = map[string]bool{}
	for name, raw := range params {
		var f struct {
			Enabled *bool `json:"enabled"`
		}
		if json.Unmarshal(raw, &f) == nil && f.Enabled != nil {
			r.features[name] = *f.Enabled
		}
	}
	r.mode, r.appName, r.probed = info.Mode, info.Name, true
	return nil
}

// send makes one request of the run's own (a probe, a fixture, the
// cleanup) to the target with its key; the key never reaches the error.
// contentType is left out when empty.
func (r *Runner) send(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, body)
	if err != nil {
		return nil, scrubErr(err, r.Target.Key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+r.Target.Key)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, scrubErr(err, r.Target.Key)
	}
	return resp, nil
}

func (r *Runner) getJSON(ctx context.Context, path string, out any) error {
	resp, err := r.send(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 500 && !looksJSON(resp.Header.Get("Content-Type"), data) {
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if mt == "" {
			mt = "no content type"
		}
		return fmt.Errorf("GET %s: status %d with %s, not JSON: this is not the Service API (its base URL ends in /v1, e.g. https://dify.example.com/v1)", path, resp.StatusCode, mt)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, excerpt(data, 200))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("GET %s: %v", path, err)
	}
	return nil
}

// location is a redirect target as reports show it: the path and query
// (less the base URL's prefix) when it stays on the server asked, so two
// servers' answers compare; the whole URL when it leads to another origin,
// which must not look local.
func (r *Runner) location(req *http.Request, loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return loc
	}
	if req != nil && req.URL != nil {
		u = req.URL.ResolveReference(u)
		if u.Scheme != req.URL.Scheme || u.Host != req.URL.Host {
			return u.Redacted()
		}
	}
	out := strings.TrimPrefix(u.EscapedPath(), r.basePrefix)
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out
}

// looksJSON reports whether an answer is JSON, as the Service API's always
// are (errors included): a web page (the console, a proxy's 404 page) is
// not.
func looksJSON(contentType string, data []byte) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/json" || strings.HasSuffix(mt, "+json") {
		return true
	}
	t := bytes.TrimSpace(data)
	return mt == "" && len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// Run plays the cases in order and returns one Observed per case, in the
// same order. It always cleans up what it created (conversations), also
// when ctx is cancelled part-way: cleanup runs on a fresh context.
func (r *Runner) Run(ctx context.Context, cases []Case) ([]Observed, error) {
	if err := r.Probe(ctx); err != nil {
		return nil, err
	}
	defer r.Cleanup()
	out := make([]Observed, 0, len(cases))
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out = append(out, r.RunCase(ctx, c))
	}
	return out, nil
}

// RunCase plays one case (after Probe). Fixtures are made on first need.
func (r *Runner) RunCase(ctx context.Context, c Case) Observed {
	o := Observed{Case: c.Name, Route: c.Route, Class: c.Class}
	if why := r.unmet(c.Requires); why != "" {
		o.Skipped = why
		return o
	}
	for _, f := range c.Needs {
		if err := r.fixture(ctx, f); err != nil {
			o.Skipped = fmt.Sprintf("fixture %s: %v", f, err)
			return o
		}
	}
	if c.ChatTurn {
		if !r.spendTurn() {
			o.Skipped = "chat-turn cap reached"
			return o
		}
	}
	req, err := r.build(ctx, c.Request)
	if err != nil {
		o.Err = err.Error()
		return o
	}
	resp, err := r.client.Do(req)
	if err != nil {
		o.Err = scrubErr(err, r.Target.Key).Error()
		return o
	}
	defer resp.Body.Close()
	r.observe(resp, &o, c.Expect)
	return o
}

func (r *Runner) unmet(q Requirements) string {
	if len(q.Modes) > 0 {
		ok := false
		for _, m := range q.Modes {
			ok = ok || m == r.mode
		}
		if !ok {
			return fmt.Sprintf("app mode %q (case needs %v)", r.mode, q.Modes)
		}
	}
	for name, want := range q.Features {
		if r.features[name] != want {
			return fmt.Sprintf("app feature %s.enabled is %v (case needs %v)", name, r.features[name], want)
		}
	}
	return ""
}

func (r *Runner) spendTurn() bool {
	limit := r.MaxChatTurns
	if limit == 0 {
		limit = DefaultMaxChatTurns
	}
	if limit > 0 && r.turns >= limit {
		return false
	}
	r.turns++
	return true
}

func (r *Runner) fill(s string) string {
	for ph, v := range r.values {
		s = strings.ReplaceAll(s, ph, v)
	}
	return strings.ReplaceAll(s, PhKey, r.Target.Key)
}

// unfill puts placeholders back into an observed text; the key, should a
// server ever echo it, becomes {key}.
func (r *Runner) unfill(s string) string {
	if r.Target.Key != "" {
		s = strings.ReplaceAll(s, r.Target.Key, PhKey)
	}
	for ph, v := range r.values {
		if v != "" {
			s = strings.ReplaceAll(s, v, ph)
		}
	}
	return s
}

func (r *Runner) build(ctx context.Context, cr Request) (*http.Request, error) {
	var body io.Reader
	ctype := ""
	if cr.Multipart != nil {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, p := range cr.Multipart {
			h := textproto.MIMEHeader{}
			cd := fmt.Sprintf("form-data; name=%q", p.Field)
			if p.Filename != "" || (!p.NoFilename && p.ContentType != "") {
				cd += fmt.Sprintf("; filename=%q", r.fill(p.Filename))
			}
			h.Set("Content-Disposition", cd)
			if p.ContentType != "" {
				h.Set("Content-Type", p.ContentType)
			}
			w, err := mw.CreatePart(h)
			if err != nil {
				return nil, err
			}
			_, _ = io.WriteString(w, r.fill(p.Data))
			if pad := p.Size - int64(len(p.Data)); pad > 0 {
				if _, err := io.CopyN(w, zeroReader{}, pad); err != nil {
					return nil, err
				}
			}
		}
		_ = mw.Close()
		body, ctype = &buf, mw.FormDataContentType()
	} else if cr.Body != "" {
		body = strings.NewReader(r.fill(cr.Body))
	}
	req, err := http.NewRequestWithContext(ctx, cr.Method, r.base+r.fill(cr.Path), body)
	if err != nil {
		return nil, err
	}
	hasAuth := false
	for k, v := range cr.Header {
		req.Header.Set(k, r.fill(v))
		hasAuth = hasAuth || strings.EqualFold(k, "Authorization")
	}
	if ctype != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", ctype)
	}
	if !cr.NoAuth && !hasAuth {
		req.Header.Set("Authorization", "Bearer "+r.Target.Key)
	}
	return req, nil
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// observe reads an answer into o. Streams are read to their end (or
// Timeout) for the event sequence; conversations they create are
// remembered for cleanup.
func (r *Runner) observe(resp *http.Response, o *Observed, want Expect) {
	o.Status = resp.StatusCode
	o.ContentType, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if loc := resp.Header.Get("Location"); loc != "" {
		o.Location = r.location(resp.Request, loc)
	}
	if o.ContentType == "text/event-stream" {
		events, convID := readEvents(resp.Body)
		o.Events = events
		r.remember(convID)
		return
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	o.Body = r.unfill(excerpt(data, 2048))
	if o.ContentType != "application/json" {
		return
	}
	o.Shape = ShapeOf(data)
	o.Values = ValuesAt(data, want.Values)
	o.Formats = FormatsAt(data, want.Formats)
	var env struct {
		Code    *string         `json:"code"`
		Message *string         `json:"message"`
		Status  *int            `json:"status"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &env) == nil && env.Code != nil && env.Message != nil && env.Status != nil {
		e := &Envelope{Code: *env.Code, Message: NormalizeMessage(r.unfill(*env.Message)), Status: *env.Status}
		if len(env.Params) > 0 {
			var p string
			if json.Unmarshal(env.Params, &p) == nil {
				e.Params = &p
			}
		}
		o.Envelope = e
	}
	// A JSON chat answer (blocking mode elsewhere) may create one too.
	var conv struct {
		ConversationID string `json:"conversation_id"`
	}
	if json.Unmarshal(data, &conv) == nil && strings.HasPrefix(o.Route, "POST /chat-messages") {
		r.remember(conv.ConversationID)
	}
}

func (r *Runner) remember(convID string) {
	if convID == "" || convID == r.values[PhConversationID] {
		return
	}
	for _, id := range r.toDelete {
		if id == convID {
			return
		}
	}
	r.toDelete = append(r.toDelete, convID)
}

// readEvents reads SSE frames: the event names (pings left out) and the
// first conversation_id seen.
func readEvents(body io.Reader) (events []string, convID string) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		var f struct {
			Event          string `json:"event"`
			ConversationID string `json:"conversation_id"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &f) != nil {
			events = append(events, "(unparsable)")
			continue
		}
		if f.Event == "ping" {
			continue
		}
		events = append(events, f.Event)
		if convID == "" {
			convID = f.ConversationID
		}
	}
	return events, convID
}

// fixture makes f (once per run).
func (r *Runner) fixture(ctx context.Context, f Fixture) error {
	if err, tried := r.fixtureErr[f]; tried {
		return err
	}
	var err error
	switch f {
	case FixtureConversation, FixtureMessage:
		err = r.chatFixture(ctx)
		r.fixtureErr[FixtureConversation], r.fixtureErr[FixtureMessage] = err, err
	case FixtureUpload, FixtureEndUser:
		err = r.uploadFixture(ctx)
		r.fixtureErr[FixtureUpload], r.fixtureErr[FixtureEndUser] = err, err
	case FixtureAnnotation:
		err = r.annotationFixture(ctx)
		r.fixtureErr[f] = err
	default:
		err = fmt.Errorf("unknown fixture %q", f)
		r.fixtureErr[f] = err
	}
	return err
}

// FixtureStrayInput is an `inputs` key the fixture's chat turn sends that no
// app's form has; Dify drops it (BaseAppGenerator._prepare_user_inputs).
const FixtureStrayInput = "dify_mock_conformance_not_in_form"

// FixtureQuery is the query of the fixture's chat turn.
const FixtureQuery = "Conformance check: please answer with one short sentence."

func (r *Runner) chatFixture(ctx context.Context) error {
	if !r.spendTurn() {
		return errors.New("chat-turn cap reached")
	}
	// The stray key lets the table observe that Dify stores only the
	// form's variables (extra/*-inputs-form-keys-only).
	inputs := map[string]any{FixtureStrayInput: "dropped"}
	for k, v := range r.Inputs {
		inputs[k] = v
	}
	body, _ := json.Marshal(map[string]any{"query": FixtureQuery, "inputs": inputs, "user": r.User, "response_mode": "streaming"})
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	resp, err := r.send(ctx, http.MethodPost, "/chat-messages", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("chat turn: status %d: %s", resp.StatusCode, excerpt(data, 300))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var convID, msgID, last string
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var f struct {
			Event          string `json:"event"`
			ConversationID string `json:"conversation_id"`
			MessageID      string `json:"message_id"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &f) != nil {
			continue
		}
		if convID == "" {
			convID, msgID = f.ConversationID, f.MessageID
		}
		last = f.Event
	}
	if convID == "" {
		return errors.New("chat turn: the stream named no conversation")
	}
	r.values[PhConversationID], r.values[PhMessageID] = convID, msgID
	if last != "message_end" {
		r.toDelete = append(r.toDelete, convID)
		return fmt.Errorf("chat turn ended with %q, not message_end", last)
	}
	r.logf("fixture: conversation %s, message %s", convID, msgID)
	return nil
}

func (r *Runner) uploadFixture(ctx context.Context) error {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("user", r.User)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="conformance.txt"`)
	h.Set("Content-Type", "text/plain")
	w, _ := mw.CreatePart(h)
	_, _ = io.WriteString(w, "dify-mock conformance fixture\n")
	_ = mw.Close()
	resp, err := r.send(ctx, http.MethodPost, "/files/upload", mw.FormDataContentType(), &buf)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("upload: status %d: %s", resp.StatusCode, excerpt(data, 300))
	}
	var up struct {
		ID        string  `json:"id"`
		CreatedBy *string `json:"created_by"`
	}
	if err := json.Unmarshal(data, &up); err != nil || up.ID == "" {
		return fmt.Errorf("upload: unreadable answer: %s", excerpt(data, 300))
	}
	r.values[PhUploadFileID] = up.ID
	if up.CreatedBy != nil {
		r.values[PhEndUserID] = *up.CreatedBy
	}
	return nil
}

// FixtureAnnotationQuestion is the question of the annotation fixture
// (unlikely to match any real user's query should reply be switched on).
const FixtureAnnotationQuestion = "dify-mock conformance fixture annotation"

func (r *Runner) annotationFixture(ctx context.Context) error {
	body, _ := json.Marshal(map[string]string{"question": FixtureAnnotationQuestion, "answer": "conformance"})
	resp, err := r.send(ctx, http.MethodPost, "/apps/annotations", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("create annotation: status %d: %s", resp.StatusCode, excerpt(data, 300))
	}
	var a struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &a); err != nil || a.ID == "" {
		return fmt.Errorf("create annotation: unreadable answer: %s", excerpt(data, 300))
	}
	r.values[PhAnnotationID] = a.ID
	r.logf("fixture: annotation %s", a.ID)
	return nil
}

// deleteAnnotation removes the annotation fixture; 404 means a case or
// someone else already deleted it.
func (r *Runner) deleteAnnotation(ctx context.Context, id string) error {
	resp, err := r.send(ctx, http.MethodDelete, "/apps/annotations/"+url.PathEscape(id), "", nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("delete annotation %s: status %d", id, resp.StatusCode)
	}
	r.logf("cleanup: deleted annotation %s", id)
	return nil
}

// Cleanup deletes the conversations the run created (the fixture's and any
// a chat case started) and the annotation fixture. It uses its own 30-second context, so it also works
// after the run's context was cancelled (Ctrl-C). Safe to call twice.
func (r *Runner) Cleanup() []error {
	if r.client == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := append([]string(nil), r.toDelete...)
	if c := r.values[PhConversationID]; c != "" {
		ids = append(ids, c)
	}
	var errs []error
	if id := r.values[PhAnnotationID]; id != "" {
		if err := r.deleteAnnotation(ctx, id); err != nil {
			errs = append(errs, err)
		} else {
			delete(r.values, PhAnnotationID)
		}
	}
	for _, id := range ids {
		if r.deletedConvs[id] {
			continue
		}
		body, _ := json.Marshal(map[string]string{"user": r.User})
		resp, err := r.send(ctx, http.MethodDelete, "/conversations/"+url.PathEscape(id), "application/json", bytes.NewReader(body))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		// 404: already gone (a case may have deleted it).
		if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotFound {
			errs = append(errs, fmt.Errorf("delete conversation %s: status %d", id, resp.StatusCode))
			continue
		}
		r.deletedConvs[id] = true
		r.logf("cleanup: deleted conversation %s", id)
	}
	return errs
}

func excerpt(data []byte, n int) string {
	if len(data) > n {
		return string(data[:n]) + "…"
	}
	return string(data)
}

// scrubErr keeps the key out of transport errors (URLs carry no key, but a
// proxy error might quote a header).
func scrubErr(err error, key string) error {
	if key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, PhKey))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
