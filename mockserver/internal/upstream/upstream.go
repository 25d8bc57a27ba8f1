// Package upstream is the one policy for every request dify-mock sends to a
// real Dify: `dify-mock record` (proxying and the app description),
// `dify-mock verify` (the conformance cases and the app mirror) and any mode
// that forwards to a real server use it, and nothing in dify-mock calls an
// upstream another way.
//
// The policy (docs/security.md, "Outbound requests"):
//   - requests go to the configured origin only (scheme, host and port of
//     the base URL); a request for any other origin is refused before
//     anything is sent, so the app key cannot follow a redirect, a
//     rewritten URL or an absolute link in an answer;
//   - redirects are never followed: a 3xx answer is returned as it is
//     (Client) and callers that need a body refuse it (CheckAnswer);
//   - every answer is bounded in size (MaxBody) and in time: the headers
//     must come within HeaderTimeout of the request being sent, and a body
//     that sends nothing for IdleTimeout is cut. A streaming chat turn may
//     last as long as its events keep coming.
//
// Use New with the base URL and key, build requests with NewRequest (which
// adds the key) and send them with Client or Transport.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Defaults of Config's bounds.
const (
	// DefaultMaxBody bounds one answer's body. Dify's largest answers are
	// text-to-audio (a few MB) and long agent streams; 64 MiB leaves room
	// for both and none for a hostile server filling memory.
	DefaultMaxBody = 64 << 20
	// DefaultHeaderTimeout is the wait for the answer's headers after the
	// request (body included) was sent. Dify answers a streaming chat
	// turn's headers before the model starts.
	DefaultHeaderTimeout = 2 * time.Minute
	// DefaultIdleTimeout is the longest silence inside an answer's body.
	// Dify sends a ping event every 10 s while an agent works.
	DefaultIdleTimeout = 2 * time.Minute
)

// Config configures an Upstream.
type Config struct {
	// URL is the Service API base URL as clients use it, e.g.
	// https://api.dify.ai/v1. An empty path means "/v1"; credentials, a
	// query or a fragment are refused (ParseBase).
	URL string
	// Key is the app API key. It is sent as "Authorization: Bearer" by
	// NewRequest and only to URL's origin. Empty or blank is refused.
	Key string
	// Base carries the requests once the policy allowed them; nil = a
	// fresh http.Transport (proxy from the environment, dial and TLS
	// timeouts).
	Base http.RoundTripper
	// MaxBody, HeaderTimeout and IdleTimeout are the answer bounds; 0 =
	// the Default… value.
	MaxBody       int64
	HeaderTimeout time.Duration
	IdleTimeout   time.Duration
}

// Upstream is a configured real Dify and the policy for talking to it.
type Upstream struct {
	base      *url.URL
	key       string
	transport *policy
}

// ErrForeignOrigin is the error of a request for another origin than the
// upstream's; nothing was sent.
var ErrForeignOrigin = errors.New("not sent: the request is for another origin than the configured upstream")

// ErrTooLarge is the read error of an answer body past MaxBody.
var ErrTooLarge = errors.New("the upstream's answer is larger than the limit")

// ParseBase checks a Service API base URL: http or https, a host, no
// credentials (the key has its own flag), no query or fragment. A missing
// path becomes /v1; a trailing slash is dropped. Error messages never
// contain a password.
func ParseBase(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("no upstream URL (the Dify Service API base, e.g. https://api.dify.ai/v1)")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream %q: want http(s)://host[:port][/v1]", redactRaw(raw))
	}
	if u.User != nil {
		return nil, errors.New("the upstream URL must not contain credentials; the API key has its own flag or variable")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("upstream %q: must not have a query or fragment", u.Scheme+"://"+u.Host+u.Path)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if u.Path == "" {
		u.Path = "/v1"
	}
	u.RawPath = ""
	return u, nil
}

// redactRaw hides what could be a password in a URL that did not parse.
func redactRaw(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		return "…" + raw[i:]
	}
	return raw
}

// New checks cfg and returns the upstream.
func New(cfg Config) (*Upstream, error) {
	u, err := ParseBase(cfg.URL)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Key) == "" {
		return nil, errors.New("no upstream API key")
	}
	if strings.ContainsAny(cfg.Key, "\r\n") {
		return nil, errors.New("the upstream API key contains a line break")
	}
	p := &policy{
		origin:        origin(u),
		base:          cfg.Base,
		maxBody:       cfg.MaxBody,
		headerTimeout: cfg.HeaderTimeout,
		idleTimeout:   cfg.IdleTimeout,
	}
	if p.base == nil {
		p.base = NewBaseTransport()
	}
	if p.maxBody <= 0 {
		p.maxBody = DefaultMaxBody
	}
	if p.headerTimeout <= 0 {
		p.headerTimeout = DefaultHeaderTimeout
	}
	if p.idleTimeout <= 0 {
		p.idleTimeout = DefaultIdleTimeout
	}
	return &Upstream{base: u, key: cfg.Key, transport: p}, nil
}

// MaxIdleConns bounds the connections to the upstream kept open between
// requests. Live chats come in bursts (a page of users, a load test), each
// on its own connection while it streams; with net/http's usual 2 or 8
// idle, a burst of a thousand ended by closing all but those few, both
// sides' closes falling in the moment every stream ends, and the next burst
// dialled (and, against a real Dify, shook hands) again. An idle
// connection costs a file and is closed after IdleConnTimeout.
const MaxIdleConns = 1024

// NewBaseTransport is the transport under the policy: proxy from the
// environment, bounded dial and TLS handshake, a bounded idle pool.
func NewBaseTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          MaxIdleConns,
		MaxIdleConnsPerHost:   MaxIdleConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// URL is the base URL (path ending in /v1 or the configured path), for
// requests built elsewhere. It has no credentials.
func (u *Upstream) URL() *url.URL {
	c := *u.base
	return &c
}

// String is the base URL.
func (u *Upstream) String() string { return u.base.String() }

// Host is the upstream's host[:port], for provenance and log lines.
func (u *Upstream) Host() string { return u.base.Host }

// Endpoint is the absolute URL of an API path ("/info") with an optional
// raw query.
func (u *Upstream) Endpoint(apiPath, rawQuery string) string {
	c := *u.base
	c.Path = u.base.Path + apiPath
	c.RawQuery = rawQuery
	return c.String()
}

// NewRequest builds a request for an API path below the base URL, carrying
// the key.
func (u *Upstream) NewRequest(ctx context.Context, method, apiPath, rawQuery string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.Endpoint(apiPath, rawQuery), body)
	if err != nil {
		return nil, err
	}
	u.Authorize(req)
	return req, nil
}

// Authorize sets the key on a request built elsewhere (it still goes only
// to the upstream's origin: Transport refuses any other).
func (u *Upstream) Authorize(req *http.Request) {
	req.Header.Set("Authorization", "Bearer "+u.key)
}

// Transport is the policy as an http.RoundTripper: requests for another
// origin are refused, answers are bounded. A RoundTripper never follows
// redirects.
func (u *Upstream) Transport() http.RoundTripper { return u.transport }

// Client is an http.Client on Transport that returns redirects as they are
// instead of following them. timeout bounds each whole exchange (0 =
// only the policy's header and idle bounds).
func (u *Upstream) Client(timeout time.Duration) *http.Client {
	return NoRedirectClient(u.transport, timeout)
}

// NoRedirectClient is an http.Client on rt that never follows a redirect.
// Other clients in dify-mock (the one talking to a mock under test) use it
// so the rule is written once.
func NoRedirectClient(rt http.RoundTripper, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     rt,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// RedirectError is a redirect answered where a body was needed.
type RedirectError struct {
	Status   int
	Location string // scheme://host of the target only: a query could hold anything
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the upstream answered HTTP %d (a redirect to %s); redirects are not followed: point the upstream URL at the Service API itself", e.Status, e.Location)
}

// CheckAnswer returns a *RedirectError for a 3xx answer (closing its body),
// nil otherwise.
func CheckAnswer(resp *http.Response) error {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil
	}
	resp.Body.Close()
	loc := "an unnamed location"
	if l, err := resp.Location(); err == nil {
		loc = l.Scheme + "://" + l.Host
	}
	return &RedirectError{Status: resp.StatusCode, Location: loc}
}

func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// policy is the RoundTripper behind Transport.
type policy struct {
	origin        string
	base          http.RoundTripper
	maxBody       int64
	headerTimeout time.Duration
	idleTimeout   time.Duration
}

func (p *policy) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) != p.origin {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, ErrForeignOrigin
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watch{cancel: cancel}
	out := req.Clone(ctx)
	if req.Body == nil || req.Body == http.NoBody {
		w.arm(p.headerTimeout, errHeaderTimeout(p.headerTimeout))
	} else {
		// The header wait starts once the body is sent: a large upload
		// over a slow link is not the upstream's silence.
		out.Body = &sentBody{rc: req.Body, sent: func() { w.arm(p.headerTimeout, errHeaderTimeout(p.headerTimeout)) }}
	}
	resp, err := p.base.RoundTrip(out)
	if err != nil {
		w.stop()
		cancel(nil)
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
			return nil, c
		}
		return nil, err
	}
	w.arm(p.idleTimeout, errIdle(p.idleTimeout))
	resp.Body = &boundedBody{rc: resp.Body, left: p.maxBody, max: p.maxBody, w: w, idle: p.idleTimeout, ctx: ctx, done: func() { cancel(nil) }}
	return resp, nil
}

func errHeaderTimeout(d time.Duration) error {
	return fmt.Errorf("the upstream sent no answer headers within %s", d)
}

func errIdle(d time.Duration) error {
	return fmt.Errorf("the upstream's answer stalled: nothing for %s", d)
}

// watch cancels the request's context with a cause when its timer fires.
type watch struct {
	mu     sync.Mutex
	t      *time.Timer
	cancel context.CancelCauseFunc
}

func (w *watch) arm(d time.Duration, cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != nil {
		w.t.Stop()
	}
	w.t = time.AfterFunc(d, func() { w.cancel(cause) })
}

func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != nil {
		w.t.Stop()
	}
}

// sentBody calls sent once the request body has been read to its end.
type sentBody struct {
	rc   io.ReadCloser
	once sync.Once
	sent func()
}

func (b *sentBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.once.Do(b.sent)
	}
	return n, err
}

func (b *sentBody) Close() error {
	b.once.Do(b.sent)
	return b.rc.Close()
}

// boundedBody is an answer body cut at max bytes and after idle silence.
type boundedBody struct {
	rc        io.ReadCloser
	left, max int64
	w         *watch
	idle      time.Duration
	ctx       context.Context
	done      func()
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly max bytes from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w (%d bytes)", ErrTooLarge, b.max)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if n > 0 {
		b.w.arm(b.idle, errIdle(b.idle))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		if c := context.Cause(b.ctx); c != nil && !errors.Is(c, context.Canceled) {
			err = c
		}
	}
	return n, err
}

func (b *boundedBody) Close() error {
	b.w.stop()
	err := b.rc.Close()
	b.done()
	return err
}
