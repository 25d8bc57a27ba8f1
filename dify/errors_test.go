package dify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestAPIErrorFromResponses(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name    string
		status  int
		ctype   string
		body    string
		want    APIError
		wantMsg string
	}{
		{"envelope", 404, "application/json", `{"code":"not_found","message":"Conversation Not Exists.","status":404}`,
			APIError{Status: 404, Code: "not_found", Message: "Conversation Not Exists."},
			"dify: HTTP 404 not_found: Conversation Not Exists."},
		{"params variant", 400, "application/json", `{"code":"invalid_param","message":"Arg user must be provided.","params":"user","status":400}`,
			APIError{Status: 400, Code: "invalid_param", Message: "Arg user must be provided.", Params: "user"},
			"dify: HTTP 400 invalid_param (params: user): Arg user must be provided."},
		{"empty message (file_too_large quirk)", 413, "application/json", `{"code":"file_too_large","message":"","status":413}`,
			APIError{Status: 413, Code: "file_too_large"}, "dify: HTTP 413 file_too_large"},
		{"multi-line pydantic message", 400, "application/json", `{"code":"invalid_param","message":"1 validation error for X\nname\n  Field required","status":400}`,
			APIError{Status: 400, Code: "invalid_param", Message: "1 validation error for X\nname\n  Field required"},
			"dify: HTTP 400 invalid_param: 1 validation error for X\nname\n  Field required"},
		{"envelope status disagrees: HTTP wins", 500, "application/json", `{"code":"unknown","message":"boom","status":400}`,
			APIError{Status: 500, Code: "unknown", Message: "boom"}, "dify: HTTP 500 unknown: boom"},
		{"odd types in envelope", 400, "application/json", `{"code":42,"message":{"a":"b"}}`,
			APIError{Status: 400, Code: "42", Message: `{"a":"b"}`}, `dify: HTTP 400 42: {"a":"b"}`},
		{"HTML from a proxy", 502, "text/html", "<html>\n<body>  <h1>502 Bad Gateway</h1>\n</body></html>\n",
			APIError{Status: 502, Message: "HTML page: 502 Bad Gateway"},
			"dify: HTTP 502: HTML page: 502 Bad Gateway"},
		{"Werkzeug's 404 page (a base URL without /v1)", 404, "text/html; charset=utf-8",
			"<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.</p>\n",
			APIError{Status: 404, Message: "HTML page: 404 Not Found: The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again."},
			"dify: HTTP 404: HTML page: 404 Not Found: The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again."},
		{"a page without a content type, with script and entities", 500, "",
			"<!DOCTYPE html><html><head><title>Oops &amp; sorry</title><style>p{}</style></head><body><script>var x=1</script><p>Try &lt;later&gt;</p></body></html>",
			APIError{Status: 500, Message: "HTML page: Oops & sorry: Try <later>"},
			"dify: HTTP 500: HTML page: Oops & sorry: Try <later>"},
		{"JSON without envelope", 404, "application/json", `{"detail":"Not Found"}`,
			APIError{Status: 404, Message: `{"detail":"Not Found"}`}, `dify: HTTP 404: {"detail":"Not Found"}`},
		{"empty body", 503, "", "", APIError{Status: 503}, "dify: HTTP 503 Service Unavailable"},
		{"huge body is bounded", 500, "text/plain", long,
			APIError{Status: 500, Message: long[:maxErrorSnippet] + "…"}, "dify: HTTP 500: " + long[:maxErrorSnippet] + "…"},
		{"key echoed by a proxy is redacted", 400, "text/plain", "bad header Authorization: Bearer " + testKey + " from " + testKey,
			APIError{Status: 400, Message: "bad header Authorization: Bearer [redacted] from [redacted]"},
			"dify: HTTP 400: bad header Authorization: Bearer [redacted] from [redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}}
			c := newTestClient(t, rec, WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
			_, err := c.AppInfo(testContext(t))
			apiErr, ok := AsAPIError(err)
			if !ok {
				t.Fatalf("err = %T %v", err, err)
			}
			if *apiErr != tc.want {
				t.Errorf("APIError = %#v\nwant       %#v", *apiErr, tc.want)
			}
			if err.Error() != tc.wantMsg {
				t.Errorf("Error() = %q\nwant      %q", err.Error(), tc.wantMsg)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Error("error text contains the API key")
			}
		})
	}
}

func TestAPIErrorHelpers(t *testing.T) {
	for _, tc := range []struct {
		err                                    error
		notFound, unauth, forbidden, ratelimit bool
	}{
		{&APIError{Status: 404}, true, false, false, false},
		{fmt.Errorf("reading: %w", &APIError{Status: 401}), false, true, false, false},
		{&APIError{Status: 403, Code: "forbidden"}, false, false, true, false},
		{&APIError{Status: 429}, false, false, false, true},
		{&APIError{Status: 404, Stream: true}, false, false, false, false}, // a failed turn, not a missing resource
		{errors.New("plain"), false, false, false, false},
		{nil, false, false, false, false},
	} {
		if IsNotFound(tc.err) != tc.notFound || IsUnauthorized(tc.err) != tc.unauth ||
			IsForbidden(tc.err) != tc.forbidden || IsRateLimited(tc.err) != tc.ratelimit {
			t.Errorf("helpers disagree for %v", tc.err)
		}
	}
	if _, ok := AsAPIError(errors.New("x")); ok {
		t.Error("AsAPIError matched a plain error")
	}
	e := &APIError{Status: 400, Code: "agent_run_limit_exceeded", Message: "limit (agent_run_id=r1)", Stream: true}
	if e.Error() != "dify: stream error (status 400) agent_run_limit_exceeded: limit (agent_run_id=r1)" {
		t.Errorf("stream Error() = %q", e.Error())
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{"", 0},
		{"7", 7 * time.Second},
		{" 2 ", 2 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"99999999999999999999", 0}, // overflows int64: not a number we trust
		{"9223372036", 9223372036 * time.Second},
	} {
		h := http.Header{}
		if tc.value != "" {
			h.Set("Retry-After", tc.value)
		}
		if got := retryAfter(h, now); got != tc.want {
			t.Errorf("Retry-After %q = %v, want %v", tc.value, got, tc.want)
		}
	}
}

func TestDecodeFailures(t *testing.T) {
	rec := &recorder{respond: jsonReply(200, `{"name": "x", `)}
	_, err := newTestClient(t, rec).AppInfo(testContext(t))
	if err == nil || !strings.Contains(err.Error(), "dify: GET /info: decoding HTTP 200 response") {
		t.Errorf("truncated JSON: %v", err)
	}
	rec.answer(func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(200) })
	_, err = newTestClient(t, rec).AppInfo(testContext(t))
	if err == nil || !strings.Contains(err.Error(), "empty body") {
		t.Errorf("empty body: %v", err)
	}
}

func TestTransportErrorNamesOperation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connection refused
	c, err := NewClient("http://"+addr+"/v1", testKey, WithUser("secret-user"), WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListConversations(testContext(t), ListConversationsParams{})
	if err == nil || !strings.HasPrefix(err.Error(), "dify: GET /conversations: ") || !isDialError(err) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "secret-user") || strings.Contains(err.Error(), testKey) {
		t.Errorf("transport error leaks the query or key: %v", err)
	}
	if _, ok := AsAPIError(err); ok {
		t.Error("a transport failure became an APIError")
	}
}

func TestLocalErrorsAreNotRetried(t *testing.T) {
	rec := &recorder{respond: jsonReply(200, `{}`)}
	logs := &logSink{}
	c := newTestClient(t, rec, WithLogger(logs.logf))
	var nilCtx context.Context
	if _, err := c.AppInfo(nilCtx); err == nil || !strings.Contains(err.Error(), "nil context") {
		t.Errorf("nil context: %v", err)
	}
	// A request that cannot be built fails once, without a retry.
	_, err := c.send(testContext(t), &request{method: "BAD METHOD", path: "/info"})
	if err == nil || !strings.HasPrefix(err.Error(), "dify: BAD METHOD /info: ") {
		t.Errorf("bad method: %v", err)
	}
	if rec.count() != 0 || len(logs.lines) != 0 {
		t.Errorf("requests = %d, retries logged = %d", rec.count(), len(logs.lines))
	}
}
