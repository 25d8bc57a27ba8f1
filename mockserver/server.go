// Package mockserver is dify-mock: an HTTP server that impersonates the Dify
// Agent app Service API (docs/api/README.md, cited as "docs/api §n"). It
// replays recorded chat streams with their original per-frame timing and
// keeps consistent state for every other endpoint. Routes live under /v1.
//
// Public API: this package (New, Config, AppConfig, Server and what they
// take and return), and mockserver/cassette (the cassette format),
// mockserver/mocktest (the mock inside a Go test), mockserver/rules,
// mockserver/journal and mockserver/record (the recorder of Config.Upstream).
// None of them hands out a type of a private package; the mock's own
// packages are under mockserver/internal/ and may change in any release
// (CONTRIBUTING.md, "Layout").
package mockserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/control"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/detach"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/rawstream"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
	"github.com/difyops/terraform-provider-dify/mockserver/rules"
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
	// Eviction.IDs name what went), besides the summary log lines.
	// It runs under the store's lock and must not call the server.
	OnEvict func(Eviction)
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
	// Apps are several apps in one server, each chosen by its API keys
	// (docs/mock/apps.md); the first is the default. Empty: one app named
	// DefaultAppName from Cassettes, APIKeys, Mode, DefaultCassette,
	// Upstream and Control.CassetteDir, which must be zero when Apps is set.
	Apps []AppConfig
}

// DefaultAppName is the name of the app of a Config without Apps.
const DefaultAppName = "default"

// AppConfig is one app of Config.Apps.
type AppConfig struct {
	Name        string        // [a-z0-9][a-z0-9_-]{0,62}; unique
	Cassettes   *cassette.Set // description + chat cassettes; nil = built-in set
	CassetteDir string        // the folder it came from ("" = none): reload, save, watch
	// APIKeys are the keys that reach this app. Several apps: empty =
	// "app-" + Name. One app: empty = any "Bearer app-…" key.
	APIKeys         []string
	Mode            string // "" = the description's mode
	DefaultCassette string // "" = the set's default
	// Upstream answers this app's unrecorded chats live (hybrid mode,
	// Config.Upstream); its folder must be CassetteDir.
	Upstream *record.Recorder
}

// DefaultAppKey is the API key of an app given none, when there are
// several: "app-" + its name.
func DefaultAppKey(name string) string { return "app-" + name }

var appNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// CheckAppName refuses an app name that is not [a-z0-9][a-z0-9_-]{0,62}:
// names appear in URLs (?app=), file names and state files.
func CheckAppName(name string) error {
	if !appNameRE.MatchString(name) {
		return fmt.Errorf("app name %q: want 1 to 63 lower-case letters, digits, '-' or '_', starting with a letter or digit", name)
	}
	return nil
}

// appConfigs is cfg's apps: Config.Apps checked, or the one app of the
// top-level fields.
func appConfigs(cfg Config) ([]AppConfig, error) {
	if len(cfg.Apps) == 0 {
		for _, k := range cfg.APIKeys {
			if err := CheckAPIKey(k); err != nil {
				return nil, err
			}
		}
		return []AppConfig{{Name: DefaultAppName, Cassettes: cfg.Cassettes, CassetteDir: cfg.Control.CassetteDir,
			APIKeys: cfg.APIKeys, Mode: cfg.Mode, DefaultCassette: cfg.DefaultCassette, Upstream: cfg.Upstream}}, nil
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"Cassettes", cfg.Cassettes != nil}, {"APIKeys", len(cfg.APIKeys) > 0}, {"Mode", cfg.Mode != ""},
		{"DefaultCassette", cfg.DefaultCassette != ""}, {"Upstream", cfg.Upstream != nil},
		{"Control.CassetteDir", cfg.Control.CassetteDir != ""},
	} {
		if f.set {
			return nil, fmt.Errorf("config: %s is per app when Apps is set: give it in the app's AppConfig", f.name)
		}
	}
	apps := slices.Clone(cfg.Apps)
	seen := map[string]bool{}
	owner := map[string]string{}
	for i := range apps {
		a := &apps[i]
		if err := CheckAppName(a.Name); err != nil {
			return nil, err
		}
		if seen[a.Name] {
			return nil, fmt.Errorf("app %q is given twice", a.Name)
		}
		seen[a.Name] = true
		if len(a.APIKeys) == 0 && len(apps) > 1 {
			a.APIKeys = []string{DefaultAppKey(a.Name)}
		}
		for _, k := range a.APIKeys {
			if err := CheckAPIKey(k); err != nil {
				return nil, fmt.Errorf("app %q: %v", a.Name, err)
			}
			// The error names the apps, never the key: keys are secrets.
			if o, ok := owner[k]; ok && o != a.Name {
				return nil, fmt.Errorf("apps %q and %q share an API key: each key belongs to one app", o, a.Name)
			}
			owner[k] = a.Name
		}
	}
	return apps, nil
}

// Eviction summarises one pass of the state bound (Config.OnEvict).
type Eviction struct {
	// App is the app whose state the pass evicted from.
	App string
	// Conversations, Files and EndUsers count what went.
	Conversations, Files, EndUsers int
	// IDs are the first evicted ids, in eviction order (a few, not all).
	IDs []string
	// Bytes is the estimated size freed; Total the estimated size of every
	// app's state after the pass; Max the bound (Config.MaxStateBytes).
	Bytes, Total, Max int64
}

// Count is how many objects the pass evicted.
func (e Eviction) Count() int { return e.Conversations + e.Files + e.EndUsers }

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

// Server is the mock. It is an http.Handler. It serves one app or several
// (Config.Apps), each chosen by the API key a request carries, as Dify
// chooses the app of an API token (docs/mock/apps.md). Its per-app methods
// (Mode, App, CassetteNames, StateUsage, ReloadCassettes, …) describe the
// default app, the first; Apps and AppNamed reach the others.
type Server struct {
	*appServer // the default app: the first of apps (hub.apps)
	byName     map[string]*appServer
	// byKey finds the app of an API key (several apps, or one with
	// APIKeys); nil: one app that accepts any "Bearer app-…" key.
	byKey map[string]*appServer
	// noApp answers a request whose key no app owns: the default app's
	// routes (so route matching, CORS and the 401 are exactly one app's),
	// journaled with no app.
	noApp http.Handler
}

// hub is what the apps of one Server share: the process's listener,
// streams, journal, rules, control API, log and state bound.
type hub struct {
	// cfg is the server's Config, defaults applied: each app's cfg is a
	// copy with the app's own fields (newApp).
	cfg     Config
	origins netguard.Origins // Config.CORSOrigin (CORS grants)
	log     *slog.Logger
	// fault is Config.Fault.
	fault fault.Spec
	// tenantID is the workspace every app belongs to; ownerAccountID is
	// its owner, author of annotations (docs/api §27.1).
	tenantID       string
	ownerAccountID string
	// files signs and serves the /files/ URLs the mock hands out
	// (signed_files.go): one secret for the whole mock, as Dify has one
	// SECRET_KEY, whichever app's request handed a URL out.
	files *signedFiles

	// The control API (controlapi.go); nil when disabled.
	journal *journal.Journal
	rules   *rules.Set
	control http.Handler

	// back is the listener that detached streams' connections return
	// through (Listener, chat_detach.go); nil: streams stay on net/http's
	// connection goroutine.
	back atomic.Pointer[rawstream.Listener]

	// gate makes Shutdown's closing and a stream's start exclusive: a
	// stream starts (beginStream) under its read lock, so Shutdown, under
	// its write lock, interrupts every stream that started and none starts
	// after. The read lock is an atomic add: thousands of chats starting at
	// once do not queue behind one mutex, which under load handed itself
	// from waiter to waiter a scheduler wake-up at a time.
	gate    sync.RWMutex
	closed  atomic.Bool
	closing chan struct{}
	streams sync.WaitGroup
	live    atomic.Int64 // streams begun and not ended (precise, chat_stream.go)
	tasks   sync.Map     // task id → *task of the streams in flight
	// evictions sums the state bound's evictions into summary log lines.
	evictions *evictionLog
	// account is the state bound every app's store counts in.
	account *store.Account
	// apps are every app of the server (set once, by New).
	apps []*appServer
}

// appServer is one app: its description, cassettes, state and routes.
// The handlers are its methods; what the apps share comes through hub.
type appServer struct {
	*hub
	// cfg is the server's Config with this app's fields (Cassettes,
	// APIKeys, Mode, DefaultCassette, Upstream, Control.CassetteDir).
	cfg  Config
	name string
	app  *cassette.App
	mode string
	info []byte // /info body (mode patched when Config.Mode overrides it)
	form []formField
	// catalog is the loaded chat cassettes (catalog.go); a reload swaps it.
	catalog       atomic.Pointer[catalog]
	reloadMu      sync.Mutex
	lastReloadErr atomic.Value // string: the last failed watch reload
	store         *store.Store
	appID         string
	handler       http.Handler
	// annTurns caches the turns annotations answer with (chat_annotation.go).
	annTurns annotationTurns

	// upstreamConvs maps conversations the upstream answered to its own
	// (hybrid mode, chat_upstream.go).
	upstreamConvs upstreamConversations
	// liveSaves are this app's live turns being saved after their
	// response (chat_upstream.go).
	liveSaves sync.WaitGroup
}

// task is a live stream that POST /chat-messages/:task_id/stop can end.
type task struct {
	// app and owner (an end user id) are who may stop it: a task id
	// never crosses apps.
	app   *appServer
	owner string
	// intr ends the stream early: its owner's stop, the server's
	// Shutdown, or (detached) its client's hang-up, whichever is first.
	intr *replay.Interrupter
	// conn is a detached stream's connection (chat_detach.go), closed by
	// Shutdown when the stream does not end in time.
	conn atomic.Pointer[rawstream.Stream]
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
	appCfgs, err := appConfigs(cfg)
	if err != nil {
		return nil, err
	}
	serverFault, err := checkConfig(&cfg)
	if err != nil {
		return nil, err
	}
	h := newHub(&cfg, serverFault)
	srv := &Server{byName: map[string]*appServer{}}
	if err := srv.addApps(h, appCfgs); err != nil {
		return nil, err
	}
	srv.setupControl()
	for _, a := range srv.apps {
		a.handler = a.journaled(a.name, a.routes())
	}
	srv.noApp = srv.journaled("", srv.routes())
	return srv, nil
}

// checkConfig checks cfg's server-wide settings and fills in their
// defaults; it returns Config.Fault parsed.
func checkConfig(cfg *Config) (fault.Spec, error) {
	if !validSpeed(cfg.Speed) {
		return fault.Spec{}, fmt.Errorf("speed %v: want 0 (no delays) or a number from %v to %v", cfg.Speed, minSpeed, maxSpeed)
	}
	if cfg.RunTimeout < 0 {
		return fault.Spec{}, fmt.Errorf("run timeout %v: want a positive duration", cfg.RunTimeout)
	}
	if cfg.RunTimeout == 0 {
		cfg.RunTimeout = DefaultRunTimeout
	}
	if cfg.BodyReadTimeout == 0 {
		cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if cfg.MaxModelRequests < 0 {
		return fault.Spec{}, fmt.Errorf("max model requests %d: want a positive number", cfg.MaxModelRequests)
	}
	if cfg.MaxModelRequests == 0 {
		cfg.MaxModelRequests = DefaultMaxModelRequests
	}
	serverFault, err := fault.Parse(cfg.Fault)
	if err != nil {
		return fault.Spec{}, fmt.Errorf("fault %q: %v. Known faults: %s", cfg.Fault, err, fault.Names())
	}
	switch cfg.Match {
	case "":
		cfg.Match = MatchSimilar
	case MatchSimilar, MatchExact:
	default:
		return fault.Spec{}, fmt.Errorf("match %q: want %q or %q", cfg.Match, MatchSimilar, MatchExact)
	}
	if cfg.MatchThreshold == 0 {
		cfg.MatchThreshold = DefaultMatchThreshold
	}
	if !(cfg.MatchThreshold > 0 && cfg.MatchThreshold <= 1) {
		return fault.Spec{}, fmt.Errorf("match threshold %v: want a number above 0, at most 1", cfg.MatchThreshold)
	}
	if cfg.UpstreamTimeout == 0 {
		cfg.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if cfg.MaxStateBytes == 0 {
		cfg.MaxStateBytes = DefaultMaxStateBytes
	}
	return serverFault, nil
}

// newHub is the state the apps of a Server share, for the checked cfg.
func newHub(cfg *Config, serverFault fault.Spec) *hub {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &hub{
		cfg: *cfg, log: log, origins: corsOrigins(cfg.CORSOrigin),
		closing:  make(chan struct{}),
		tenantID: replay.NewUUID(), ownerAccountID: replay.NewUUID(),
		fault: serverFault, account: store.NewAccount(cfg.MaxStateBytes),
	}
	h.evictions = newEvictionLog(log)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	h.files = newSignedFiles(now) // the stores' clock: Config.Now
	return h
}

// addApps makes an appServer of each app configuration, indexed by name
// and API key; the first is the Server's own (the single app's, or the
// default of several).
func (srv *Server) addApps(h *hub, appCfgs []AppConfig) error {
	var apps []*appServer
	scripts := &scriptCache{}
	for _, ac := range appCfgs {
		a, err := newApp(h, ac, len(appCfgs) > 1, scripts.compile)
		if err != nil {
			if len(appCfgs) > 1 {
				return fmt.Errorf("app %q: %w", ac.Name, err)
			}
			return err
		}
		apps = append(apps, a)
		srv.byName[a.name] = a
		for _, k := range ac.APIKeys {
			if srv.byKey == nil {
				srv.byKey = map[string]*appServer{}
			}
			srv.byKey[k] = a
		}
	}
	h.apps = apps
	srv.appServer = apps[0]
	return nil
}

// newApp builds one app of h from its config.
func newApp(h *hub, ac AppConfig, several bool, compile compileFunc) (*appServer, error) {
	cfg := h.cfg
	cfg.Apps = nil
	cfg.Cassettes, cfg.APIKeys, cfg.Mode, cfg.DefaultCassette = ac.Cassettes, ac.APIKeys, ac.Mode, ac.DefaultCassette
	cfg.Upstream, cfg.Control.CassetteDir = ac.Upstream, ac.CassetteDir // keys checked by appConfigs
	switch cfg.Mode {
	case "", dify.ModeAgent, dify.ModeAgentChat:
	default:
		return nil, fmt.Errorf("mode %q: want %q or %q", cfg.Mode, dify.ModeAgent, dify.ModeAgentChat)
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
	s := &appServer{hub: h, cfg: cfg, name: ac.Name, app: app, appID: replay.NewUUID()}
	s.store = store.New(cfg.Now, replay.NewUUID)
	logName := "" // one app: the log line as it always was
	if several {
		logName = ac.Name
	}
	s.store.SetAccount(h.account, func(ev store.Eviction) {
		s.evictions.add(logName, ev)
		if cfg.OnEvict != nil {
			cfg.OnEvict(Eviction{App: ac.Name, Conversations: ev.Conversations, Files: ev.Files, EndUsers: ev.EndUsers,
				IDs: ev.IDs, Bytes: ev.Bytes, Total: ev.Total, Max: ev.Max})
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
	var err error
	if s.form, err = parseForm(app.Responses["/parameters"].Body); err != nil {
		return nil, fmt.Errorf("%s: /parameters user_input_form: %w", app.Path, err)
	}
	cat, err := newCatalog(set, cfg.DefaultCassette, s.matchThreshold(), compile)
	if err != nil {
		return nil, err
	}
	s.catalog.Store(cat)
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
func (s *appServer) Mode() string { return s.mode }

// App is the app description being served.
func (s *appServer) App() *cassette.App { return s.app }

// CassetteNames lists the loaded chat cassettes, sorted.
func (s *appServer) CassetteNames() []string { return append([]string(nil), s.cat().names...) }

// Cassette returns a loaded chat cassette.
func (s *appServer) Cassette(name string) (*cassette.Cassette, bool) { return s.cat().set.Get(name) }

// DefaultCassette is the cassette served when nothing else matches.
func (s *appServer) DefaultCassette() string { return s.cat().def }

// UpstreamURL is hybrid mode's upstream base URL (no credentials), "" when
// the mode is off.
func (s *appServer) UpstreamURL() string {
	if s.cfg.Upstream == nil {
		return ""
	}
	return s.cfg.Upstream.Upstream()
}

// ServeHTTP serves the API under /v1, each request by the app its API key
// belongs to, and the control API under /__mock/.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := s.appFor(r)
	if r.Method == http.MethodPost && s.back.Load() != nil && strings.HasSuffix(r.URL.Path, "/chat-messages") {
		dw := detach.Wrap(w) // the stream may outlive the handler (chat_detach.go)
		defer dw.Continue()  // a detached stream must run, even past a panic
		h.ServeHTTP(dw, r)
		return
	}
	h.ServeHTTP(w, r)
}

// appFor is the handler of r: the control API's, or that of the app whose
// key r carries (Dify's validate_app_token: the bearer token's app). A
// request without a bearer token goes to the default app, which answers
// its unauthenticated routes and its 401s; one whose token no app owns to
// noApp, which answers the same 401 as a wrong key always did.
func (s *Server) appFor(r *http.Request) http.Handler {
	if s.control != nil && control.Owns(r.URL.Path) {
		return s.control
	}
	if s.byKey == nil {
		return s.handler
	}
	if token, ok := bearerToken(r.Header.Get("Authorization")); ok {
		if a := s.byKey[token]; a != nil {
			return a.handler
		}
		return s.noApp
	}
	return s.handler
}

// Apps are the server's apps, the default first.
func (s *Server) Apps() []*App {
	out := make([]*App, len(s.apps))
	for i, a := range s.apps {
		out[i] = &App{a: a, isDefault: i == 0}
	}
	return out
}

// AppNamed is the app called name.
func (s *Server) AppNamed(name string) (*App, bool) {
	a, ok := s.byName[name]
	if !ok {
		return nil, false
	}
	return &App{a: a, isDefault: a == s.appServer}, true
}

// fileInAnotherApp reports whether a message of another app references
// the upload id: Dify's file preview then answers 403 file_access_denied
// rather than 404 (file_preview.py _validate_file_ownership; every app of
// the mock is in one workspace).
func (s *appServer) fileInAnotherApp(id string) bool {
	for _, a := range s.hub.apps {
		if a == s {
			continue
		}
		if _, err := a.store.PreviewFile(id); !errors.Is(err, store.ErrFileNotInMessage) {
			return true
		}
	}
	return false
}

// appNames lists the apps' names, the default first.
func (s *Server) appNames() []string {
	names := make([]string, len(s.apps))
	for i, a := range s.apps {
		names[i] = a.name
	}
	return names
}

// App is one app of a Server (Server.Apps): what its description,
// cassettes and state are.
type App struct {
	a         *appServer
	isDefault bool
}

// Name is the app's name (AppConfig.Name; DefaultAppName for one app
// configured without Apps).
func (a *App) Name() string { return a.a.name }

// Default reports whether this is the default app (the first).
func (a *App) Default() bool { return a.isDefault }

// Mode is the app mode it impersonates.
func (a *App) Mode() string { return a.a.Mode() }

// Description is its app description (/info, /parameters, /meta, /site).
func (a *App) Description() *cassette.App { return a.a.App() }

// Keys is how many API keys reach it; 0: any "Bearer app-…" key.
func (a *App) Keys() int { return len(a.a.cfg.APIKeys) }

// CassetteDir is the folder its cassettes came from ("" = none).
func (a *App) CassetteDir() string { return a.a.cfg.Control.CassetteDir }

// CassetteNames lists its loaded chat cassettes, sorted.
func (a *App) CassetteNames() []string { return a.a.CassetteNames() }

// Cassette returns one of its loaded chat cassettes.
func (a *App) Cassette(name string) (*cassette.Cassette, bool) { return a.a.Cassette(name) }

// DefaultCassette is its cassette served when nothing else matches.
func (a *App) DefaultCassette() string { return a.a.DefaultCassette() }

// StateUsage is its stored state's estimated size and the bound every
// app's state counts in together.
func (a *App) StateUsage() (bytes, maxBytes int64) { return a.a.StateUsage() }

// ReloadCassettes loads its cassette folder again (Server.ReloadCassettes).
func (a *App) ReloadCassettes() ([]string, error) { return a.a.ReloadCassettes() }

// WatchCassettes reloads its cassette folder when it changes
// (Server.WatchCassettes).
func (a *App) WatchCassettes(interval time.Duration) { a.a.WatchCassettes(interval) }

// Shutdown ends every in-flight stream: each ends with an `error` frame
// (code internal_server_error, status 500, ShutdownMessage) after its
// message is stored, so clients see a clean, terminated stream rather than a
// cut connection. New chat requests get 503. Shutdown returns when every
// stream has ended or ctx is done. It does not close listeners: the caller
// shuts its http.Server down afterwards.
func (s *appServer) Shutdown(ctx context.Context) error {
	s.gate.Lock()
	if !s.closed.Load() {
		s.closed.Store(true)
		close(s.closing)
		// Each stream has its own signal (replay.Interrupter: a replay
		// waiting on a channel every stream shares costs more per frame).
		s.tasks.Range(func(_, t any) bool {
			t.(*task).intr.Interrupt(replay.ShuttingDown)
			return true
		})
	}
	s.gate.Unlock()
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
		s.tasks.Range(func(_, t any) bool {
			if c := t.(*task).conn.Load(); c != nil {
				_ = c.Close()
			}
			return true
		})
		return ctx.Err()
	}
}

// isClosed reports that Shutdown has started.
func (s *appServer) isClosed() bool { return s.closed.Load() }

// beginStream registers a stream; false once shutdown started.
func (s *appServer) beginStream(taskID, owner string) (*task, bool) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closed.Load() {
		return nil, false
	}
	s.streams.Add(1)
	s.live.Add(1)
	t := &task{app: s, owner: owner, intr: replay.NewInterrupter()}
	s.tasks.Store(taskID, t)
	return t, true
}

func (s *appServer) endStream(taskID string) {
	s.tasks.Delete(taskID)
	s.live.Add(-1)
	s.streams.Done()
}

// stopTask signals a stream of owner in this app; unknown tasks, and
// another app's, are ignored (docs/api §3).
func (s *appServer) stopTask(taskID, owner string) bool {
	v, ok := s.tasks.Load(taskID)
	if !ok {
		return false
	}
	t := v.(*task)
	if t.app != s || t.owner != owner {
		return false
	}
	t.intr.Interrupt(replay.Stopped)
	return true
}

// StateUsage is the stored state's estimated size and its bound: the
// app's, and the bound every app's state counts in together.
func (s *appServer) StateUsage() (bytes, maxBytes int64) { return s.store.Usage() }
