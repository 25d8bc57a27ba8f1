package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// The provider under faults during create (reads under 429/5xx are in
// TestAccProvider_retriesReads): a chat message is never sent twice, a
// failed create leaves nothing in Terraform state, and what Dify started for
// it is cleaned up when the provider knows of it.

// newMockEnvWrapped is newMockEnv with extra handlers between the request
// counter and the fault injector, so whatever they do is still counted.
func newMockEnvWrapped(t *testing.T, cfg mockserver.Config, wrap func(http.Handler) http.Handler) *mockEnv {
	t.Helper()
	set, err := cassette.LoadFS(cassettes.FS(), "built-in cassettes")
	if err != nil {
		t.Fatalf("loading cassettes: %v", err)
	}
	srv, err := mockserver.New(cfg)
	if err != nil {
		t.Fatalf("mockserver.New: %v", err)
	}
	env := &mockEnv{t: t, Set: set, counts: newRequestCounter(), faults: &faultInjector{}}
	ts := httptest.NewServer(env.counts.wrap(wrap(env.faults.wrap(srv))))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})
	env.BaseURL = ts.URL + "/v1"
	return env
}

// streamCutter cuts the connection of the next Remaining chat streams after
// their first Frames SSE frames, as a dropped network or a proxy timeout
// would: the mock sees a write error (its side of a real cut), the client
// an unterminated chunked body.
type streamCutter struct {
	mu        sync.Mutex
	Frames    int
	Remaining int
	Cut       int
}

func (c *streamCutter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		hit := r.Method == http.MethodPost && r.URL.Path == "/v1/chat-messages" && c.Remaining > 0
		if hit {
			c.Remaining--
		}
		c.mu.Unlock()
		if !hit {
			next.ServeHTTP(w, r)
			return
		}
		cw := &cuttingWriter{ResponseWriter: w, left: c.Frames}
		next.ServeHTTP(cw, r)
		if cw.cut {
			c.mu.Lock()
			c.Cut++
			c.mu.Unlock()
		}
	})
}

func (c *streamCutter) cuts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Cut
}

var errCut = errors.New("connection cut by the test")

// cuttingWriter passes frames through until left reaches 0, then hijacks and
// closes the connection.
type cuttingWriter struct {
	http.ResponseWriter
	left int
	cut  bool
}

func (w *cuttingWriter) Write(p []byte) (int, error) {
	if w.cut {
		return 0, errCut
	}
	n := 0
	for w.left > 0 && n < len(p) {
		i := bytes.Index(p[n:], []byte("\n\n"))
		if i < 0 {
			n = len(p)
			break
		}
		n += i + 2
		w.left--
	}
	if w.left > 0 {
		return w.ResponseWriter.Write(p)
	}
	if n > 0 {
		if _, err := w.ResponseWriter.Write(p[:n]); err != nil {
			return 0, err
		}
	}
	w.doCut()
	return n, errCut
}

func (w *cuttingWriter) doCut() {
	w.cut = true
	rc := http.NewResponseController(w.ResponseWriter)
	_ = rc.Flush()
	if conn, _, err := rc.Hijack(); err == nil {
		_ = conn.Close()
	}
}

// FlushError lets the mock's ResponseController flush through this writer;
// a cut before the first frame happens at the first flush (headers only).
func (w *cuttingWriter) FlushError() error {
	if w.cut {
		return errCut
	}
	if w.left <= 0 {
		w.doCut()
		return errCut
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *cuttingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// chatsSent counts POST /chat-messages (stop requests excluded).
func chatsSent(env *mockEnv) int { return env.counts.get("POST /chat-messages") }

// TestAccConversationResource_createErrorsAreNotRetried: 500, 503 and 429
// (with Retry-After) on the first message fail the create with the status
// and code, the message reaches the server exactly once, nothing is
// recorded in state, and the same configuration then applies cleanly.
func TestAccConversationResource_createErrorsAreNotRetried(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	config := conversationConfig(env, `query = "Hello"`)
	var before int
	inject := func(status int, code, retryAfter string) func() {
		return func() {
			before = chatsSent(env)
			env.faults.add(&fault{Method: "POST", Path: "/chat-messages", Status: status, Code: code, RetryAfter: retryAfter, Remaining: 1})
		}
	}
	checkSentOnce := func() {
		if got := chatsSent(env) - before; got != 1 {
			t.Errorf("the first message was sent %d times, want exactly once", got)
		}
	}
	step := func(status int, code, retryAfter string) resource.TestStep {
		return resource.TestStep{
			PreConfig: inject(status, code, retryAfter),
			Config:    config,
			ExpectError: errRE("Unable to create conversation", fmt.Sprintf(`HTTP %d with code "%s"`, status, code),
				"never re-sent automatically", "run terraform apply again"),
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			step(500, "internal_server_error", ""),
			{PreConfig: checkSentOnce, Config: env.providerBlock(), ConfigStateChecks: []statecheck.StateCheck{expectNoResources{}}, Check: expectRemaining(env, 0)},
			step(503, "service_unavailable", ""),
			{PreConfig: checkSentOnce, Config: env.providerBlock(), ConfigStateChecks: []statecheck.StateCheck{expectNoResources{}}, Check: expectRemaining(env, 0)},
			step(429, "too_many_requests", "1"),
			{PreConfig: checkSentOnce, Config: env.providerBlock(), ConfigStateChecks: []statecheck.StateCheck{expectNoResources{}}, Check: expectRemaining(env, 0)},
			{
				// Healthy again: one message, one conversation.
				PreConfig: func() { before = chatsSent(env) },
				Config:    config,
				Check: func(*terraform.State) error {
					if got := chatsSent(env) - before; got != 1 {
						return fmt.Errorf("apply sent %d chat messages, want 1", got)
					}
					return expectRemaining(env, 1)(nil)
				},
			},
		},
	})
}

// TestAccConversationResource_cutStream cuts the reply stream after three
// frames: the create fails naming the early end, stops the run and deletes
// the conversation Dify had started, records nothing in state, and sent the
// message once. The same configuration then applies cleanly.
func TestAccConversationResource_cutStream(t *testing.T) {
	cutter := &streamCutter{Frames: 3, Remaining: 1}
	env := newMockEnvWrapped(t, mockserver.Config{}, cutter.wrap)
	rec, _ := env.cassetteTurn("tool-use")
	if len(rec.Frames) <= 3 {
		t.Fatal("tool-use has too few frames to cut after the third")
	}
	config := conversationConfig(env, "query = "+hclString(rec.Request.Query))
	var before int
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { before = chatsSent(env) },
				Config:    config,
				ExpectError: errRE("Unable to create conversation", "reply stream ended before Dify finished",
					"was deleted.", "Nothing was recorded in Terraform state"),
			},
			{
				PreConfig: func() {
					if cutter.cuts() != 1 {
						t.Errorf("the stream was cut %d times, want 1", cutter.cuts())
					}
					if got := chatsSent(env) - before; got != 1 {
						t.Errorf("the first message was sent %d times, want exactly once", got)
					}
					if got := env.counts.matching("DELETE /conversations/"); got != 1 {
						t.Errorf("%d DELETEs of the half-made conversation, want 1", got)
					}
				},
				Config:            env.providerBlock(),
				ConfigStateChecks: []statecheck.StateCheck{expectNoResources{}},
				Check:             expectRemaining(env, 0),
			},
			{
				PreConfig: func() { before = chatsSent(env) },
				Config:    config,
				Check: func(*terraform.State) error {
					if got := chatsSent(env) - before; got != 1 {
						return fmt.Errorf("apply sent %d chat messages, want 1", got)
					}
					return expectRemaining(env, 1)(nil)
				},
			},
		},
	})
}

// TestAccConversationResource_cutBeforeTheFirstFrame: cut right after the
// response headers, the provider never learns the conversation id. The
// create fails saying so, records nothing in state and sent the message
// once; the conversation Dify started stays behind (the limit of what a
// client can clean up), which the final check documents.
func TestAccConversationResource_cutBeforeTheFirstFrame(t *testing.T) {
	cutter := &streamCutter{Frames: 0, Remaining: 1}
	env := newMockEnvWrapped(t, mockserver.Config{}, cutter.wrap)
	var before int
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 1),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { before = chatsSent(env) },
				Config:    conversationConfig(env, `query = "Hello"`),
				ExpectError: errRE("Unable to create conversation", "Dify had not named a conversation before the failure",
					"Nothing was recorded in Terraform state"),
			},
			{
				PreConfig: func() {
					if cutter.cuts() != 1 {
						t.Errorf("the stream was cut %d times, want 1", cutter.cuts())
					}
					if got := chatsSent(env) - before; got != 1 {
						t.Errorf("the first message was sent %d times, want exactly once", got)
					}
					if got := env.counts.matching("DELETE /"); got != 0 {
						t.Errorf("%d DELETEs without a known conversation", got)
					}
				},
				Config:            env.providerBlock(),
				ConfigStateChecks: []statecheck.StateCheck{expectNoResources{}},
			},
		},
	})
}
