package dify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultBaseURL is Dify Cloud's Service API base (docs/api §1.1).
const DefaultBaseURL = "https://api.dify.ai/v1"

// Version names this client in the User-Agent; release builds override it.
var Version = "dev"

// ProjectURL is the home page named in the default User-Agent.
const ProjectURL = "https://github.com/difyops/terraform-provider-dify"

// DefaultUserAgent is the User-Agent sent unless WithUserAgent overrides it:
// "terraform-provider-dify/<Version> (+<ProjectURL>)".
func DefaultUserAgent() string {
	return "terraform-provider-dify/" + Version + " (+" + ProjectURL + ")"
}

// Client talks to one Dify app (the API key selects the app, docs/api §1.1). It is
// safe for concurrent use.
type Client struct {
	baseURL    string
	apiKey     string
	user       string
	userAgent  string
	httpClient *http.Client
	retry      RetryPolicy
	logf       func(ctx context.Context, msg string, fields map[string]any)
	streamIdle time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (transport, proxy, TLS). Its Timeout
// should stay zero: chat streams can run for many minutes (docs/api §18); bound
// calls with the context instead. Default: a client on http.DefaultTransport.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.httpClient = h } }

// WithUser sets the default end-user id (docs/api §1.3), used by every call whose
// own user is empty.
func WithUser(user string) Option { return func(c *Client) { c.user = user } }

// WithUserAgent replaces DefaultUserAgent.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRetryPolicy replaces DefaultRetryPolicy; zero fields take the defaults.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithLogger receives one line per retry with the fields method, path,
// status (0 for a transport failure), error, attempt, max_attempts and
// wait. Fields never contain the API key, request bodies or query strings.
func WithLogger(f func(ctx context.Context, msg string, fields map[string]any)) Option {
	return func(c *Client) { c.logf = f }
}

// NewClient returns a client for baseURL (e.g. "http://127.0.0.1:5001/v1";
// a trailing slash is ignored) authenticating with apiKey (docs/api §1.1).
// Surrounding whitespace in apiKey is dropped. An empty key is allowed
// because ServerInfo needs none; every other call then fails with 401.
func NewClient(baseURL, apiKey string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("dify: invalid base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("dify: invalid base URL %q: want http(s)://host[:port][/path]", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("dify: invalid base URL %q: must not have a query or fragment", u.Redacted())
	}
	apiKey = strings.TrimSpace(apiKey)
	if strings.ContainsFunc(apiKey, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		// Deliberately not quoting the key: errors must never carry it.
		return nil, errors.New("dify: API key contains whitespace or control characters")
	}
	c := &Client{
		baseURL: strings.TrimRight(u.String(), "/"),
		apiKey:  apiKey,
		retry:   DefaultRetryPolicy(),
	}
	for _, opt := range opts {
		opt(c)
	}
	if c.httpClient == nil {
		c.httpClient = &http.Client{}
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent()
	}
	c.retry = c.retry.withDefaults()
	return c, nil
}

// User returns the default end-user id used when a call does not name one.
func (c *Client) User() string { return c.user }

// BaseURL returns the normalised base URL (no trailing slash).
func (c *Client) BaseURL() string { return c.baseURL }

func (c *Client) userOr(user string) string {
	if user != "" {
		return user
	}
	return c.user
}

// request describes one operation; send turns it into HTTP attempts.
type request struct {
	method string
	path   string // relative to the base URL, escaped, starting with "/"
	query  url.Values
	body   requestBody // nil for none
	accept string
	noAuth bool
	class  retryClass
}

// requestBody produces the body of each attempt.
type requestBody interface {
	// open returns the body for one attempt and its length (-1 if unknown).
	open() (io.Reader, int64, error)
	contentType() string
	// replayable reports whether open may be called for another attempt.
	replayable() bool
	// readErr is a failure reading the caller's data, never retried.
	readErr() error
}

type jsonBody []byte

func newJSONBody(v any) (jsonBody, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("dify: encoding request: %w", err)
	}
	return b, nil
}

func (b jsonBody) open() (io.Reader, int64, error) { return bytes.NewReader(b), int64(len(b)), nil }
func (jsonBody) contentType() string               { return "application/json" }
func (jsonBody) replayable() bool                  { return true }
func (jsonBody) readErr() error                    { return nil }

// send performs r, retrying as r.class and the policy allow. It returns a
// 2xx response (the caller closes its body) or an error: *APIError for an
// HTTP error status, a wrapped transport error otherwise.
func (c *Client) send(ctx context.Context, r *request) (*http.Response, error) {
	if ctx == nil {
		return nil, fmt.Errorf("dify: %s %s: nil context", r.method, r.path)
	}
	report := func(attempt int, stop RetryStop, wait time.Duration, err error) error {
		return &RetryError{Err: err, RetryReport: RetryReport{Attempts: attempt, MaxAttempts: c.retry.MaxAttempts,
			Stop: stop, Wait: wait, CreatesOnce: r.class == retryUnsentOnly}}
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.attempt(ctx, r)
		status, retry, hint := 0, false, time.Duration(0)
		var local *localError
		switch {
		case errors.As(err, &local):
			return nil, fmt.Errorf("dify: %s %s: %w", r.method, r.path, local.err)
		case err != nil:
			if r.body != nil {
				if rerr := r.body.readErr(); rerr != nil {
					return nil, fmt.Errorf("dify: %s %s: reading upload: %w", r.method, r.path, rerr)
				}
			}
			retry = r.class.retryError(ctx, err)
			err = transportError(r, err)
		case resp.StatusCode >= 200 && resp.StatusCode <= 299:
			return resp, nil
		default:
			apiErr := c.readAPIError(resp)
			status, retry, hint = apiErr.Status, r.class.retryStatus(apiErr), apiErr.RetryAfter
			err = apiErr
		}
		switch {
		case !retry:
			return nil, report(attempt, RetryNotAllowed, 0, err)
		case attempt >= c.retry.MaxAttempts:
			return nil, report(attempt, RetryExhausted, 0, err)
		case r.body != nil && !r.body.replayable():
			return nil, report(attempt, RetryBodySent, 0, err)
		}
		wait := c.retry.wait(attempt, hint)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			// The retry could not finish in time; report the real failure.
			return nil, report(attempt, RetryNoTime, wait, err)
		}
		c.log(ctx, "dify: retrying request", map[string]any{
			"method":       r.method,
			"path":         r.path,
			"status":       status,
			"error":        err.Error(),
			"attempt":      attempt,
			"max_attempts": c.retry.MaxAttempts,
			"wait":         wait.String(),
		})
		if !sleep(ctx, wait) {
			return nil, report(attempt, RetryCanceled, wait,
				fmt.Errorf("dify: %s %s: %w while waiting to retry after: %w", r.method, r.path, ctx.Err(), err))
		}
	}
}

func (c *Client) attempt(ctx context.Context, r *request) (*http.Response, error) {
	target := c.baseURL + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var (
		body   io.Reader
		length int64
	)
	if r.body != nil {
		var err error
		if body, length, err = r.body.open(); err != nil {
			return nil, &localError{err}
		}
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, &localError{err}
	}
	if r.body != nil {
		req.ContentLength = length
		req.Header.Set("Content-Type", r.body.contentType())
	}
	req.Header.Set("User-Agent", c.userAgent)
	accept := r.accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	if !r.noAuth {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	return c.httpClient.Do(req)
}

// localError is a failure to build a request: nothing was sent and a retry
// would fail the same way.
type localError struct{ err error }

func (e *localError) Error() string { return e.err.Error() }

// transportError names the operation and drops url.Error's copy of the URL
// (the operation already says where; the query may hold user ids).
func transportError(r *request, err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return fmt.Errorf("dify: %s %s: %w", r.method, r.path, err)
}

func (c *Client) readAPIError(resp *http.Response) *APIError {
	defer drainClose(resp.Body)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return newAPIError(resp.StatusCode, resp.Header, body, c.apiKey)
}

// drainClose reads a little of what is left so the connection can be
// reused, then closes.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	_ = body.Close()
}

func (c *Client) log(ctx context.Context, msg string, fields map[string]any) {
	if c.logf != nil {
		c.logf(ctx, msg, fields)
	}
}

// do sends r and decodes a 2xx JSON body into out (ignored when out is nil).
func (c *Client) do(ctx context.Context, r *request, out any) error {
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer drainClose(resp.Body)
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty body")
		}
		return fmt.Errorf("dify: %s %s: decoding HTTP %d response: %w", r.method, r.path, resp.StatusCode, err)
	}
	return nil
}

func pathEscape(segment string) string { return url.PathEscape(segment) }
