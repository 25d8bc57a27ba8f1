// Package mockserver is dify-mock: an HTTP server that impersonates the Dify
// Agent app Service API (docs/api/README.md, cited as "docs/api §n"). It
// replays recorded chat streams with their original per-frame timing and
// keeps consistent state for every other endpoint. Routes live under /v1.
//
// Public API: this package (New, Config and what they take),
// mockserver/mocktest and mockserver/cassette are for other modules. Every
// other package under mockserver/ is the mock's own and may change in any
// release (CONTRIBUTING.md, "Layout").
package mockserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/detach"
	"github.com/difyops/terraform-provider-dify/mockserver/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/netguard"
	"github.com/difyops/terraform-provider-dify/mockserver/rawstream"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
	"github.com/difyops/terraform-provider-dify/mockserver/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/rules"
	"github.com/difyops/terraform-provider-dify/mockserver/store"
)

// Defaults for Config's zero values (docs/api §18).
const (
	// DefaultMaxStateBytes suits a laptop: thousands of ordinary
	// conversations, a few dozen large uploads.
	DefaultMaxStateBytes = 256 << 20

	DefaultRunTimeout       = time.Hour
	DefaultMaxModelRequests = 500
)

// Config configures a Server. The zero value serves the built-in cassettes
// with no delays, accepting any "Bearer app-…" key from any origin.
type Config struct {
	Cassettes        *cassette.Set    // nil = built-in set (cassettes.FS())
	Speed            float64          // 1 = recorded timing, 2 = twice as fast, 0 = no delays
	APIKeys          []string         // empty = accept any "Bearer app-…" key
	CORSOrigin       string           // "" or "*" = any origin; else a comma-separated list of origins
	Mode             string           // "agent" (default) or "agent-chat"; "" = the app description's mode
	DefaultCassette  string           // "" = the set's default
	RunTimeout       time.Duration    // default 1h
	MaxModelRequests int              // default 500
	Logger           *slog.Logger     // nil = discard
	Now              func() time.Time // optional clock for created_at
	// MaxStateBytes bounds the estimated memory of the stored state
	// (conversations, messages, feedback, uploads, end users, annotations):
	// 0 = DefaultMaxStateBytes, negative = unbounded. Past it the least
	// recently changed conversations, uploads and end users are evicted,
	// deleted conversations first, with one summary log line per 10 s;
	// annotations past it are refused (docs/security.md).
	MaxStateBytes int64
	// OnEvict, when set, gets every eviction pass's summary (its first
	// store.Eviction.IDs name what went), besides the summary log lines.
	// It runs under the store's lock and must not call the server.
	OnEvict func(store.Eviction)
	// BodyReadTimeout bounds how long a client may take to send a request
	// body (0 = DefaultBodyReadTimeout, negative = no bound). It never
	// applies while a response streams.
	BodyReadTimeout time.Duration
	// AnnotationJobDelay is how long an annotation-reply enable/disable job
	// stays `waiting` before the simulated worker runs it (docs/api §28);
	// 0 runs it on the next request that looks.
	AnnotationJobDelay time.Duration
	// Fault is a fault spec for every request that neither the
	// X-Dify-Mock-Fault header nor its cassette gives one (docs/mock/faults.md).
	Fault string
	// Control configures the control API, journal, rules and web console
	// under /__mock/ (docs/mock/console.md); on by default.
	Control ControlConfig
	// Match is how a chat query picks a recorded turn (docs/mock/hybrid.md):
	// MatchSimilar (the default when "") or MatchExact. MatchThreshold is
	// the similarity a recorded query must reach (0 = DefaultMatchThreshold).
	Match          string
	MatchThreshold float64
	// Upstream, when set, answers the chats that no recorded turn answers,
	// live, and saves them into its folder, which must be
	// Control.CassetteDir (hybrid mode, docs/mock/hybrid.md). The set may
	// then have no chat cassette yet.
	Upstream *record.Recorder
	// UpstreamTimeout bounds the wait for a live turn's first frame before
	// a recorded turn answers instead (0 = DefaultUpstreamTimeout).
	UpstreamTimeout time.Duration
}

// Match values (Config.Match, serve --match).
const (
	MatchSimilar = "similar"
	MatchExact   = "exact"
)

// Defaults of the nearest-turn and hybrid settings (docs/mock/hybrid.md).
const (
	// DefaultMatchThreshold: half the words in common, roughly; below it a
	// query shares little more than "in" and "the" with a recorded one.
	DefaultMatchThreshold = 0.5
	// DefaultUpstreamTimeout: a Dify agent sends its first event (or a
	// ping) within seconds; a developer waiting longer is better served by
	// a recorded turn.
	DefaultUpstreamTimeout = 15 * time.Second
)

// Server is the mock. It is an http.Handler.
type Server struct {
	cfg     Config
	origins netguard.Origins // Config.CORSOrigin (CORS grants)
	log     *slog.Logger
	app     *cassette.App
	mode    string
	info    []byte // /info body (mode patched when Config.Mode overrides it)
	form    []formField
	// catalog is the loaded chat cassettes (catalog.go); a reload swaps it.
	catalog       atomic.Pointer[catalog]
	reloadMu      sync.Mutex
	lastReloadErr atomic.Value // string: the last failed watch reload
	store         *store.Store
	tenantID      string
	appID         string
	handler       http.Handler
	// fault is Config.Fault.
	fault fault.Spec
	// ownerAccountID is the workspace owner, author of annotations (docs/api §27.1).
	ownerAccountID string
	// annTurns caches the turns annotations answer with (annotation_turn.go).
	annTurns annotationTurns

	// The control API (controlapi.go); nil when disabled.
	journal *journal.Journal
	rules   *rules.Set
	control http.Handler

	// upstreamConvs maps conversations the upstream answered to its own
	// (hybrid mode, chat_upstream.go).
	upstreamConvs upstreamConversations
	// liveSaves are the live turns being saved after their response
	// (chat_upstream.go).
	liveSaves sync.WaitGroup

	// back is the listener that detached streams' connections return
	// through (Listener, chat_detach.go); nil: streams stay on net/http's
	// connection goroutine.
	back atomic.Pointer[rawstream.Listener]

	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	streams sync.WaitGroup
	live    atomic.Int64 // streams begun and not ended (precise, chat_stream.go)
	tasks   map[string]*task
	// evictions sums the state bound's evictions into summary log lines.
	evictions *evictionLog
}

// task is a live stream that POST /chat-messages/:task_id/stop can end.
type task struct {
	owner string
	// intr ends the stream early: its owner's stop, the server's
	// Shutdown, or (detached) its client's hang-up, whichever is first.
	intr *replay.Interrupter
	// conn is a detached stream's connection (chat_detach.go), closed by
	// Shutdown when the stream does not end in time; guarded by Server.mu.
	conn io.Closer
}

// CheckAPIKey refuses a key no client could send as itself: empty, or with
// white space (Unicode included) or control characters, which the bearer
// parser trims or a header cannot carry.
func CheckAPIKey(k string) error {
	if k == "" {
		return errors.New("an API key must not be empty")
	}
	if !utf8.ValidString(k) {
		return errors.New("an API key must be UTF-8")
	}
	for _, r := range k {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return errors.New("an API key must not contain white space or control characters")
		}
	}
	return nil
}

// New validates cfg and builds the server.
func New(cfg Config) (*Server, error) {
	for _, k := range cfg.APIKeys {
		if err := CheckAPIKey(k); err != nil {
			return nil, err
		}
	}
	if !validSpeed(cfg.Speed) {
		return nil, fmt.Errorf("speed %v: want 0 (no delays) or a number from %v to %v", cfg.Speed, minSpeed, maxSpeed)
	}
	if cfg.RunTimeout < 0 {
		return nil, fmt.Errorf("run timeout %v: want a positive duration", cfg.RunTimeout)
	}
	if cfg.RunTimeout == 0 {
		cfg.RunTimeout = DefaultRunTimeout
	}
	if cfg.BodyReadTimeout == 0 {
		cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if cfg.MaxModelRequests < 0 {
		return nil, fmt.Errorf("max model requests %d: want a positive number", cfg.MaxModelRequests)
	}
	if cfg.MaxModelRequests == 0 {
		cfg.MaxModelRequests = DefaultMaxModelRequests
	}
	serverFault, err := fault.Parse(cfg.Fault)
	if err != nil {
		return nil, fmt.Errorf("fault %q: %v. Known faults: %s", cfg.Fault, err, fault.Names())
	}
	switch cfg.Mode {
	case "", dify.ModeAgent, dify.ModeAgentChat:
	default:
		return nil, fmt.Errorf("mode %q: want %q or %q", cfg.Mode, dify.ModeAgent, dify.ModeAgentChat)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	set := cfg.Cassettes
	if set == nil {
		var err error
		if set, err = BuiltinSet(); err != nil {
			return nil, err
		}
	}
	if len(set.Names) == 0 && cfg.Upstream == nil {
		return nil, errors.New("the cassette set has no chat cassettes")
	}
	switch cfg.Match {
	case "":
		cfg.Match = MatchSimilar
	case MatchSimilar, MatchExact:
	default:
		return nil, fmt.Errorf("match %q: want %q or %q", cfg.Match, MatchSimilar, MatchExact)
	}
	if cfg.MatchThreshold == 0 {
		cfg.MatchThreshold = DefaultMatchThreshold
	}
	if !(cfg.MatchThreshold > 0 && cfg.MatchThreshold <= 1) {
		return nil, fmt.Errorf("match threshold %v: want a number above 0, at most 1", cfg.MatchThreshold)
	}
	if cfg.UpstreamTimeout == 0 {
		cfg.UpstreamTimeout = DefaultUpstreamTimeout
	}
	app := set.App
	if app == nil {
		builtin, err := BuiltinSet()
		if err != nil {
			return nil, err
		}
		if builtin.App == nil {
			return nil, errors.New("the built-in cassettes have no app description")
		}
		app = builtin.App
	}
	s := &Server{
		cfg: cfg, log: log, app: app, origins: corsOrigins(cfg.CORSOrigin),
		closing: make(chan struct{}), tasks: map[string]*task{},
		tenantID: replay.NewUUID(), appID: replay.NewUUID(), ownerAccountID: replay.NewUUID(),
		fault: serverFault,
	}
	s.store = store.New(cfg.Now, replay.NewUUID)
	if cfg.MaxStateBytes == 0 {
		cfg.MaxStateBytes = DefaultMaxStateBytes
		s.cfg.MaxStateBytes = cfg.MaxStateBytes
	}
	s.evictions = newEvictionLog(log)
	s.store.SetMaxBytes(cfg.MaxStateBytes, func(ev store.Eviction) {
		s.evictions.add(ev)
		if cfg.OnEvict != nil {
			cfg.OnEvict(ev)
		}
	})
	s.mode = cfg.Mode
	if s.mode == "" {
		s.mode = app.Info.Mode
		if s.mode != dify.ModeAgentChat {
			s.mode = dify.ModeAgent
		}
	}
	s.info = patchMode(app.Responses["/info"].Body, app.Info.Mode, s.mode)
	if s.form, err = parseForm(app.Responses["/parameters"].Body); err != nil {
		return nil, fmt.Errorf("%s: /parameters user_input_form: %w", app.Path, err)
	}
	cat, err := newCatalog(set, cfg.DefaultCassette, s.matchThreshold())
	if err != nil {
		return nil, err
	}
	s.catalog.Store(cat)
	s.setupControl()
	s.handler = s.withControl(s.routes())
	return s, nil
}

// Speeds outside this range would overflow offset arithmetic or be useless.
const (
	minSpeed = 0.001
	maxSpeed = 1e6
)

func validSpeed(f float64) bool {
	return f == 0 || (f >= minSpeed && f <= maxSpeed && !math.IsNaN(f))
}

// BuiltinSet loads the embedded cassettes.
func BuiltinSet() (*cassette.Set, error) {
	return cassette.LoadFS(cassettes.FS(), "built-in cassettes")
}

// Mode is the app mode the server impersonates.
func (s *Server) Mode() string { return s.mode }

// App is the app description being served.
func (s *Server) App() *cassette.App { return s.app }

// CassetteNames lists the loaded chat cassettes, sorted.
func (s *Server) CassetteNames() []string { return append([]string(nil), s.cat().names...) }

// Cassette returns a loaded chat cassette.
func (s *Server) Cassette(name string) (*cassette.Cassette, bool) { return s.cat().set.Get(name) }

// DefaultCassette is the cassette served when nothing else matches.
func (s *Server) DefaultCassette() string { return s.cat().def }

// UpstreamURL is hybrid mode's upstream base URL (no credentials), "" when
// the mode is off.
func (s *Server) UpstreamURL() string {
	if s.cfg.Upstream == nil {
		return ""
	}
	return s.cfg.Upstream.Upstream()
}

// ServeHTTP serves the API under /v1.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && s.back.Load() != nil && strings.HasSuffix(r.URL.Path, "/chat-messages") {
		dw := detach.Wrap(w) // the stream may outlive the handler (chat_detach.go)
		defer dw.Continue()  // a detached stream must run, even past a panic
		s.handler.ServeHTTP(dw, r)
		return
	}
	s.handler.ServeHTTP(w, r)
}

// Shutdown ends every in-flight stream: each ends with an `error` frame
// (code internal_server_error, status 500, ShutdownMessage) after its
// message is stored, so clients see a clean, terminated stream rather than a
// cut connection. New chat requests get 503. Shutdown returns when every
// stream has ended or ctx is done. It does not close listeners: the caller
// shuts its http.Server down afterwards.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
		// Each stream has its own signal (replay.Interrupter: a replay
		// waiting on a channel every stream shares costs more per frame).
		for _, t := range s.tasks {
			t.intr.Interrupt(replay.ShuttingDown)
		}
	}
	s.mu.Unlock()
	s.evictions.flush()
	done := make(chan struct{})
	go func() {
		s.streams.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		// A detached stream is no longer the http.Server's to close (its
		// client may have stopped reading, leaving a write blocked).
		s.mu.Lock()
		for _, t := range s.tasks {
			if t.conn != nil {
				_ = t.conn.Close()
			}
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// isClosed reports that Shutdown has started.
func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// beginStream registers a stream; false once shutdown started.
func (s *Server) beginStream(taskID, owner string) (*task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	s.streams.Add(1)
	s.live.Add(1)
	t := &task{owner: owner, intr: replay.NewInterrupter()}
	s.tasks[taskID] = t
	return t, true
}

func (s *Server) endStream(taskID string) {
	s.mu.Lock()
	delete(s.tasks, taskID)
	s.mu.Unlock()
	s.live.Add(-1)
	s.streams.Done()
}

// stopTask signals a stream of owner; unknown tasks are ignored (docs/api §3).
func (s *Server) stopTask(taskID, owner string) bool {
	s.mu.Lock()
	t, ok := s.tasks[taskID]
	s.mu.Unlock()
	if !ok || t.owner != owner {
		return false
	}
	t.intr.Interrupt(replay.Stopped)
	return true
}

func (s *Server) routes() http.Handler {
	r := httprouter.New()
	r.RedirectFixedPath = false
	// Werkzeug's rules are strict about a trailing slash: /v1/info/ is a
	// 404, not a redirect (the one redirect, /v1 → /v1/, is in notFound).
	r.RedirectTrailingSlash = false
	r.HandleMethodNotAllowed = true
	r.HandleOPTIONS = true
	r.NotFound = http.HandlerFunc(notFound)
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeError(w, errMethodNotAllowed) })
	r.GlobalOPTIONS = http.HandlerFunc(s.preflight)

	r.GET("/v1/", s.withFaults(s.serverInfo(), false)) // no auth (docs/api §1.1)
	a := func(h httprouter.Handle) httprouter.Handle { return s.authenticate(s.withFaults(h, false)) }
	r.POST("/v1/chat-messages", s.authenticate(s.withFaults(s.chatMessages, true)))
	r.POST("/v1/chat-messages/:task_id/stop", a(s.stopChat))
	r.GET("/v1/messages/:message_id/suggested", a(s.suggested))
	r.GET("/v1/messages", a(s.listMessages))
	r.GET("/v1/conversations", a(s.listConversations))
	r.POST("/v1/conversations/:conversation_id/name", a(s.renameConversation))
	r.DELETE("/v1/conversations/:conversation_id", a(s.deleteConversation))
	r.POST("/v1/files/upload", a(s.uploadFile))
	r.GET("/v1/end-users/:end_user_id", a(s.endUser))
	r.POST("/v1/audio-to-text", a(s.audioToText))
	r.POST("/v1/text-to-audio", a(s.textToAudio))
	r.GET("/v1/info", a(s.appResponse("/info")))
	r.GET("/v1/parameters", a(s.appResponse("/parameters")))
	r.GET("/v1/meta", a(s.appResponse("/meta")))
	r.GET("/v1/site", a(s.appResponse("/site")))
	r.POST("/v1/messages/:message_id/feedbacks", a(s.messageFeedback))
	r.GET("/v1/app/feedbacks", a(s.appFeedbacks))
	r.GET("/v1/apps/annotations", a(s.listAnnotations))
	r.POST("/v1/apps/annotations", a(s.createAnnotation))
	r.PUT("/v1/apps/annotations/:annotation_id", a(s.updateAnnotation))
	r.DELETE("/v1/apps/annotations/:annotation_id", a(s.deleteAnnotation))
	r.POST("/v1/apps/annotation-reply/:action", a(s.annotationReplyAction))
	r.GET("/v1/apps/annotation-reply/:action/status/:job_id", a(s.annotationReplyStatus))
	r.GET("/v1/files/:file_id/preview", a(s.previewFile))
	r.GET("/v1/conversations/:conversation_id/variables", a(s.listConversationVariables))
	r.PUT("/v1/conversations/:conversation_id/variables/:variable_id", a(s.updateConversationVariable))

	return s.front(r)
}

// StateUsage is the stored state's estimated size and its bound.
func (s *Server) StateUsage() (bytes, maxBytes int64) { return s.store.Usage() }
