package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/difyops/terraform-provider-dify/internal/textlog"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// shutdownGrace bounds how long in-flight streams and connections get to end
// after SIGINT/SIGTERM.
const shutdownGrace = 5 * time.Second

// serveOptions are the serve flags after the environment and the command
// line.
type serveOptions struct {
	addr, cassettes, mode, defaultCassette, logLevel, fault string
	pprofAddr                                               string
	speed                                                   float64
	apiKeys, cors                                           listFlag
	runTimeout                                              time.Duration
	maxModelRequests                                        int
	// Exposure and bounds (docs/security.md).
	allowRemote   bool
	maxStateBytes int64
	bodyTimeout   time.Duration
	// The control API and web console (docs/mock/console.md).
	console        bool
	adminToken     string
	adminHosts     listFlag
	journal        bool
	journalSize    int
	journalBytes   int64
	stateFile      string
	watchCassettes bool
	// Lifecycle: exit when the process that started the mock is gone.
	exitWithParent bool
	// Nearest turns and hybrid mode (docs/mock/hybrid.md).
	match           string
	matchThreshold  float64
	upstream        string
	upstreamKey     string
	upstreamTimeout time.Duration
	maxNewTurns     int
	// Several apps (docs/mock/apps.md); specs is --app and --apps read.
	apps    listFlag
	appsDir string
	appKeys listFlag
	specs   []appSpec
	keys    map[string][]string
	// Hybrid mode per app: --app-upstream NAME=URL and its key.
	appUpstreams    listFlag
	appUpstreamKeys listFlag
	upstreams       map[string]appUpstream
	// guessable are the apps reached by app-NAME, given no key.
	guessable map[string]bool
}

// newServeFlags declares the serve flags on o. A new flag is one line here
// (and its name in withEnv when DIFY_MOCK_<NAME> should set it).
func newServeFlags(o *serveOptions) *commandFlags {
	f := newFlags("serve", "dify-mock [serve] [flags]",
		"Starts the mock Dify Agent app API. Every flag can also be set with an environment variable.")
	fs := f.fs
	fs.StringVar(&o.addr, "addr", "127.0.0.1:5001", "listen address (host:port; port 0 picks a free port)")
	fs.StringVar(&o.cassettes, "cassettes", "", "load the cassettes in this folder instead of the built-in set; a Dify app DSL file, or a folder holding one, describes the app (docs/mock/dsl.md)")
	fs.Float64Var(&o.speed, "speed", 1, "replay speed: 1 = recorded timing, 2 = twice as fast, 0 = no delays")
	fs.Var(&o.apiKeys, "api-key", "accepted API key (repeatable; env: comma-separated); without any, every \"Bearer app-…\" key is accepted")
	fs.Var(&o.cors, "cors-origin", "browser `ORIGIN` (e.g. http://localhost:5173) allowed to call the mock with CORS; repeatable or comma-separated; * = any origin; default *")
	fs.StringVar(&o.mode, "mode", "", "app mode to impersonate: agent or agent-chat (default: the app description's mode)")
	fs.StringVar(&o.defaultCassette, "default-cassette", "", "cassette served when no header or query match picks one (default: the set's default)")
	fs.DurationVar(&o.runTimeout, "run-timeout", mockserver.DefaultRunTimeout, "agent run deadline in recorded time; longer turns end with agent_run_limit_exceeded")
	fs.IntVar(&o.maxModelRequests, "max-model-requests", mockserver.DefaultMaxModelRequests, "model requests allowed per run (turn); more end with agent_run_limit_exceeded")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.fault, "fault", "", "fault spec for every request that neither its header nor its cassette gives one, e.g. slow-headers:2s (see: dify-mock faults)")
	fs.StringVar(&o.pprofAddr, "pprof-addr", "", "serve Go profiles (/debug/pprof/) and the goroutine count (/debug/goroutines) on this separate loopback host:port, e.g. 127.0.0.1:6060 (default: off)")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow an --addr beyond loopback without --api-key (anyone who reaches it can use the mock and read its conversations)")
	fs.Int64Var(&o.maxStateBytes, "max-state-bytes", mockserver.DefaultMaxStateBytes, "bound on the stored state's memory in bytes; past it the least recently changed conversations and uploads are evicted (negative = unbounded)")
	fs.DurationVar(&o.bodyTimeout, "body-timeout", mockserver.DefaultBodyReadTimeout, "time a client gets to send a request body; slower ones get 408 (never applies to a streaming response)")
	fs.BoolVar(&o.console, "console", true, "serve the control API and web console under /__mock/ (docs/mock/console.md)")
	fs.StringVar(&o.adminToken, "admin-token", "", "token the control API and console require; without it they answer loopback clients only")
	fs.Var(&o.adminHosts, "admin-allow-host", "host name the control API accepts besides localhost/127.0.0.1/[::1] (repeatable; env: comma-separated)")
	fs.BoolVar(&o.journal, "journal", true, "record requests in the journal the console and control API read; --journal=false for load tests (the control API, rules and console stay; WireMock's --no-request-journal)")
	fs.IntVar(&o.journalSize, "journal-size", journal.DefaultSize, "requests the journal keeps (oldest dropped first)")
	fs.Int64Var(&o.journalBytes, "journal-bytes", journal.DefaultBytes, "bytes the journal holds across its entries (bodies cut at 64 KiB, frame data included); past it the oldest entries are dropped")
	fs.StringVar(&o.stateFile, "state-file", "", "load the state (end users, conversations, messages, uploads) from this JSON file at start, if it exists, and save it there on shutdown")
	fs.BoolVar(&o.watchCassettes, "watch-cassettes", false, "reload the --cassettes folder when its files change (errors are logged and the loaded set is kept)")
	fs.BoolVar(&o.exitWithParent, "exit-with-parent", false, "shut down when the process that started this one exits, however it ends (for test runners and wrappers)")
	fs.StringVar(&o.match, "match", mockserver.MatchSimilar, "how a query picks a recorded turn: similar (the most similar recorded query, above --match-threshold) or exact (same words, case and spacing aside)")
	fs.Float64Var(&o.matchThreshold, "match-threshold", mockserver.DefaultMatchThreshold, "similarity (0 to 1) a recorded query must reach to answer with --match similar")
	fs.StringVar(&o.upstream, "upstream", "", "hybrid mode: answer chats that no recorded turn matches from this real Dify (API base URL, e.g. https://api.dify.ai/v1), live, and save them into --cassettes (docs/mock/hybrid.md)")
	fs.StringVar(&o.upstreamKey, "upstream-key", "", "app API key for --upstream; prefer the environment variable, which keeps it out of the process list")
	fs.DurationVar(&o.upstreamTimeout, "upstream-timeout", mockserver.DefaultUpstreamTimeout, "how long a live turn may take to send its first frame before the mock falls back to a recorded turn")
	fs.IntVar(&o.maxNewTurns, "max-new-turns", DefaultMaxNewTurns, "turns one run of hybrid mode may add to --cassettes (0 = answer live without saving)")
	fs.Var(&o.apps, "app", "serve an app from a folder (app.yaml and its cassettes) as `NAME=PATH`; repeatable: each request goes to the app its API key belongs to, the first is the default (docs/mock/apps.md)")
	fs.StringVar(&o.appsDir, "apps", "", "serve each subfolder of `DIR` as an app named after it (sorted, after any --app; the first is the default)")
	fs.Var(&o.appUpstreams, "app-upstream", "hybrid mode for one app, as `NAME=URL` (repeatable): its unrecorded chats stream from this Dify app and are saved into its folder; the key from "+appUpstreamKeysEnv+" (NAME=KEY pairs)")
	fs.Var(&o.appUpstreamKeys, "app-upstream-key", "upstream key of an app, as `NAME=KEY` (repeatable); prefer "+appUpstreamKeysEnv+", which keeps it out of the process list")
	fs.Var(&o.appKeys, "app-key", "API key of an app, as `NAME=KEY` (repeatable; env "+appKeysEnv+": comma-separated); an app folder's keys.txt adds more; an app without any gets app-NAME")
	f.withEnv("addr", "cassettes", "speed", "api-key", "cors-origin", "mode", "default-cassette", "run-timeout",
		"max-model-requests", "log-level", "fault", "pprof-addr", "allow-remote", "max-state-bytes", "body-timeout",
		"console", "admin-token", "admin-allow-host", "journal", "journal-size", "journal-bytes", "state-file", "watch-cassettes",
		"exit-with-parent", "match", "match-threshold", "upstream-key", "upstream-timeout", "max-new-turns", "app", "apps", "app-upstream")
	f.footer = fmt.Sprintf("Per request: X-Dify-Mock-Cassette picks a cassette, X-Dify-Mock-Speed sets the speed and\n"+
		"%s injects a fault (slow headers, HTTP 429/5xx, a broken or stalled stream, …);\n"+
		"'dify-mock faults' lists them with an example each.", fault.Header)
	return f
}

// parseServe reads the serve flags from getenv and args. Errors are already
// printed (exitCode gives the exit code); -h/--help prints the help to stdout.
func parseServe(args []string, getenv func(string) string, stdout, stderr io.Writer) (*serveOptions, error) {
	o := &serveOptions{}
	f := newServeFlags(o)
	if err := f.parse(args, getenv, stdout, stderr); err != nil {
		return nil, err
	}
	if err := f.noArgs(stderr); err != nil {
		return nil, err
	}
	for _, l := range []struct {
		flag *listFlag
		env  string
	}{{&o.appKeys, appKeysEnv}, {&o.appUpstreamKeys, appUpstreamKeysEnv}} {
		if v := getenv(l.env); v != "" && len(l.flag.values) == 0 {
			_ = l.flag.setFromEnv(v)
		}
	}
	if err := checkApps(o); err != nil {
		return nil, f.usageError(stderr, err.Error())
	}
	if o.pprofAddr != "" {
		if err := checkLoopback(o.pprofAddr); err != nil {
			return nil, f.usageError(stderr, err.Error())
		}
	}
	for _, k := range o.apiKeys.values {
		// An empty key would count as the remote opt-in and match a
		// bearer token that trims to nothing.
		if err := mockserver.CheckAPIKey(k); err != nil {
			return nil, f.usageError(stderr, "--api-key: "+err.Error())
		}
	}
	if o.adminToken != "" && strings.TrimSpace(o.adminToken) != o.adminToken {
		return nil, f.usageError(stderr, "--admin-token: must not be blank or start or end with white space")
	}
	if len(o.specs) == 0 {
		if err := checkExposure(o.addr, o.allowRemote, len(o.apiKeys.values)); err != nil {
			return nil, f.usageError(stderr, err.Error())
		}
	} // several apps: once their keys are read (runServe)
	if o.journalBytes < 1<<20 {
		return nil, f.usageError(stderr, fmt.Sprintf("--journal-bytes %d: want at least 1048576 (1 MiB)", o.journalBytes))
	}
	if o.journalSize < 1 {
		return nil, f.usageError(stderr, fmt.Sprintf("--journal-size %d: want a positive number of requests", o.journalSize))
	}
	if o.watchCassettes && o.cassettes == "" && len(o.specs) == 0 {
		return nil, f.usageError(stderr, "--watch-cassettes needs --cassettes DIR (or --app/--apps)")
	}
	if o.cassettes != "" && cassetteDir(o.cassettes) == "" && (o.watchCassettes || o.upstream != "") {
		// A DSL file alone replays the built-in cassettes: there is no
		// folder to watch or to save new turns into.
		return nil, f.usageError(stderr, fmt.Sprintf("--watch-cassettes and --upstream need --cassettes DIR, a folder: %s is not one (put the DSL file in a folder and give the folder)", o.cassettes))
	}
	if o.match != mockserver.MatchSimilar && o.match != mockserver.MatchExact {
		return nil, f.usageError(stderr, fmt.Sprintf("--match %q: want %s or %s", o.match, mockserver.MatchSimilar, mockserver.MatchExact))
	}
	if !(o.matchThreshold > 0 && o.matchThreshold <= 1) {
		return nil, f.usageError(stderr, fmt.Sprintf("--match-threshold %v: want a number above 0, at most 1", o.matchThreshold))
	}
	if o.upstream != "" {
		switch {
		case o.cassettes == "":
			return nil, f.usageError(stderr, "--upstream needs --cassettes DIR: the folder new turns are saved into")
		case strings.TrimSpace(o.upstreamKey) == "":
			return nil, f.usageError(stderr, fmt.Sprintf("--upstream needs the upstream key: set %s (or pass --upstream-key)", envName("upstream-key")))
		case o.upstreamTimeout <= 0:
			return nil, f.usageError(stderr, fmt.Sprintf("--upstream-timeout %v: want a positive duration", o.upstreamTimeout))
		case o.maxNewTurns < 0:
			return nil, f.usageError(stderr, fmt.Sprintf("--max-new-turns %d: want 0 or more", o.maxNewTurns))
		}
	}
	return o, nil
}

// checkApps reads --app, --apps and --app-key into o.specs and o.keys,
// and refuses the one-app flags they replace.
func checkApps(o *serveOptions) error {
	if len(o.apps.values) == 0 && o.appsDir == "" {
		if len(o.appKeys.values) > 0 {
			return errors.New("--app-key needs --app NAME=PATH or --apps DIR; one app's keys are --api-key")
		}
		if len(o.appUpstreams.values) > 0 {
			return errors.New("--app-upstream needs --app NAME=PATH or --apps DIR; one app's is --upstream")
		}
		return nil
	}
	for _, c := range []struct {
		flag string
		set  bool
		use  string
	}{
		{"--cassettes", o.cassettes != "", "give each app's folder with --app NAME=PATH"},
		{"--api-key", len(o.apiKeys.values) > 0, "give each app's keys with --app-key NAME=KEY or its keys.txt"},
		{"--mode", o.mode != "", "each app has its description's mode"},
		{"--default-cassette", o.defaultCassette != "", "mark the default in each app's folder (default: true)"},
		{"--upstream", o.upstream != "", "give each app's with --app-upstream NAME=URL"},
	} {
		if c.set {
			return fmt.Errorf("%s is for one app and cannot be used with --app/--apps: %s", c.flag, c.use)
		}
	}
	specs, err := appSpecs(o.apps.values, o.appsDir)
	if err != nil {
		return err
	}
	keys, err := parseAppKeys(o.appKeys.values, specs)
	if err != nil {
		return err
	}
	ups, err := parseAppUpstreams(o.appUpstreams.values, o.appUpstreamKeys.values, specs)
	if err != nil {
		return err
	}
	if len(ups) > 0 && o.upstreamTimeout <= 0 {
		return fmt.Errorf("--upstream-timeout %v: want a positive duration", o.upstreamTimeout)
	}
	if len(ups) > 0 && o.maxNewTurns < 0 {
		return fmt.Errorf("--max-new-turns %d: want 0 or more", o.maxNewTurns)
	}
	o.specs, o.keys, o.upstreams = specs, keys, ups
	return nil
}

// DefaultMaxNewTurns is --max-new-turns: enough for a session of
// exploring, small enough that a loop in a client cannot fill the folder.
const DefaultMaxNewTurns = 20

// startUpstream builds the hybrid mode's recorder (docs/mock/hybrid.md): it
// fetches the upstream app's description into the folder (app.yaml), as
// `record` does, and saves the turns the upstream answers there.
func startUpstream(ctx context.Context, o *serveOptions, logger *slog.Logger) (*record.Recorder, error) {
	if o.upstream == "" {
		return nil, nil
	}
	return newUpstream(ctx, o.upstream, o.upstreamKey, o.cassettes, o.maxNewTurns, logger)
}

// newUpstream is hybrid mode's recorder of one folder: the serve one's
// (--upstream) or an app's (--app-upstream).
func newUpstream(ctx context.Context, url, key, dir string, maxNewTurns int, logger *slog.Logger) (*record.Recorder, error) {
	saved := maxNewTurns
	if saved == 0 {
		saved = -1 // record.Config: negative saves nothing
	}
	return record.New(ctx, record.Config{
		Upstream: url, UpstreamKey: key, Dir: dir, MaxTurns: saved, SkipRecordedQueries: true,
		Logf: func(format string, args ...any) { logger.Info("upstream: " + fmt.Sprintf(format, args...)) },
	})
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseServe(args, os.Getenv, stdout, stderr)
	if err != nil {
		return exitCode(err)
	}
	level, err := parseLevel(o.logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "dify-mock serve: --log-level %q: want debug, info, warn or error\n", o.logLevel)
		return 2
	}
	logOut := newBatchWriter(stderr)
	defer logOut.Close()
	logger := slog.New(textlog.NewHandler(logOut, level))
	if o.exitWithParent {
		ctx = exitWithParent(ctx, logger)
	}
	tctx, stopTuning := context.WithCancel(ctx)
	defer stopTuning()
	go tuneGC(tctx, os.Getenv)

	srv, source, err := newServeServer(ctx, o, logger)
	if err != nil {
		fmt.Fprintf(stderr, "dify-mock serve: %v\n", err)
		if errors.As(err, new(errUsage)) {
			return 2
		}
		return 1
	}
	ln, err := listen(o.addr)
	if err != nil {
		fmt.Fprintf(stderr, "dify-mock serve: %v\n", err)
		return 1
	}
	var pprofAddr net.Addr
	if o.pprofAddr != "" {
		pln, err := listenPprof(o.pprofAddr)
		if err != nil {
			_ = ln.Close()
			fmt.Fprintf(stderr, "dify-mock serve: %v\n", err)
			return 1
		}
		pprofAddr = pln.Addr()
		defer startPprof(pln)()
	}
	// The banner goes out in one write: whoever watches stdout (a script
	// waiting for the API base URL, a test) sees all of it or none of it.
	var banner bytes.Buffer
	printBanner(&banner, srv, source, ln.Addr(), pprofAddr, o)
	_, _ = stdout.Write(banner.Bytes())
	return serveUntilDone(ctx, srv, ln, o, logger, stdout, stderr)
}

// newServeServer builds the Server serve's options describe: the upstream,
// the cassettes or apps, and the state file's state. source names where
// the cassettes come from, for the banner. An errUsage is exit code 2, any
// other error 1.
func newServeServer(ctx context.Context, o *serveOptions, logger *slog.Logger) (srv *mockserver.Server, source string, err error) {
	up, err := startUpstream(ctx, o, logger)
	if err != nil {
		return nil, "", fmt.Errorf("--upstream: %v", err)
	}
	source = "built-in cassettes"
	var set *cassette.Set
	if o.cassettes != "" {
		if set, err = loadAppSource(o.cassettes, logger); err != nil {
			return nil, "", err
		}
		source = o.cassettes
	}
	apps, err := serveApps(ctx, o, logger)
	if err != nil {
		return nil, "", err
	}
	srv, err = mockserver.New(mockserver.Config{Apps: apps,
		Cassettes: set, Speed: o.speed, APIKeys: o.apiKeys.values, CORSOrigin: strings.Join(o.cors.values, ","), Mode: o.mode,
		DefaultCassette: o.defaultCassette, RunTimeout: o.runTimeout, MaxModelRequests: o.maxModelRequests,
		Logger: logger, Fault: o.fault, MaxStateBytes: o.maxStateBytes, BodyReadTimeout: o.bodyTimeout,
		Match: o.match, MatchThreshold: o.matchThreshold, Upstream: up, UpstreamTimeout: o.upstreamTimeout,
		Control: mockserver.ControlConfig{Disabled: !o.console, AdminToken: o.adminToken, AllowedHosts: o.adminHosts.values,
			NoJournal: !o.journal, JournalSize: o.journalSize, JournalBytes: o.journalBytes, CassetteDir: cassetteDir(o.cassettes)},
	})
	if err != nil {
		return nil, "", err
	}
	if err := loadStateFile(srv, o, logger); err != nil {
		return nil, "", fmt.Errorf("--state-file: %v", err)
	}
	return srv, source, nil
}

// serveApps is the apps of --app (nil without one): their keys, checked
// against the address, their upstreams (--app-upstream) and their folders.
func serveApps(ctx context.Context, o *serveOptions, logger *slog.Logger) ([]mockserver.AppConfig, error) {
	if len(o.specs) == 0 {
		return nil, nil
	}
	keys, err := appKeys(o.specs, o.keys)
	if err != nil {
		return nil, err
	}
	// Beyond loopback, every app needs a key of its own: app-NAME is
	// anyone's guess, and a lone app without keys takes any key.
	keyed := 0
	if len(keys) == len(o.specs) {
		keyed = len(keys)
	}
	if err := checkExposure(o.addr, o.allowRemote, keyed); err != nil {
		return nil, errUsage{strings.Replace(err.Error(), "Pass --api-key KEY", "Give every app a key (--app-key NAME=KEY or its keys.txt)", 1)}
	}
	o.guessable = map[string]bool{}
	recorders := map[string]*record.Recorder{}
	for _, spec := range o.specs {
		if len(keys[spec.name]) == 0 && len(o.specs) > 1 {
			o.guessable[spec.name] = true
		}
		if u, ok := o.upstreams[spec.name]; ok {
			// Before the folder is loaded: it fetches the app's
			// description (app.yaml) into it, as --upstream does.
			if recorders[spec.name], err = newUpstream(ctx, u.url, u.key, spec.path, o.maxNewTurns, logger); err != nil {
				return nil, fmt.Errorf("--app-upstream for %q: %v", spec.name, err)
			}
		}
	}
	return loadApps(o.specs, keys, recorders, logger)
}

// loadStateFile loads --state-file's state into srv, if the file exists;
// o.stateFile becomes the path it is saved to at shutdown.
func loadStateFile(srv *mockserver.Server, o *serveOptions, logger *slog.Logger) error {
	if o.stateFile == "" {
		return nil
	}
	path, err := mockserver.PrepareStateFile(o.stateFile)
	if err != nil {
		return err
	}
	o.stateFile = path
	loaded, err := srv.LoadState(o.stateFile)
	if err != nil {
		return err
	}
	if loaded {
		logger.Info("state loaded", "file", o.stateFile)
	}
	return nil
}

// serveUntilDone serves srv on ln until ctx ends (or serving fails), then
// shuts down and saves the state; it returns the exit code.
func serveUntilDone(ctx context.Context, srv *mockserver.Server, ln net.Listener, o *serveOptions, logger *slog.Logger, stdout, stderr io.Writer) int {
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       mockserver.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(srv.Listener(ln)) }() // streams off the connection goroutines
	if o.watchCassettes {
		for _, a := range srv.Apps() {
			a.WatchCassettes(time.Second) // ends when srv shuts down
		}
	}
	select {
	case err := <-served:
		fmt.Fprintf(stderr, "dify-mock serve: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	fmt.Fprintln(stdout, "dify-mock: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("streams did not end in time", "error", err)
	}
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	if o.stateFile != "" {
		// After the streams ended, so their turns are part of it.
		if err := srv.SaveState(o.stateFile); err != nil {
			fmt.Fprintf(stderr, "dify-mock serve: saving --state-file: %v\n", err)
			if alt, aerr := srv.SaveStateFallback(); aerr == nil {
				fmt.Fprintf(stderr, "dify-mock serve: the state was saved to %s instead\n", alt)
			}
			return 1
		}
		fmt.Fprintf(stdout, "dify-mock: state saved to %s\n", o.stateFile)
	}
	return 0
}

func printBanner(w io.Writer, srv *mockserver.Server, source string, addr, pprofAddr net.Addr, o *serveOptions) {
	if len(o.specs) > 0 {
		printAppsBanner(w, srv, o)
	} else {
		fmt.Fprintf(w, "dify-mock: serving %q (mode %s) from %s\n", srv.App().Info.Name, srv.Mode(), source)
	}
	for i, base := range reachableBaseURLs(addr, net.InterfaceAddrs) {
		label := "API base URL "
		if i > 0 {
			label = "             "
		}
		fmt.Fprintf(w, "  %s %s\n", label, base)
	}
	if exposed(addr) {
		who := "anyone who can reach it can use the mock and read its conversations"
		if len(o.apiKeys.values) > 0 {
			who = "clients with a configured API key can use the mock from other machines"
		}
		fmt.Fprintf(w, "  WARNING       listening beyond this machine (%s): %s\n", addr, who)
	}
	switch {
	case len(o.specs) > 0:
		// Listed by app above.
	case len(o.apiKeys.values) == 0:
		fmt.Fprintf(w, "  API key       any \"Bearer app-…\" key (e.g. app-mock)\n")
	default:
		fmt.Fprintf(w, "  API keys      %d configured\n", len(o.apiKeys.values))
	}
	speed := strconv.FormatFloat(o.speed, 'g', -1, 64)
	switch {
	case o.speed == 0:
		speed += " (no delays)"
	case o.speed == 1:
		speed += " (recorded timing)"
	}
	fmt.Fprintf(w, "  speed         %s\n", speed)
	cors := strings.Join(o.cors.values, ", ")
	if origins := netguard.ParseOrigins(o.cors.values...); origins.Any() || origins.Empty() {
		cors = "any origin"
	}
	fmt.Fprintf(w, "  CORS          %s\n", cors)
	if o.maxStateBytes > 0 {
		fmt.Fprintf(w, "  state bound   %.0f MiB (least recently changed conversations are evicted past it)\n", float64(o.maxStateBytes)/(1<<20))
	}
	if pprofAddr != nil {
		fmt.Fprintf(w, "  pprof         http://%s/debug/pprof/ (goroutine count: /debug/goroutines)\n", pprofAddr)
	}
	if o.fault != "" {
		fmt.Fprintf(w, "  fault         %s (on every request; %s: none turns it off)\n", o.fault, fault.Header)
	}
	if o.console {
		host := "127.0.0.1"
		if _, port, err := net.SplitHostPort(addr.String()); err == nil {
			host = net.JoinHostPort(host, port)
		}
		note := "loopback clients only"
		if o.adminToken != "" {
			note = "admin token required; open it once with ?token=…"
		}
		fmt.Fprintf(w, "  console       http://%s/__mock/ (%s)\n", host, note)
		if !o.journal {
			fmt.Fprintf(w, "  journal       off (--journal=false): requests are not recorded\n")
		}
	}
	if o.stateFile != "" {
		fmt.Fprintf(w, "  state file    %s (loaded at start, saved on shutdown)\n", o.stateFile)
	}
	if o.match == mockserver.MatchSimilar {
		fmt.Fprintf(w, "  match         similar queries (threshold %s), else the default cassette\n", strconv.FormatFloat(o.matchThreshold, 'g', -1, 64))
	} else {
		fmt.Fprintf(w, "  match         exact queries, else the default cassette\n")
	}
	if o.upstream != "" {
		saving := fmt.Sprintf("saved into %s, up to %d new turn(s) this run", o.cassettes, o.maxNewTurns)
		if o.maxNewTurns == 0 {
			saving = "not saved (--max-new-turns 0)"
		}
		fmt.Fprintf(w, "  upstream      %s: chats no recorded turn answers stream from it live, %s\n", srv.UpstreamURL(), saving)
	}
	if len(o.specs) > 0 {
		fmt.Fprintf(w, "  Ctrl-C stops the server.\n")
		return
	}
	names := srv.CassetteNames()
	fmt.Fprintf(w, "  cassettes     %d (pick one with the X-Dify-Mock-Cassette header)\n", len(names))
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		c, _ := srv.Cassette(n)
		mark := " "
		if n == srv.DefaultCassette() {
			mark = "*"
		}
		desc := c.Meta.Description
		if r := []rune(desc); len(r) > 72 {
			desc = string(r[:71]) + "…"
		}
		if len(c.Turns) > 1 {
			desc = fmt.Sprintf("%s [%d turns]", desc, len(c.Turns))
		}
		if c.Meta.Fault != "" {
			desc = fmt.Sprintf("%s [fault %s]", desc, c.Meta.Fault)
		}
		fmt.Fprintf(w, "    %s %-*s  %s\n", mark, width, n, desc)
	}
	fmt.Fprintf(w, "  (* = default)  Ctrl-C stops the server.\n")
}

// printAppsBanner lists the apps of --app/--apps: name, mode, folder, how
// many keys (never the keys) and cassettes.
func printAppsBanner(w io.Writer, srv *mockserver.Server, o *serveOptions) {
	apps := srv.Apps()
	fmt.Fprintf(w, "dify-mock: serving %d app(s), each chosen by its API key (the first is the default)\n", len(apps))
	width := 0
	for _, a := range apps {
		width = max(width, len(a.Name()))
	}
	from := map[string]string{} // a DSL file has no cassette folder: name the file
	for _, spec := range o.specs {
		from[spec.name] = spec.path
	}
	for _, a := range apps {
		var keys string
		switch {
		case a.Keys() == 0:
			keys = "any \"Bearer app-…\" key"
		case o.guessable[a.Name()]:
			// Not a secret: the documented key of an app given none.
			keys = "key " + mockserver.DefaultAppKey(a.Name())
		default:
			keys = fmt.Sprintf("%d key(s)", a.Keys())
		}
		fmt.Fprintf(w, "  app %-*s  %q (mode %s) from %s: %s, %d cassette(s)\n", width, a.Name(), a.Description().Info.Name, a.Mode(), from[a.Name()], keys, len(a.CassetteNames()))
		if u, ok := o.upstreams[a.Name()]; ok {
			saving := fmt.Sprintf("up to %d new turn(s) this run", o.maxNewTurns)
			if o.maxNewTurns == 0 {
				saving = "not saved (--max-new-turns 0)"
			}
			fmt.Fprintf(w, "      %-*s  upstream %s: unrecorded chats stream from it live, %s\n", width, "", u.url, saving)
		}
	}
}
