// Package record is dify-mock's record (proxy) mode: an http.Handler that
// forwards every request to a real Dify with the recorder's own API key,
// answers the client with the real response while it streams, and writes
// what it saw as cassettes (see mockserver/cassette and
// docs/mock/recording.md).
//
// Chat turns (POST /chat-messages) are proxied frame by frame: each SSE
// frame is written and flushed to the client as soon as it arrives, and its
// exact bytes and offset from the request start are kept. Every other
// request goes through go-vcr's recorder. The app description (docs/api §13–§16)
// is fetched once at start and written as app.yaml.
//
// Secrets never reach a file: credentials headers are dropped and bodies are
// scrubbed at capture, and every cassette is scanned again, as the exact
// bytes about to be written, before it is saved; a cassette in which a
// secret survives is refused (SaveRefusedError) and nothing is written.
package record

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"github.com/dnaeon/go-vcr/v2/recorder"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/upstream"
)

// Request body limits: chat bodies are small JSON; uploads go up to Dify's
// largest per-type limit (video, 100 MB; docs/api §9.1).
const (
	maxChatBody  = 10 << 20
	maxOtherBody = 128 << 20
	maxJSONReply = 64 << 20
)

// Config configures a Recorder.
type Config struct {
	// Upstream is the Dify API base URL as clients use it, e.g.
	// https://api.dify.ai/v1. An empty path means "/v1".
	Upstream string
	// UpstreamKey is the app API key sent upstream. Clients never see it.
	UpstreamKey string
	// Dir is the cassette folder written to.
	Dir string
	// Rules are extra redactions applied after the built-in scrubbing.
	Rules []Rule
	// Transport carries upstream requests under the outbound policy
	// (mockserver/internal/upstream: the upstream's origin only, no redirects,
	// bounded answers); nil means upstream.NewBaseTransport.
	Transport http.RoundTripper
	// Logf receives one line per notable event; nil discards. Lines never
	// contain the upstream key.
	Logf func(format string, args ...any)
	// CORSOrigins are the browser origins that get CORS grants, in
	// --cors-origin's form (netguard.ParseOrigins; "*" is refused: the
	// recorder spends a real key); none by default (guard.go).
	CORSOrigins []string
	// AllowedHosts are Host names accepted besides loopback names and IP
	// literals (guard.go).
	AllowedHosts []string
	// KeepUploadContents stores multipart bodies (uploads, speech-to-text
	// audio) byte for byte, reading each whole into memory first. By
	// default they stream to the upstream and the cassette keeps only each
	// file's name, size, content type and sha256 (upload.go).
	KeepUploadContents bool
	// MaxTurns bounds the chat turns Forward saves in this run (0 = no
	// bound, negative = none). Turns past it are still forwarded, only not
	// saved.
	MaxTurns int
	// SkipRecordedQueries makes Forward leave a new conversation unsaved
	// when a chat cassette in Dir already has a turn with the same query
	// (SameQuery): a folder that several mocks grow keeps one answer per
	// question.
	SkipRecordedQueries bool
	// MaxBody bounds one upstream answer's body (0 = upstream.DefaultMaxBody,
	// 64 MiB); a live turn past it is cut after its last whole frame.
	MaxBody int64
	// BeforeSave, when set, runs before each save Forward left pending
	// (Save), with the cassette's name: tests use it to make a save
	// observably slow.
	BeforeSave func(cassette string)
}

// Recorder is the record-mode http.Handler.
type Recorder struct {
	up        *upstream.Upstream
	host      string // upstream host for provenance
	dir       string
	key       string
	transport http.RoundTripper
	scrub     *scrubber
	logf      func(string, ...any)
	mode      string // app mode from GET /info

	cors         netguard.Origins // Config.CORSOrigins
	access       netguard.Policy  // Host and Origin policy (guard.go)
	keepUploads  bool
	maxTurns     int   // Config.MaxTurns
	skipRecorded bool  // Config.SkipRecordedQueries
	savedTurns   int   // turns Forward saved (under mu)
	maxUpload    int64 // streamed upload body limit (maxOtherBody; lowered by tests)
	beforeSave   func(string)

	mu     sync.Mutex
	closed bool
	// The session indexes below (reserved … lastByUser) point at open
	// sessions only, and at most maxOpen sessions are open (bound.go): a
	// long-running hybrid server holds a bounded number whatever it
	// forwards.
	open           *list.List          // open sessions, most recently used first
	maxOpen        int                 // maxOpenSessions; lowered by tests
	reserved       map[string]*session // chosen cassette names
	byRequested    map[string]*session // X-Dify-Mock-Cassette values
	byConversation map[string]*session
	byTask         map[string]*session
	byMessage      map[string]*session
	lastByUser     map[string]*session
	pending        map[string][]*vcr.Interaction // by user, not yet claimed by a session
	pendingCount   int                           // interactions in pending, at most maxPending
	maxPending     int                           // maxPendingInteractions; lowered by tests
	droppedPending int                           // interactions not kept: pending was full
	refused        []error                       // the first maxRefusalsKept refused saves
	moreRefused    int                           // refused saves past those
	written        map[string]bool               // one entry per file, bounded by the turns saved
	saveTail       chan struct{}                 // closed when the last pending save ends (Save)
}

// New checks cfg, fetches the app description from the upstream and writes
// it as app.yaml (unless the folder already describes the same app).
func New(ctx context.Context, cfg Config) (*Recorder, error) {
	if strings.TrimSpace(cfg.Upstream) == "" {
		return nil, errors.New("no upstream: pass --upstream URL (the Dify API base, e.g. https://api.dify.ai/v1)")
	}
	if strings.TrimSpace(cfg.UpstreamKey) == "" {
		return nil, errors.New("no upstream API key: set DIFY_MOCK_UPSTREAM_KEY or pass --upstream-key")
	}
	up, err := upstream.New(upstream.Config{URL: cfg.Upstream, Key: cfg.UpstreamKey, Base: cfg.Transport, MaxBody: cfg.MaxBody})
	if err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		return nil, errors.New("no cassette folder: pass --cassettes DIR")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cassette folder: %w", err)
	}
	cors := netguard.ParseOrigins(cfg.CORSOrigins...)
	if cors.Any() {
		return nil, errors.New(`CORS origin "*" refused: the recorder spends a real key, so name the origins that may use it`)
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	r := &Recorder{
		up:             up,
		host:           up.Host(),
		dir:            cfg.Dir,
		key:            cfg.UpstreamKey,
		transport:      up.Transport(),
		scrub:          newScrubber(cfg.UpstreamKey, cfg.Rules),
		logf:           logf,
		reserved:       map[string]*session{},
		byRequested:    map[string]*session{},
		byConversation: map[string]*session{},
		byTask:         map[string]*session{},
		byMessage:      map[string]*session{},
		lastByUser:     map[string]*session{},
		pending:        map[string][]*vcr.Interaction{},
		open:           list.New(),
		maxOpen:        maxOpenSessions,
		maxPending:     maxPendingInteractions,
		written:        map[string]bool{},
		cors:           cors,
		access:         netguard.Policy{Hosts: cfg.AllowedHosts, IPLiterals: true},
		keepUploads:    cfg.KeepUploadContents,
		maxTurns:       cfg.MaxTurns,
		skipRecorded:   cfg.SkipRecordedQueries,
		maxUpload:      maxOtherBody,
		beforeSave:     cfg.BeforeSave,
	}
	if err := r.recordApp(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// apiPath maps a client path to the API path below /v1: "/v1/info" and
// "/info" both give "/info".
func apiPath(p string) string {
	if p == "/v1" || strings.HasPrefix(p, "/v1/") {
		p = p[len("/v1"):]
	}
	if p == "" {
		p = "/"
	}
	return p
}

func isAppPath(p string) bool {
	for _, a := range cassette.AppPaths {
		if p == a {
			return true
		}
	}
	return false
}

// ServeHTTP proxies one request and records it.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		writeError(w, http.StatusServiceUnavailable, "service_unavailable", "dify-mock record is shutting down.")
		return
	}
	p := apiPath(req.URL.Path)
	if !r.guard(w, req) {
		return // refused, or a preflight answered here: nothing went upstream
	}
	if !(p == "/" && req.Method == http.MethodGet) && !r.authorized(w, req) {
		return
	}
	switch {
	case p == "/chat-messages" && req.Method == http.MethodPost:
		r.serveChat(w, req, p)
	default:
		r.serveOther(w, req, p)
	}
}

// authorized mirrors Dify's bearer checks (docs/api §1.2) so a client that
// forgets its key fails here as it would against Dify, although the recorder
// replaces whatever key it sends.
func (r *Recorder) authorized(w http.ResponseWriter, req *http.Request) bool {
	h := req.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	switch {
	case h == "" || !ok:
		w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "Authorization header must be provided and start with 'Bearer'")
		return false
	case !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(token) == "":
		w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "Authorization scheme must be 'Bearer'")
		return false
	}
	return true
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(map[string]any{"code": code, "message": message, "status": status})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// readBody reads the client's body up to limit bytes.
func readBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, bool) {
	if req.Body == nil {
		return nil, true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "request_entity_too_large", "The data value transmitted exceeds the capacity limit.")
		} else {
			writeError(w, http.StatusBadRequest, "bad_request", "dify-mock record: reading the request body failed: "+err.Error())
		}
		return nil, false
	}
	return body, true
}

// outbound builds the upstream request: same method, path below the
// upstream base, query and headers, with the client's credentials replaced
// by the upstream key.
func (r *Recorder) outbound(ctx context.Context, req *http.Request, p string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	out, err := http.NewRequestWithContext(ctx, req.Method, r.up.Endpoint(p, req.URL.RawQuery), rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range req.Header {
		ck := http.CanonicalHeaderKey(k)
		if isHopByHop(ck) || secrets.IsCredentialHeader(ck) || strings.HasPrefix(ck, cassette.HeaderPrefix) ||
			ck == "Accept-Encoding" || ck == "Host" || ck == "Content-Length" {
			// Accept-Encoding is left to the transport so responses
			// arrive decompressed and SSE frames can be split.
			continue
		}
		out.Header[ck] = append([]string(nil), vs...)
	}
	r.up.Authorize(out)
	return out, nil
}

// copyResponseHeader copies upstream response headers to the client, minus
// hop-by-hop headers and a length that no longer applies.
func copyResponseHeader(dst, src http.Header) {
	for k, vs := range src {
		ck := http.CanonicalHeaderKey(k)
		if isHopByHop(ck) || ck == "Content-Length" || isCORSHeader(ck) {
			continue
		}
		if ck == "Vary" {
			dst[ck] = append(dst[ck], vs...) // keep the guard's Vary: Origin
			continue
		}
		dst[ck] = append([]string(nil), vs...)
	}
}

func (r *Recorder) upstreamFailed(w http.ResponseWriter, req *http.Request, err error) {
	if req.Context().Err() != nil {
		return // the client left; nobody to answer
	}
	r.logf("upstream %s %s failed: %v", req.Method, apiPath(req.URL.Path), err)
	writeError(w, http.StatusBadGateway, "bad_gateway", "dify-mock record: the upstream Dify did not answer: "+err.Error())
}

// roundTripVCR sends out through a go-vcr recorder and returns the response
// together with a scrubbed copy of the recorded interaction. The recorder is
// used as a recording transport only: it is never stopped, so go-vcr itself
// never writes (or appends to) a file; cassettes are written by this package
// with cassette.WriteNew after the secret check.
func (r *Recorder) roundTripVCR(out *http.Request) (*http.Response, *vcr.Interaction, error) {
	// go-vcr stats "<name>.yaml" to decide between loading and recording;
	// the name points into a folder that is never created.
	rec, err := recorder.NewAsMode(filepath.Join(r.dir, ".dify-mock-record.unused", "scratch"), recorder.ModeRecording, r.transport)
	if err != nil {
		return nil, nil, err
	}
	// go-vcr would otherwise sleep for the recorded duration a second time.
	rec.SkipRequestLatency = true
	var captured *vcr.Interaction
	rec.AddFilter(func(in *vcr.Interaction) error {
		// The interaction also feeds the response the client gets, so the
		// scrubbing happens on a copy.
		captured = r.scrub.interaction(in)
		return nil
	})
	resp, err := rec.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	if captured == nil {
		resp.Body.Close()
		return nil, nil, errors.New("go-vcr recorder returned no interaction")
	}
	return resp, captured, nil
}

// requestIDs are the values that tie a non-chat request to a session.
type requestIDs struct {
	conversation, task, message, user string
}

func idsOf(req *http.Request, p string, body []byte) requestIDs {
	var ids requestIDs
	seg := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(seg) >= 2 && seg[0] == "conversations":
		ids.conversation = seg[1]
	case len(seg) == 3 && seg[0] == "chat-messages" && seg[2] == "stop":
		ids.task = seg[1]
	case len(seg) >= 2 && seg[0] == "messages":
		ids.message = seg[1]
	}
	q := req.URL.Query()
	if ids.conversation == "" {
		ids.conversation = q.Get("conversation_id")
	}
	ids.user = q.Get("user")
	ct, params, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch {
	case ct == "application/json" || strings.HasSuffix(ct, "+json"):
		var b struct {
			User           any `json:"user"`
			ConversationID any `json:"conversation_id"`
			MessageID      any `json:"message_id"` // POST /text-to-audio
		}
		if json.Unmarshal(body, &b) == nil {
			if s, ok := b.MessageID.(string); ok && ids.message == "" {
				ids.message = s
			}
			if s, ok := b.User.(string); ok && ids.user == "" {
				ids.user = s
			}
			if s, ok := b.ConversationID.(string); ok && ids.conversation == "" {
				ids.conversation = strings.TrimSpace(s)
			}
		}
	case ct == "multipart/form-data" && params["boundary"] != "":
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			part, err := mr.NextPart()
			if err != nil {
				break
			}
			if part.FormName() == "user" && part.FileName() == "" && ids.user == "" {
				v, _ := io.ReadAll(io.LimitReader(part, 4096))
				ids.user = string(v)
			}
			part.Close()
		}
	}
	return ids
}

// serveOther proxies any non-chat request through go-vcr and files the
// interaction under the session it belongs to.
func (r *Recorder) serveOther(w http.ResponseWriter, req *http.Request, p string) {
	if boundary := multipartBoundary(req); boundary != "" && !r.keepUploads {
		r.serveUpload(w, req, p, boundary)
		return
	}
	body, ok := readBody(w, req, maxOtherBody)
	if !ok {
		return
	}
	requested, ok := requestedName(w, req)
	if !ok {
		return
	}
	out, err := r.outbound(req.Context(), req, p, body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	resp, in, err := r.roundTripVCR(out)
	if err != nil {
		r.upstreamFailed(w, req, err)
		return
	}
	defer resp.Body.Close()
	copyResponseHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)

	if isAppPath(p) && req.Method == http.MethodGet {
		// The app description was recorded at start (app.yaml).
		return
	}
	r.file(in, requested, idsOf(req, p, body), p == "/files/upload")
}

// file attaches a non-chat interaction to its session: the one named by
// X-Dify-Mock-Cassette, else the one that owns its conversation, task or
// message id, else (uploads always, others when the user has no session yet)
// it waits for the user's next chat turn.
func (r *Recorder) file(in *vcr.Interaction, requested string, ids requestIDs, upload bool) {
	var probe nameProbe
	if requested != "" {
		probe = r.probeName(requested)
	}
	r.mu.Lock()
	var s *session
	switch {
	case requested != "":
		s = r.byRequested[requested]
		if s == nil {
			s = r.newSessionLocked(probe, requested, ids.user)
		}
	case ids.conversation != "" && r.byConversation[ids.conversation] != nil:
		s = r.byConversation[ids.conversation]
	case ids.task != "" && r.byTask[ids.task] != nil:
		s = r.byTask[ids.task]
	case ids.message != "" && r.byMessage[ids.message] != nil:
		s = r.byMessage[ids.message]
	case !upload && r.lastByUser[ids.user] != nil:
		s = r.lastByUser[ids.user]
	}
	if s == nil {
		r.holdLocked(ids.user, in)
		r.mu.Unlock()
		return
	}
	r.touchLocked(s)
	r.mu.Unlock()
	r.save(s, func(s *session) { s.interactions = append(s.interactions, in) })
}

// Close stops recording: later requests get 503. It reports interactions no
// chat session claimed and returns every refused save.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.pendingCount > 0 {
		r.logf("%d interaction(s) were not saved: no chat turn of the same user followed them", r.pendingCount)
	}
	if r.droppedPending > 0 {
		r.logf("%d interaction(s) were not saved: %d already waited for a chat turn of their user", r.droppedPending, r.maxPending)
	}
	refused := r.refused
	if r.moreRefused > 0 {
		refused = append(slices.Clip(refused), fmt.Errorf("%d more save(s) refused (each is in the log)", r.moreRefused))
	}
	return errors.Join(refused...)
}

// Written lists the cassette files written so far (app.yaml included).
func (r *Recorder) Written() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for p := range r.written {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// requestedName returns the cassette name a client asked for with the
// X-Dify-Mock-Cassette header ("" when none); an unusable name is answered
// with 400 and ok=false.
func requestedName(w http.ResponseWriter, req *http.Request) (name string, ok bool) {
	name = strings.TrimSuffix(req.Header.Get(cassette.NameHeader), ".yaml")
	if name != "" {
		if err := checkRequestedName(name); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_param", err.Error())
			return "", false
		}
	}
	return name, true
}

// Upstream is the upstream base URL without any credentials, for banners
// and logs.
func (r *Recorder) Upstream() string {
	return r.up.String()
}
