package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/difyops/terraform-provider-dify/dify"
)

func TestDescribeAPIError(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &dify.APIError{Status: 404, Code: "not_found", Message: "Conversation Not Exists."})
	got := describeError(err, "Next step here.")
	for _, want := range []string{"HTTP 404", `"not_found"`, "Conversation Not Exists.", "Next step here."} {
		if !strings.Contains(got, want) {
			t.Errorf("detail %q lacks %q", got, want)
		}
	}
}

func TestDescribeErrorHints(t *testing.T) {
	cases := map[int]string{401: EnvAPIKey, 403: "disabled", 429: "retry_max_attempts", 503: "server-side"}
	for status, want := range cases {
		got := describeError(&dify.APIError{Status: status, Code: "x", Message: "m"}, "")
		if !strings.Contains(got, want) {
			t.Errorf("status %d: %q lacks %q", status, got, want)
		}
	}
	if got := describeError(&dify.APIError{Status: 400, Code: "invalid_param", Message: "bad", Params: "name"}, ""); !strings.Contains(got, `parameter "name"`) {
		t.Errorf("params not shown: %q", got)
	}
	if got := describeError(errors.New("dial tcp: refused"), ""); !strings.Contains(got, "base_url") || !strings.Contains(got, "refused") {
		t.Errorf("transport error detail %q", got)
	}
	if got := describeError(context.DeadlineExceeded, ""); !strings.Contains(got, "in time") {
		t.Errorf("deadline detail %q", got)
	}
}

func TestRedactorNeverLeaksKey(t *testing.T) {
	const key = "app-SuperSecretKey123"
	r := redactor(key)
	var diags diag.Diagnostics
	r.addError(&diags, "Unable to x", errors.New("proxy echoed Authorization: Bearer "+key), "next "+key)
	for _, d := range diags {
		if strings.Contains(d.Summary()+d.Detail(), key) {
			t.Fatalf("key leaked: %q", d.Detail())
		}
		if !strings.Contains(d.Detail(), "[redacted api key]") {
			t.Fatalf("no redaction marker: %q", d.Detail())
		}
	}
	// Too-short "keys" are not used for replacement (would mangle text).
	if got := redactor("ab").clean("abc"); got != "abc" {
		t.Fatalf("short key replaced text: %q", got)
	}
}

// The diagnostic says what the client really did: how many attempts, or why
// the request was sent only once. Before, every 429 claimed "the provider
// already retried with backoff", a create's included.
func TestDescribeErrorSaysWhatWasRetried(t *testing.T) {
	const quota = `{"code":"too_many_requests","message":"Too many requests. Please try again later.","status":429}`
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch r.Header.Get("X-Test") {
		case "503":
			w.WriteHeader(503)
			_, _ = w.Write([]byte(`{"code":"internal_server_error","message":"down","status":503}`))
		default:
			w.WriteHeader(429)
			_, _ = w.Write([]byte(quota))
		}
	}))
	defer srv.Close()
	client := func(t *testing.T, attempts int, header string) *dify.Client {
		hc := &http.Client{Transport: headerTransport{header}}
		c, err := dify.NewClient(srv.URL+"/v1", "app-k", dify.WithHTTPClient(hc),
			dify.WithRetryPolicy(dify.RetryPolicy{MaxAttempts: attempts, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	chat := func(c *dify.Client) error {
		_, err := c.SendChatMessage(context.Background(), dify.ChatRequest{Query: "q", User: "u"})
		return err
	}
	for _, tc := range []struct {
		name     string
		err      func() error
		requests int32
		want     []string
		not      []string
	}{
		{"429 on a create, retried until the limit", func() error { return chat(client(t, 3, "")) }, 3,
			[]string{"made 3 attempts (retry_max_attempts = 3)", "rate limiting"}, []string{"sent once", "already retried"}},
		{"503 on a create, not retried", func() error { return chat(client(t, 3, "503")) }, 1,
			[]string{"sent once and not retried: it creates something", "does not prove"}, []string{"attempts (", "were retried"}},
		{"429 on a read with retries off", func() error { _, err := client(t, 1, "").AppInfo(context.Background()); return err }, 1,
			[]string{"retries are off (retry_max_attempts = 1)"}, []string{"already retried"}},
		{"503 on a read, retried", func() error { _, err := client(t, 2, "503").AppInfo(context.Background()); return err }, 2,
			[]string{"made 2 attempts (retry_max_attempts = 2)", "server-side"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requests.Store(0)
			got := describeError(tc.err(), "")
			if n := requests.Load(); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("detail lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("detail has %q:\n%s", w, got)
				}
			}
		})
	}
}

// headerTransport marks each request with X-Test so one server can answer
// each case differently.
type headerTransport struct{ value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test", h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// A failed create only says nothing was created when the answer proves it.
func TestProvesNothingCreated(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // the request arrived; answer nothing until the test ends
	}))
	defer srv.Close()
	defer close(release)
	c, err := dify.NewClient(srv.URL+"/v1", "app-k")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = c.SendChatMessage(ctx, dify.ChatRequest{Query: "q", User: "u"})
	if err == nil || dify.ProvesNothingCreated(err) {
		t.Errorf("a timeout after the request was sent proves nothing: %v", err)
	}
	if dify.ProvesNothingCreated(&dify.APIError{Status: 502}) || !dify.ProvesNothingCreated(&dify.APIError{Status: 429}) {
		t.Error("5xx must not, 4xx must prove nothing was created")
	}
	if got := findConversation("alice"); !strings.Contains(got, "terraform import dify_conversation.NAME alice/CONVERSATION_ID") {
		t.Errorf("findConversation = %q", got)
	}
}
