// Package mocktest starts dify-mock inside a Go test: an in-process server
// on a loopback port, stopped when the test ends.
//
//	func TestChat(t *testing.T) {
//		mock := mocktest.Start(t) // built-in cassettes, no delays
//		client, _ := dify.NewClient(mock.BaseURL, "app-test")
//		…
//	}
//
// Options mirror dify-mock serve's flags (WithSpeed, WithCassetteDir,
// WithFault, …); WithConfig reaches every mockserver.Config field. The
// server is the mockserver package itself, so a test sees exactly what
// `dify-mock serve` would answer, without a separate process.
package mocktest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// shutdownGrace bounds how long Close waits for in-flight streams to end
// (each gets its final error frame first, as on SIGTERM).
const shutdownGrace = 5 * time.Second

// Mock is a running dify-mock.
type Mock struct {
	// URL is the server root, e.g. http://127.0.0.1:41234.
	URL string
	// BaseURL is the API base URL a Dify client takes: URL + "/v1".
	BaseURL string
	// Server is the mock itself (cassette names, app description, mode).
	Server *mockserver.Server
	// Apps are the names of its apps, the default first (one app:
	// mockserver.DefaultAppName), and Keys the API keys of each: an app
	// given none answers DefaultKey (one app: any "app-…" key;
	// several: mockserver.DefaultAppKey).
	Apps []string
	Keys map[string][]string

	http *httptest.Server
}

// Option changes the mock's configuration.
type Option func(*options)

type options struct {
	cfg       mockserver.Config
	cassetteD string
	err       error // from an option that loads (WithAppDir)
}

// WithSpeed sets the replay speed: 1 = recorded timing, 2 = twice as fast,
// 0 = no delays (the default here, unlike the CLI, so tests stay fast).
func WithSpeed(speed float64) Option { return func(o *options) { o.cfg.Speed = speed } }

// WithCassetteDir serves the cassettes in dir (as --cassettes DIR) instead of
// the built-in set.
func WithCassetteDir(dir string) Option { return func(o *options) { o.cassetteD = dir } }

// WithCassettes serves an already loaded cassette set.
func WithCassettes(set *cassette.Set) Option { return func(o *options) { o.cfg.Cassettes = set } }

// WithFault injects a fault spec into every request that neither its
// X-Dify-Mock-Fault header nor its cassette gives one (as --fault).
func WithFault(spec string) Option { return func(o *options) { o.cfg.Fault = spec } }

// WithAPIKeys accepts only these keys (as --api-key); without it every
// "Bearer app-…" key is accepted.
func WithAPIKeys(keys ...string) Option {
	return func(o *options) { o.cfg.APIKeys = append(o.cfg.APIKeys, keys...) }
}

// WithDefaultCassette names the cassette served when nothing else picks one.
func WithDefaultCassette(name string) Option {
	return func(o *options) { o.cfg.DefaultCassette = name }
}

// WithApps serves several apps in one mock, each reached by its API keys
// (mockserver.Config.Apps; docs/mock/apps.md); the first is the default.
// An app given no keys, among several, is reached by "app-" + its name.
func WithApps(apps ...mockserver.AppConfig) Option {
	return func(o *options) { o.cfg.Apps = append(o.cfg.Apps, apps...) }
}

// WithAppDir adds an app named name served from dir as serve --app
// NAME=PATH serves it (mockserver.LoadApp): an app folder (app.yaml or a
// Dify DSL file, and its cassettes) or a Dify app DSL file alone, reached
// by keys (none: "app-" + name when there are several apps).
func WithAppDir(name, dir string, keys ...string) Option {
	return func(o *options) {
		set, _, err := mockserver.LoadApp(dir)
		if err != nil {
			if o.err == nil {
				o.err = err
			}
			return
		}
		o.cfg.Apps = append(o.cfg.Apps, mockserver.AppConfig{Name: name, Cassettes: set, CassetteDir: dir, APIKeys: keys})
	}
}

// DefaultKey is a key any one-app mock without keys accepts.
const DefaultKey = "app-mocktest"

// Key is the first API key of app (a one-app mock without keys:
// DefaultKey), "" for an app it does not serve.
func (m *Mock) Key(app string) string {
	if ks := m.Keys[app]; len(ks) > 0 {
		return ks[0]
	}
	return ""
}

// WithConfig edits the mockserver.Config directly, for fields without an
// option of their own (Mode, RunTimeout, Logger, Now, …). It runs after the
// options before it.
func WithConfig(edit func(*mockserver.Config)) Option { return func(o *options) { edit(&o.cfg) } }

// Start starts a mock for t and stops it with t.Cleanup. A configuration
// the mock refuses (a bad speed, an unknown fault, unreadable cassettes)
// fails the test at once.
func Start(t testing.TB, opts ...Option) *Mock {
	t.Helper()
	m, err := New(opts...)
	if err != nil {
		t.Fatalf("mocktest: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

// New starts a mock outside a test (a TestMain, an example, a tool); the
// caller stops it with Close.
func New(opts ...Option) (*Mock, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.err != nil {
		return nil, o.err
	}
	if o.cassetteD != "" {
		set, err := cassette.LoadDir(o.cassetteD)
		if err != nil {
			return nil, err
		}
		o.cfg.Cassettes = set
	}
	srv, err := mockserver.New(o.cfg)
	if err != nil {
		return nil, err
	}
	// httptest binds 127.0.0.1 on a free port.
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener = srv.Listener(ts.Listener) // streams as `dify-mock serve` runs them
	ts.Start()
	m := &Mock{URL: ts.URL, BaseURL: ts.URL + "/v1", Server: srv, http: ts, Keys: map[string][]string{}}
	for _, a := range srv.Apps() {
		m.Apps = append(m.Apps, a.Name())
	}
	switch {
	case len(o.cfg.Apps) == 0 && len(o.cfg.APIKeys) > 0:
		m.Keys[mockserver.DefaultAppName] = o.cfg.APIKeys
	case len(o.cfg.Apps) == 0:
		m.Keys[mockserver.DefaultAppName] = []string{DefaultKey}
	case len(o.cfg.Apps) == 1 && len(o.cfg.Apps[0].APIKeys) == 0:
		m.Keys[o.cfg.Apps[0].Name] = []string{DefaultKey}
	default:
		for _, a := range o.cfg.Apps {
			keys := a.APIKeys
			if len(keys) == 0 {
				keys = []string{mockserver.DefaultAppKey(a.Name)}
			}
			m.Keys[a.Name] = keys
		}
	}
	return m, nil
}

// Close ends in-flight streams (each gets a final error frame, as on
// SIGTERM), then closes the listener and every connection. It is safe to
// call more than once.
func (m *Mock) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	_ = m.Server.Shutdown(ctx)
	m.http.Close()
}
