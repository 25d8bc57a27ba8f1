package dify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrTruncatedStream reports a chat stream that ended before its terminal
// message_end or error event (docs/api §2.4–2.5): the connection dropped, the
// server crashed or a proxy cut the response. The turn may still have been
// recorded by Dify; Collect returns whatever arrived alongside this error.
var ErrTruncatedStream = errors.New("dify: chat stream ended before message_end")

// APIError is a Dify error envelope (docs/api §1.4) or an in-stream error event
// (docs/api §2.5).
type APIError struct {
	// Status is the HTTP status of the response. For an in-stream error
	// event (Stream true) it is the event's `status` field, while the HTTP
	// status of the stream itself was 200.
	Status int
	// Code is Dify's machine-readable code, e.g. "not_found". Empty when the
	// body was not a Dify envelope (a proxy's HTML page, for example).
	Code string
	// Message is Dify's message, or a trimmed, bounded snippet of a body
	// that was not a Dify envelope.
	Message string
	// Params names the offending field in the older `params` variant of the
	// envelope (docs/api §1.4).
	Params string
	// Stream is true when the error arrived as an `error` event inside a
	// chat stream rather than as an HTTP error response.
	Stream bool
	// RetryAfter is the server's Retry-After hint (zero when absent). The
	// client already waited it out between attempts where it retried;
	// RetryReportOf says whether it did.
	RetryAfter time.Duration
}

// Error formats the error like `dify: HTTP 404 not_found: Conversation Not Exists.`.
// It only contains what the server sent (with the client's API key redacted)
// and never the request's credentials.
func (e *APIError) Error() string {
	var b strings.Builder
	if e.Stream {
		fmt.Fprintf(&b, "dify: stream error (status %d)", e.Status)
	} else {
		fmt.Fprintf(&b, "dify: HTTP %d", e.Status)
	}
	if e.Code != "" {
		b.WriteString(" ")
		b.WriteString(e.Code)
	}
	if e.Params != "" {
		fmt.Fprintf(&b, " (params: %s)", e.Params)
	}
	switch {
	case e.Message != "":
		b.WriteString(": ")
		b.WriteString(e.Message)
	case e.Code == "" && http.StatusText(e.Status) != "":
		b.WriteString(" ")
		b.WriteString(http.StatusText(e.Status))
	}
	return b.String()
}

// AsAPIError returns the *APIError in err's chain, if any.
func AsAPIError(err error) (*APIError, bool) {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr, true
	}
	return nil, false
}

// hasStatus matches HTTP error responses only: an in-stream error event
// carries a status too, but it describes a failed turn, not a missing or
// forbidden resource.
func hasStatus(err error, status int) bool {
	apiErr, ok := AsAPIError(err)
	return ok && !apiErr.Stream && apiErr.Status == status
}

// IsNotFound reports whether err is an APIError with HTTP 404 (for example
// `Conversation Not Exists.`, docs/api §7–§8).
func IsNotFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

// IsUnauthorized reports whether err is an APIError with HTTP 401: a
// missing, malformed or unknown API key (docs/api §1.2).
func IsUnauthorized(err error) bool { return hasStatus(err, http.StatusUnauthorized) }

// IsForbidden reports whether err is an APIError with HTTP 403: the app is
// deleted, disabled or its workspace archived (docs/api §1.2).
func IsForbidden(err error) bool { return hasStatus(err, http.StatusForbidden) }

// IsRateLimited reports whether err is an APIError with HTTP 429 (docs/api §1.4,
// §2.3).
func IsRateLimited(err error) bool { return hasStatus(err, http.StatusTooManyRequests) }

// Bounds for error bodies: enough for any Dify envelope, small enough that a
// misbehaving proxy cannot make an error message huge.
const (
	maxErrorBody    = 64 << 10
	maxErrorSnippet = 512
)

// newAPIError builds an APIError from a non-2xx response body. secret, when
// non-empty, is removed from anything copied out of the body: some proxies
// echo request headers into their error pages.
func newAPIError(status int, header http.Header, body []byte, secret string) *APIError {
	e := &APIError{Status: status, RetryAfter: retryAfter(header, time.Now())}
	var env struct {
		Code    json.RawMessage `json:"code"`
		Message json.RawMessage `json:"message"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &env) == nil {
		e.Code = redact(rawText(env.Code), secret)
		e.Message = redact(rawText(env.Message), secret)
		e.Params = redact(rawText(env.Params), secret)
	}
	if e.Code == "" && e.Message == "" {
		if page, ok := htmlSummary(header.Get("Content-Type"), body); ok {
			e.Message = snippet(redact(page, secret))
		} else {
			e.Message = snippet(redact(string(body), secret))
		}
	}
	return e
}

var (
	htmlHidden = regexp.MustCompile(`(?is)<(script|style|head)\b.*?</(script|style|head)\s*>`)
	htmlTitle  = regexp.MustCompile(`(?is)<title\b[^>]*>(.*?)</title\s*>`)
	htmlTag    = regexp.MustCompile(`(?s)<[^>]*>`)
)

// htmlSummary turns a web page that came instead of Dify's JSON error (a
// Werkzeug 404 page for a base URL that misses /v1, a proxy's 502 page)
// into one line: "HTML page: <title>: <its text>", without markup. ok is
// false for bodies that are not HTML.
func htmlSummary(contentType string, body []byte) (string, bool) {
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	head := strings.ToLower(strings.TrimSpace(string(body[:min(len(body), 512)])))
	if mt != "text/html" && mt != "application/xhtml+xml" && !strings.HasPrefix(head, "<!doctype html") && !strings.HasPrefix(head, "<html") {
		return "", false
	}
	page := string(body)
	title := ""
	if m := htmlTitle.FindStringSubmatch(page); m != nil {
		title = strings.Join(strings.Fields(html.UnescapeString(htmlTag.ReplaceAllString(m[1], " "))), " ")
		page = strings.Replace(page, m[0], " ", 1)
	}
	text := strings.Join(strings.Fields(html.UnescapeString(htmlTag.ReplaceAllString(htmlHidden.ReplaceAllString(page, " "), " "))), " ")
	// Werkzeug repeats the title as the page's first heading.
	if title != "" {
		if rest, ok := strings.CutPrefix(text, strings.TrimLeft(title, "0123456789 ")); ok {
			text = strings.TrimSpace(rest)
		}
	}
	parts := []string{"HTML page"}
	for _, p := range []string{title, text} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ": "), true
}

// rawText renders a JSON value as text: strings unquoted, null as "", and
// anything else (a number, an object) as its compact JSON, so an unexpected
// type in the envelope never hides the error.
func rawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// snippet trims and bounds a non-envelope body so it can go into an error
// message: whitespace runs collapse to one space and the result is cut at
// maxErrorSnippet bytes on a rune boundary.
func snippet(body string) string {
	s := strings.Join(strings.Fields(body), " ")
	if len(s) <= maxErrorSnippet {
		return s
	}
	cut := maxErrorSnippet
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

var bearerPattern = regexp.MustCompile(`(?i)(bearer\s+)[^\s"',;]+`)

func redact(s, secret string) string {
	if secret != "" {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return bearerPattern.ReplaceAllString(s, "${1}[redacted]")
}

// retryAfter parses a Retry-After header given as delay-seconds or as an
// HTTP date (RFC 9110 §10.2.3). Invalid or past values yield zero.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		const maxSecs = int64(1<<63-1) / int64(time.Second)
		if secs > maxSecs {
			secs = maxSecs
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
