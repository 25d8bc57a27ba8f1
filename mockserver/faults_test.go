package mockserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
)

// Fault tests drive the mock through the project's dify client and assert
// what the client observes (docs/mock/faults.md).

// faultEnv is a running mock that counts the requests reaching it.
type faultEnv struct {
	*env
	hits atomic.Int64
}

func newFaultEnv(t *testing.T, cfg mockserver.Config) *faultEnv {
	t.Helper()
	if cfg.Cassettes == nil {
		cfg.Cassettes = testSet(t, testParams)
	}
	srv, err := mockserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fe := &faultEnv{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fe.hits.Add(1)
		srv.ServeHTTP(w, r)
	}))
	fe.env = &env{t: t, srv: srv, ts: ts, set: cfg.Cassettes, hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})
	return fe
}

// withFault adds X-Dify-Mock-Fault to requests (only the first one when
// firstOnly), so a retry can be told apart from the failed attempt.
type withFault struct {
	spec      string
	firstOnly bool
	speed     string // X-Dify-Mock-Speed, "" = the server's
	sent      atomic.Int64
	base      http.RoundTripper
}

func (f *withFault) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if n := f.sent.Add(1); f.spec != "" && (!f.firstOnly || n == 1) {
		r.Header.Set(fault.Header, f.spec)
	}
	if f.speed != "" {
		r.Header.Set(mockserver.HeaderSpeed, f.speed)
	}
	return f.base.RoundTrip(r)
}

// client returns a dify client whose requests carry spec; each client has
// its own connections (no keep-alive), so request counts are exact.
func (fe *faultEnv) client(spec string, opts ...dify.Option) (*dify.Client, *withFault) {
	fe.t.Helper()
	tr := &withFault{spec: spec, base: &http.Transport{DisableKeepAlives: true}}
	opts = append([]dify.Option{dify.WithUser("fault-user"), dify.WithHTTPClient(&http.Client{Transport: tr})}, opts...)
	c, err := dify.NewClient(fe.ts.URL+"/v1", "app-test", opts...)
	if err != nil {
		fe.t.Fatal(err)
	}
	return c, tr
}

func countReq(query string) dify.ChatRequest {
	return dify.ChatRequest{Query: query, Inputs: map[string]any{"city": "Seoul"}}
}

// send starts a chat turn with spec and checks the fault is echoed.
func (fe *faultEnv) stream(ctx context.Context, spec, query string) *dify.ChatStream {
	fe.t.Helper()
	c, _ := fe.client(spec)
	s, err := c.SendChatMessage(ctx, countReq(query))
	if err != nil {
		fe.t.Fatalf("%s: %v", spec, err)
	}
	if got := s.Header().Get(fault.Header); got == "" {
		fe.t.Errorf("%s: the response does not name the fault", spec)
	}
	return s
}

// stored returns the messages of the user's only conversation.
func (fe *faultEnv) stored(user string) []dify.Message {
	fe.t.Helper()
	c, _ := fe.client("")
	ctx := context.Background()
	convs, err := c.ListConversations(ctx, dify.ListConversationsParams{User: user})
	if err != nil || len(convs.Data) != 1 {
		fe.t.Fatalf("conversations of %s: %+v %v", user, convs, err)
	}
	msgs, err := c.ListMessages(ctx, dify.ListMessagesParams{ConversationID: convs.Data[0].ID, User: user})
	if err != nil {
		fe.t.Fatal(err)
	}
	return msgs.Data
}

func TestFaultErrorAfter(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{})
	ctx := context.Background()

	// The "timing" turn: thought, "One, ", "two, ", "three.", message, message_end.
	s := fe.stream(ctx, "error-after:2;code=completion_request_error;message=Model overloaded%3B try again", "Count to three")
	turn, err := dify.Collect(s)
	apiErr, ok := dify.AsAPIError(err)
	if !ok || !apiErr.Stream || apiErr.Code != "completion_request_error" || apiErr.Status != 400 || apiErr.Message != "Model overloaded; try again" {
		t.Fatalf("client saw %v", err)
	}
	if s.StatusCode() != 200 || turn.Answer != "One, " || turn.Completed {
		t.Errorf("HTTP %d, turn %+v", s.StatusCode(), turn)
	}
	// An error event is not saved by _save_message: handle_error
	// (core/app/task_pipeline/based_generate_task_pipeline.py) only sets
	// status and error on the row _init_generate_records created, whose
	// answer is "" and whose tokens are 0; the agent thoughts were saved as
	// the agent ran.
	m := fe.stored("fault-user")
	if len(m) != 1 || m[0].Status != "error" || m[0].Error == nil || *m[0].Error != "Model overloaded; try again" || m[0].Answer != "" ||
		m[0].TotalTokens != 0 || len(m[0].AgentThoughts) != 1 {
		t.Errorf("stored %+v", m)
	}

	// Defaults, and the frame's shape (docs/api §2.5: no task_id).
	_, frames := fe.chat(chatBody("Count to three", "raw"), fault.Header, "error-after:0")
	if len(frames) != 1 {
		t.Fatalf("%d frames", len(frames))
	}
	f := frames[0]
	keys := make([]string, 0, len(f.data))
	for k := range f.data {
		keys = append(keys, k)
	}
	if f.event() != "error" || f.str("code") != "internal_server_error" || f.data["status"] != float64(500) ||
		f.str("message") != "Internal Server Error, please contact support." || len(keys) != 7 || f.data["task_id"] != nil {
		t.Errorf("error frame %s", f.raw)
	}
	if !strings.HasPrefix(f.raw, `data: {"event":"error","conversation_id":`) {
		t.Errorf("key order: %s", f.raw)
	}

	// A count past the turn's end replaces message_end.
	s = fe.stream(ctx, "error-after:999;code=provider_quota_exceeded", "Count to three")
	turn, err = dify.Collect(s)
	if apiErr, ok := dify.AsAPIError(err); !ok || apiErr.Code != "provider_quota_exceeded" || !strings.Contains(apiErr.Message, "quota") || turn.Answer != "One, two, three." {
		t.Errorf("clamped: %v %+v", err, turn)
	}
}

func TestFaultCloseTruncateReset(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{})
	ctx := context.Background()

	turn, err := dify.Collect(fe.stream(ctx, "close-after:3", "Count to three"))
	if !errors.Is(err, dify.ErrTruncatedStream) || turn.Answer != "One, two, " || turn.Completed {
		t.Errorf("close-after: %v %+v", err, turn)
	}
	if m := fe.stored("fault-user"); len(m) != 1 || m[0].Status != "normal" || m[0].Answer != "One, two, " {
		t.Errorf("stored after close: %+v", m)
	}

	c, _ := fe.client("truncate")
	s, err := c.SendChatMessage(ctx, dify.ChatRequest{Query: "Count to three", Inputs: map[string]any{"city": "Seoul"}, User: "trunc"})
	if err != nil {
		t.Fatal(err)
	}
	turn, err = dify.Collect(s)
	if !errors.Is(err, dify.ErrTruncatedStream) || turn.Answer != "One, two, three." || turn.Completed || turn.Usage != nil {
		t.Errorf("truncate: %v %+v", err, turn)
	}
	if m := fe.stored("trunc"); len(m) != 1 || m[0].Answer != "One, two, three." || m[0].TotalTokens != 0 {
		t.Errorf("stored after truncate: %+v", m)
	}

	// K counts frames as sent, keep-alive pings included: the "slow" turn
	// is a thought, 20 deltas, a ping, the closing message and message_end.
	_, frames := fe.chat(chatBody("Take your time", "pings"), fault.Header, "close-after:22")
	if len(frames) != 22 || frames[21].event() != "ping" || frames[20].event() != "agent_message" {
		t.Errorf("close-after:22 sent %d frames, last %q", len(frames), frames[len(frames)-1].raw)
	}

	s = fe.stream(ctx, "reset-after:2", "Count to three")
	turn, err = dify.Collect(s)
	if !errors.Is(err, dify.ErrTruncatedStream) || !errors.Is(err, syscall.ECONNRESET) || turn.Answer != "One, " {
		t.Errorf("reset-after: %v %+v", err, turn)
	}
}

func TestFaultMalformedAfter(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{})
	ctx := context.Background()
	turn, err := dify.Collect(fe.stream(ctx, "malformed-after:1", "Count to three"))
	var fErr *dify.FrameError
	if !errors.As(err, &fErr) || !strings.HasPrefix(string(fErr.Raw), `data: {"event":"agent_message",`) {
		t.Fatalf("client saw %v", err)
	}
	// The broken frame is extra: the turn itself is whole.
	if !turn.Completed || turn.Answer != "One, two, three." {
		t.Errorf("turn %+v", turn)
	}
	turn, err = dify.Collect(fe.stream(ctx, "malformed-after:2;then=close", "Count to three"))
	if !errors.Is(err, dify.ErrTruncatedStream) || turn.Answer != "One, " {
		t.Errorf("then=close: %v %+v", err, turn)
	}
}

// arrivals reads every event and when it arrived, until the stream ends.
func arrivals(s *dify.ChatStream) ([]time.Duration, []dify.Event, error) {
	start := time.Now()
	var at []time.Duration
	var evs []dify.Event
	for {
		ev, err := s.Next()
		if err != nil {
			return at, evs, err
		}
		at = append(at, time.Since(start))
		evs = append(evs, ev)
	}
}

func TestFaultStall(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{})
	ctx := context.Background()
	const stall = 300 * time.Millisecond

	// Speed 0: the only gap is the stall, between event 2 and event 3.
	s := fe.stream(ctx, "stall-after:2;for=300ms", "Count to three")
	at, evs, err := arrivals(s)
	s.Close()
	if err != io.EOF || len(evs) != 6 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	// Upper bounds are generous: a loaded machine delays anything, but
	// nothing comes early.
	if gap := at[2] - at[1]; gap < stall-20*time.Millisecond || gap > stall+3*time.Second {
		t.Errorf("stall gap %v, want about %v", gap, stall)
	}
	if at[1] > 2*time.Second || at[5]-at[2] > 2*time.Second {
		t.Errorf("frames outside the stall were delayed: %v", at)
	}

	// Speed 1: frame 2 (recorded at 200ms) and everything after it come
	// 300ms late; the recorded spacing is kept.
	c, tr := fe.client("stall-after:2;for=300ms")
	tr.speed = "1"
	s, err = c.SendChatMessage(ctx, countReq("Count to three"))
	if err != nil {
		t.Fatal(err)
	}
	at, _, err = arrivals(s)
	s.Close()
	if err != io.EOF || len(at) != 6 {
		t.Fatalf("%d events, %v", len(at), err)
	}
	for i, rec := range []time.Duration{0, ms(80), ms(200), ms(260), ms(420), ms(450)} {
		want := rec
		if i >= 2 {
			want += stall
		}
		if d := at[i] - want; d < -20*time.Millisecond || d > 2*time.Second {
			t.Errorf("event %d at %v, want %v (-20ms/+2s)", i, at[i], want)
		}
	}

	// then=close ends the response after the stall; then=reset resets it.
	start := time.Now()
	turn, err := dify.Collect(fe.stream(ctx, "stall-after:1;for=200ms;then=close", "Count to three"))
	if d := time.Since(start); !errors.Is(err, dify.ErrTruncatedStream) || errors.Is(err, syscall.ECONNRESET) || len(turn.Thoughts) != 1 || d < 200*time.Millisecond {
		t.Errorf("then=close after %v: %v %+v", d, err, turn)
	}
	_, err = dify.Collect(fe.stream(ctx, "stall-after:1;for=100ms;then=reset", "Count to three"))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("then=reset: %v", err)
	}
}

// TestFaultStallEnds: a stall ends at once when the client leaves (its
// goroutines return), when the turn is stopped, and at shutdown.
func TestFaultStallEnds(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{})
	baseline := runtime.NumGoroutine()
	const clients = 10
	var streams []*dify.ChatStream
	var cancels []context.CancelFunc
	for i := 0; i < clients; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		c, _ := fe.client("stall-after:2;for=1h")
		s, err := c.SendChatMessage(ctx, dify.ChatRequest{Query: "Count to three", Inputs: map[string]any{"city": "Seoul"}, User: "leaver"})
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 2; j++ {
			if _, err := s.Next(); err != nil {
				t.Fatal(err)
			}
		}
		streams, cancels = append(streams, s), append(cancels, cancel)
	}
	start := time.Now()
	for i := range streams {
		cancels[i]()
		if _, err := streams[i].Next(); !errors.Is(err, dify.ErrTruncatedStream) {
			t.Errorf("after cancel: %v", err)
		}
		streams[i].Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines stay at %d (baseline %d):\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("streams took %v to end", d)
	}
	c, _ := fe.client("")
	convs, err := c.ListConversations(context.Background(), dify.ListConversationsParams{User: "leaver", Limit: 100})
	if err != nil || len(convs.Data) != clients {
		t.Fatalf("%+v %v", convs, err)
	}
	msgs, err := c.ListMessages(context.Background(), dify.ListMessagesParams{ConversationID: convs.Data[0].ID, User: "leaver"})
	if err != nil || len(msgs.Data) != 1 || msgs.Data[0].Answer != "One, " {
		t.Errorf("a dropped stalled turn stores what was streamed: %+v %v", msgs, err)
	}

	// Stop during a stall: message_end; the partial answer is what was streamed.
	ctx := context.Background()
	s := fe.stream(ctx, "stall-after:2;for=1h", "Count to three")
	var taskID, streamed string
	for j := 0; j < 2; j++ {
		ev, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if taskID == "" {
			taskID = ev.(*dify.AgentThoughtEvent).TaskID
		}
		if m, ok := ev.(*dify.AgentMessageEvent); ok {
			streamed += m.Answer
		}
	}
	start = time.Now()
	if err := c.StopChatMessage(ctx, taskID, "fault-user"); err != nil {
		t.Fatal(err)
	}
	turn, err := dify.Collect(s)
	// The stall is an hour long: ending within seconds shows the stop cut it.
	// Nothing but message_end follows the stop (no `message` repeats the
	// partial answer), so the rest of the stream adds no answer text.
	if err != nil || !turn.Completed || turn.Answer != "" || streamed != "One, " || time.Since(start) > 10*time.Second {
		t.Errorf("stop during a stall: %v %+v (streamed %q)", err, turn, streamed)
	}
	if msgs, err := c.ListMessages(ctx, dify.ListMessagesParams{ConversationID: turn.ConversationID, User: "fault-user"}); err != nil || len(msgs.Data) != 1 || msgs.Data[0].Answer != "One," {
		// EasyUIBasedGenerateTaskPipeline._save_message stores the answer stripped.
		t.Errorf("a stopped stalled turn stores what was streamed, stripped: %+v %v", msgs, err)
	}

	// Shutdown during a stall: the shutdown error frame.
	s = fe.stream(ctx, "stall-after:2;for=1h", "Count to three")
	for j := 0; j < 2; j++ {
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	go func() { _ = fe.srv.Shutdown(sctx) }()
	_, err = dify.Collect(s)
	if apiErr, ok := dify.AsAPIError(err); !ok || apiErr.Message != replay.ShutdownMessage {
		t.Errorf("shutdown during a stall: %v", err)
	}
}

func TestFaultStatus(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{})
	ctx := context.Background()

	// The 429 and its Retry-After reach the caller, and nothing was
	// created. The client sends a chat message again only on such a 429
	// (Dify refuses before it writes anything), as often as its policy
	// says: once here, with retries off; twice with two attempts.
	c, _ := fe.client("status:429;retry-after=7", dify.WithRetryPolicy(dify.RetryPolicy{MaxAttempts: 1}))
	before := fe.hits.Load()
	_, err := c.SendChatMessage(ctx, countReq("Count to three"))
	apiErr, ok := dify.AsAPIError(err)
	if !ok || apiErr.Stream || apiErr.Status != 429 || apiErr.Code != "too_many_requests" ||
		apiErr.Message != "Too many requests. Please try again later." || apiErr.RetryAfter != 7*time.Second || !dify.IsRateLimited(err) {
		t.Fatalf("chat 429: %#v", err)
	}
	if n := fe.hits.Load() - before; n != 1 {
		t.Errorf("chat 429 with retries off was sent %d times", n)
	}
	c2, _ := fe.client("status:429;retry-after=1", dify.WithRetryPolicy(dify.RetryPolicy{MaxAttempts: 2}))
	before = fe.hits.Load()
	_, err = c2.SendChatMessage(ctx, countReq("Count to three"))
	if rep, ok := dify.RetryReportOf(err); !ok || rep.Attempts != 2 || !dify.IsRateLimited(err) {
		t.Errorf("chat 429 with two attempts: %#v", err)
	}
	if n := fe.hits.Load() - before; n != 2 {
		t.Errorf("chat 429 with two attempts was sent %d times", n)
	}
	plain, _ := fe.client("")
	if convs, err := plain.ListConversations(ctx, dify.ListConversationsParams{}); err != nil || len(convs.Data) != 0 {
		t.Errorf("a refused chat created a conversation: %+v %v", convs, err)
	}

	// An idempotent call waits for Retry-After, then succeeds.
	c, tr := fe.client("status:429;retry-after=1")
	tr.firstOnly = true
	start := time.Now()
	if _, err := c.AppInfo(ctx); err != nil {
		t.Fatalf("retried GET /info: %v", err)
	}
	if d := time.Since(start); d < time.Second || d > 6*time.Second || tr.sent.Load() != 2 {
		t.Errorf("GET /info took %v over %d attempts; want one retry after about 1s", d, tr.sent.Load())
	}

	// 5xx: idempotent calls use every attempt, chat none.
	quick := dify.WithRetryPolicy(dify.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})
	for _, st := range []struct {
		spec, code, msg string
		status          int
	}{
		{"status:500", "internal_server_error", "The server encountered an internal error and was unable to complete your request. Either the server is overloaded or there is an error in the application.", 500},
		{"status:503", "service_unavailable", "The server is temporarily unable to service your request due to maintenance downtime or capacity problems. Please try again later.", 503},
		{"status:503;code=maintenance;message=Back at 10:00", "maintenance", "Back at 10:00", 503},
		{"status:418", "im_a_teapot", "I'm a teapot.", 418},
	} {
		c, tr := fe.client(st.spec, quick)
		_, err := c.ListConversations(ctx, dify.ListConversationsParams{})
		apiErr, ok := dify.AsAPIError(err)
		wantAttempts := int64(3)
		if st.status < 500 {
			wantAttempts = 1
		}
		if !ok || apiErr.Status != st.status || apiErr.Code != st.code || apiErr.Message != st.msg || tr.sent.Load() != wantAttempts {
			t.Errorf("%s: %v after %d attempts", st.spec, err, tr.sent.Load())
		}
		c, tr = fe.client(st.spec, quick)
		_, err = c.SendChatMessage(ctx, countReq("Count to three"))
		if apiErr, ok := dify.AsAPIError(err); !ok || apiErr.Status != st.status || tr.sent.Load() != 1 {
			t.Errorf("%s: chat got %v after %d attempts; chat messages are never retried", st.spec, err, tr.sent.Load())
		}
	}

	// 502 and 504 come from Dify's nginx: HTML, not an envelope.
	c, _ = fe.client("status:502", dify.WithRetryPolicy(dify.RetryPolicy{MaxAttempts: 1}))
	_, err = c.AppParameters(ctx)
	if apiErr, ok := dify.AsAPIError(err); !ok || apiErr.Status != 502 || apiErr.Code != "" || !strings.Contains(apiErr.Message, "502 Bad Gateway") {
		t.Errorf("502: %v", err)
	}
	resp, body := fe.do(http.MethodGet, "/site", nil, fault.Header, "status:504")
	if resp.StatusCode != 504 || resp.Header.Get("Content-Type") != "text/html" || !strings.Contains(string(body), "<center>nginx</center>") {
		t.Errorf("504: %d %q", resp.StatusCode, body)
	}
	// The fault is named on the response, and CORS lets a browser read it.
	resp, _ = fe.do(http.MethodGet, "/meta", nil, fault.Header, "STATUS:429;Retry-After=3", "Origin", "http://localhost:3000")
	if resp.Header.Get(fault.Header) != "status:429;retry-after=3" || resp.Header.Get("Retry-After") != "3" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "X-Dify-Mock-Fault") ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Errorf("headers %v", resp.Header)
	}
	// Authentication still comes first.
	resp, body = fe.do(http.MethodGet, "/meta", nil, fault.Header, "status:500", "Authorization", "")
	fe.wantError(resp, body, 401, "unauthorized", "*")
}

func TestFaultSlowHeaders(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{})
	ctx := context.Background()
	const delay = 300 * time.Millisecond
	within := func(what string, d time.Duration) {
		// Never early; late only as much as a loaded machine makes it.
		if d < delay || d > delay+5*time.Second {
			t.Errorf("%s: headers after %v, want %v (+5s)", what, d, delay)
		}
	}
	c, _ := fe.client("slow-headers:300ms")
	start := time.Now()
	s, err := c.SendChatMessage(ctx, countReq("Count to three"))
	if err != nil {
		t.Fatal(err)
	}
	within("chat", time.Since(start))
	if s.Header().Get(fault.Header) != "slow-headers:300ms" {
		t.Errorf("fault header %q", s.Header().Get(fault.Header))
	}
	if turn, err := dify.Collect(s); err != nil || !turn.Completed {
		t.Errorf("after slow headers: %v", err)
	}
	start = time.Now()
	if _, err := c.AppInfo(ctx); err != nil {
		t.Fatal(err)
	}
	within("GET /info", time.Since(start))

	// Combined with a stream fault, and with a status.
	c, _ = fe.client("slow-headers:300ms,error-after:1")
	start = time.Now()
	s, err = c.SendChatMessage(ctx, countReq("Count to three"))
	if err != nil {
		t.Fatal(err)
	}
	within("chat + error-after", time.Since(start))
	if _, err := dify.Collect(s); err == nil {
		t.Error("error-after did not fire after slow headers")
	}
	c, _ = fe.client("status:503,slow-headers:300ms", dify.WithRetryPolicy(dify.RetryPolicy{MaxAttempts: 1}))
	start = time.Now()
	if _, err := c.AppSite(ctx); !strings.Contains(fmt.Sprint(err), "503") {
		t.Errorf("slow 503: %v", err)
	}
	within("slow 503", time.Since(start))

	// A client that gives up is let go at once.
	c, _ = fe.client("slow-headers:1h")
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := c.SendChatMessage(cctx, countReq("Count to three")); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Errorf("gave up after %v: %v", time.Since(start), err)
	}
}

func TestFaultConnectionLevel(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{})
	ctx := context.Background()
	twice := dify.WithRetryPolicy(dify.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond})
	cases := []struct {
		spec  string
		check func(error) bool
	}{
		{"empty-response", func(err error) bool { return errors.Is(err, io.EOF) }},
		{"connection-reset-by-peer", func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }},
		{"random-data-then-close", func(err error) bool { return strings.Contains(fmt.Sprint(err), "malformed HTTP") }},
	}
	for _, c := range cases {
		cl, tr := fe.client(c.spec, twice)
		_, err := cl.SendChatMessage(ctx, countReq("Count to three"))
		if _, isAPI := dify.AsAPIError(err); err == nil || isAPI || !c.check(err) || tr.sent.Load() != 1 {
			t.Errorf("%s on chat: %v after %d attempts", c.spec, err, tr.sent.Load())
		}
		cl, tr = fe.client(c.spec, twice)
		_, err = cl.AppInfo(ctx)
		if err == nil || !c.check(err) || tr.sent.Load() != 2 {
			t.Errorf("%s on GET /info: %v after %d attempts (idempotent calls retry)", c.spec, err, tr.sent.Load())
		}
	}
	// A 200 whose body breaks.
	cl, _ := fe.client("malformed-response-chunk")
	s, err := cl.SendChatMessage(ctx, countReq("Count to three"))
	if err != nil {
		t.Fatalf("malformed-response-chunk: headers should arrive: %v", err)
	}
	if _, err := dify.Collect(s); !errors.Is(err, dify.ErrTruncatedStream) || !strings.Contains(err.Error(), "chunk") {
		t.Errorf("malformed-response-chunk on chat: %v", err)
	}
	cl, _ = fe.client("malformed-response-chunk", dify.WithRetryPolicy(dify.RetryPolicy{MaxAttempts: 1}))
	if _, err := cl.AppInfo(ctx); !strings.Contains(fmt.Sprint(err), "decoding HTTP 200 response") {
		t.Errorf("malformed-response-chunk on GET: %v", err)
	}
}

// TestRandomDataIsDeterministic: the garbage is the same on every run.
func TestRandomDataIsDeterministic(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{})
	read := func() []byte {
		conn, err := net.Dial("tcp", fe.ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "GET /v1/ HTTP/1.1\r\nHost: x\r\nX-Dify-Mock-Fault: random-data-then-close\r\n\r\n")
		data, _ := io.ReadAll(bufio.NewReader(conn))
		return data
	}
	a, b := read(), read()
	if len(a) != 256 || string(a) != string(b) || strings.HasPrefix(string(a), "HTTP/") {
		t.Errorf("%d and %d bytes, equal %v", len(a), len(b), string(a) == string(b))
	}
}

// faultSet is the test set plus cassettes with their own faults.
func faultSet(t *testing.T, extra map[string][]byte) *cassette.Set {
	t.Helper()
	base := testSet(t, testParams)
	dir := t.TempDir()
	for _, name := range base.Names {
		c, _ := base.Get(name)
		data, err := os.ReadFile(c.Path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), appFile(t, testParams), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, data := range extra {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestFaultFromCassette(t *testing.T) {
	set := faultSet(t, map[string][]byte{
		"quota": chatFile(t, cassette.Meta{Description: "quota runs out mid-answer", Mode: "agent", Fault: "error-after:2;code=provider_quota_exceeded"},
			turn{query: "Spend my quota", frames: timingFrames()}),
		"flaky": chatFile(t, cassette.Meta{Description: "a second turn that is rate limited", Mode: "agent", Fault: "status:429;retry-after=2"},
			turn{query: "First question", frames: []frame{delta(0, recMsg, "First."), closing(ms(1), recMsg, "First."), end(ms(2), recMsg)}},
			turn{query: "Second question", frames: []frame{delta(0, msg2, "Second."), closing(ms(1), msg2, "Second."), end(ms(2), msg2)}}),
	})
	fe := newFaultEnv(t, mockserver.Config{Cassettes: set, Fault: "slow-headers:1ms"})
	ctx := context.Background()

	c, _ := fe.client("")
	s, err := c.SendChatMessage(ctx, countReq("Spend my quota"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Header().Get(fault.Header); got != "error-after:2;code=provider_quota_exceeded" {
		t.Errorf("the cassette's fault should win over the server's: %q", got)
	}
	turn, err := dify.Collect(s)
	if apiErr, ok := dify.AsAPIError(err); !ok || apiErr.Code != "provider_quota_exceeded" || apiErr.Status != 400 || turn.Answer != "One, " {
		t.Errorf("cassette fault: %v %+v", err, turn)
	}
	// The header overrides the cassette: "none" switches it off.
	c, _ = fe.client("none")
	s, _ = c.SendChatMessage(ctx, countReq("Spend my quota"))
	if turn, err := dify.Collect(s); err != nil || !turn.Completed || s.Header().Get(fault.Header) != "" {
		t.Errorf("with none: %v", err)
	}
	c, _ = fe.client("close-after:1")
	s, _ = c.SendChatMessage(ctx, countReq("Spend my quota"))
	if _, err := dify.Collect(s); !errors.Is(err, dify.ErrTruncatedStream) {
		t.Errorf("header over cassette: %v", err)
	}

	// A refused follow-up does not use up the turn it would have played.
	c, _ = fe.client("none")
	s, err = c.SendChatMessage(ctx, dify.ChatRequest{Query: "First question", User: "flaky", Inputs: map[string]any{"city": "Seoul"}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := dify.Collect(s)
	if err != nil || first.Answer != "First." {
		t.Fatalf("first turn: %v %+v", err, first)
	}
	c, _ = fe.client("")
	follow := dify.ChatRequest{Query: "anything", User: "flaky", ConversationID: first.ConversationID, Inputs: map[string]any{"city": "Seoul"}}
	_, err = c.SendChatMessage(ctx, follow)
	if apiErr, ok := dify.AsAPIError(err); !ok || apiErr.Status != 429 || apiErr.RetryAfter != 2*time.Second {
		t.Fatalf("follow-up: %v", err)
	}
	c, _ = fe.client("none")
	s, err = c.SendChatMessage(ctx, follow)
	if err != nil {
		t.Fatal(err)
	}
	if second, err := dify.Collect(s); err != nil || second.Answer != "Second." {
		t.Errorf("the retried follow-up should play turn 1: %v %+v", err, second)
	}
	if m := fe.stored("flaky"); len(m) != 2 {
		t.Errorf("%d messages", len(m))
	}

	// Other routes get the server's fault (the cassette's applies to chat).
	resp, _ := fe.do(http.MethodGet, "/info", nil)
	if resp.Header.Get(fault.Header) != "slow-headers:1ms" {
		t.Errorf("server fault on /info: %v", resp.Header)
	}
}

func TestFaultServerDefault(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{Fault: "status:503"})
	resp, body := fe.do(http.MethodGet, "/conversations?user=u", nil)
	fe.wantError(resp, body, 503, "service_unavailable", "*")
	resp, body = fe.do(http.MethodGet, "/", nil)
	fe.wantError(resp, body, 503, "service_unavailable", "*")
	resp, _ = fe.do(http.MethodGet, "/conversations?user=u", nil, fault.Header, "none")
	if resp.StatusCode != 200 {
		t.Errorf("none: %d", resp.StatusCode)
	}
	r := fe.send(http.MethodPost, "/chat-messages", chatBody("Count to three", "u"))
	r.Body.Close()
	if r.StatusCode != 503 {
		t.Errorf("chat: %d", r.StatusCode)
	}
	// Stream faults on routes without a stream are ignored.
	resp, _ = fe.do(http.MethodGet, "/info", nil, fault.Header, "error-after:1")
	if resp.StatusCode != 200 || resp.Header.Get(fault.Header) != "" {
		t.Errorf("stream fault on /info: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestBadFaultSpecs(t *testing.T) {
	fe := newFaultEnv(t, mockserver.Config{})
	for _, path := range []string{"/info", "/chat-messages"} {
		method, body := http.MethodGet, any(nil)
		if path == "/chat-messages" {
			method, body = http.MethodPost, chatBody("Count to three", "u")
		}
		resp, data := fe.do(method, path, body, fault.Header, "error-after:soon")
		fe.wantError(resp, data, 400, "invalid_param", "X-Dify-Mock-Fault: fault \"error-after:soon\": error-after needs the number of frames to send before the fault (0 to 1000000), e.g. error-after:3;code=completion_request_error. Known faults: "+fault.Names())
	}
	resp, data := fe.do(http.MethodGet, "/info", nil, fault.Header, "explode")
	var eb errBody
	_ = json.Unmarshal(data, &eb)
	if resp.StatusCode != 400 || !strings.Contains(eb.Message, `unknown fault "explode". Known faults: slow-headers:T, status:S,`) {
		t.Errorf("%d %s", resp.StatusCode, data)
	}
	// Two header lines are one list.
	req, _ := http.NewRequest(http.MethodGet, fe.url("/info"), nil)
	req.Header.Set("Authorization", "Bearer app-test")
	req.Header.Add(fault.Header, "status:429")
	req.Header.Add(fault.Header, "status:500")
	r, err := fe.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 400 || !strings.Contains(string(data), "two faults that replace the response") {
		t.Errorf("two header lines: %d %s", r.StatusCode, data)
	}

	if _, err := mockserver.New(mockserver.Config{Fault: "stall-after:1"}); err == nil || !strings.Contains(err.Error(), "stall-after needs how long to stall") {
		t.Errorf("bad Config.Fault: %v", err)
	}
	set := faultSet(t, map[string][]byte{
		"broken": chatFile(t, cassette.Meta{Mode: "agent", Fault: "truncate:3"}, turn{query: "Break", frames: timingFrames()}),
	})
	_, err = mockserver.New(mockserver.Config{Cassettes: set})
	if err == nil || !strings.Contains(err.Error(), "broken.yaml: dify_mock.fault: fault \"truncate:3\": truncate takes no argument") {
		t.Errorf("bad cassette fault: %v", err)
	}
}
