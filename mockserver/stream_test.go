package mockserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
)

// TestTiming replays at speed 1 and checks every frame's arrival against its
// recorded offset (-2/+50 ms), then at speed 2 checks offsets and gaps halve.
//
// A frame that arrives early is a scheduler bug and fails at once. Lateness
// can also come from a machine busy with other work (CI runs packages in
// parallel), so a late attempt is retried a few times: a scheduler that
// chains sleeps or ignores offsets is late on every attempt.
func TestTiming(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 1})
	c, _ := e.set.Get("timing")
	rec := c.Turns[0].Frames
	const early, late, gapTolerance = 2 * time.Millisecond, 50 * time.Millisecond, 25 * time.Millisecond

	// attempt returns the arrivals and what was late about them.
	attempt := func(speed float64, hdr ...string) ([]time.Duration, []string) {
		t.Helper()
		_, frames := e.chat(chatBody("Count to three", "tim"), hdr...)
		if len(frames) != len(rec) {
			t.Fatalf("speed %v: %d frames, want %d", speed, len(frames), len(rec))
		}
		var lateness []string
		arrivals := make([]time.Duration, len(frames))
		for i, f := range frames {
			due := time.Duration(float64(rec[i].Offset) / speed)
			if f.at < due-early {
				t.Errorf("speed %v frame %d (%s) arrived at %v, before its due time %v", speed, i, f.event(), f.at, due)
			}
			if f.at > due+late {
				lateness = append(lateness, fmt.Sprintf("speed %v frame %d (%s) arrived at %v, due %v", speed, i, f.event(), f.at, due))
			}
			arrivals[i] = f.at
		}
		return arrivals, lateness
	}
	retry := func(speed float64, extra func([]time.Duration) []string, hdr ...string) {
		t.Helper()
		var problems []string
		for try := 0; try < 5; try++ {
			arrivals, lateness := attempt(speed, hdr...)
			if extra != nil {
				lateness = append(lateness, extra(arrivals)...)
			}
			if len(lateness) == 0 {
				return
			}
			problems = append(problems, fmt.Sprintf("attempt %d: %s", try+1, strings.Join(lateness, "; ")))
		}
		t.Errorf("late on every attempt:\n%s", strings.Join(problems, "\n"))
	}
	retry(1, nil)
	retry(2, func(fast []time.Duration) []string {
		var out []string
		for i := 1; i < len(rec); i++ {
			want := (rec[i].Offset - rec[i-1].Offset) / 2
			if got := fast[i] - fast[i-1]; got < want-gapTolerance || got > want+gapTolerance {
				out = append(out, fmt.Sprintf("speed 2 gap %d: %v, want about %v", i, got, want))
			}
		}
		return out
	}, mockserver.HeaderSpeed, "2")
	// Speed 0 sends everything at once.
	start := time.Now()
	e.chat(chatBody("Count to three", "tim"), mockserver.HeaderSpeed, "0")
	if d := time.Since(start); d > time.Second {
		t.Errorf("speed 0 took %v", d)
	}
}

func TestStop(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 1})
	start := time.Now()
	resp := e.send(http.MethodPost, "/chat-messages", chatBody("Take your time", "stan"))
	defer resp.Body.Close()
	var deltas strings.Builder
	var stoppedAt time.Time
	frames := readFrames(t, resp.Body, start, func(f sseFrame) bool {
		if f.event() == "agent_message" {
			deltas.WriteString(f.str("answer"))
		}
		if stoppedAt.IsZero() && f.event() == "agent_message" && f.str("answer") == "part 2. " {
			task := f.str("task_id")
			// Another user's stop is ignored but still succeeds (docs/api §3).
			r, body := e.do(http.MethodPost, "/chat-messages/"+task+"/stop", map[string]any{"user": "mallory"})
			if r.StatusCode != 200 || string(body) != `{"result":"success"}`+"\n" {
				t.Errorf("foreign stop: %d %s", r.StatusCode, body)
			}
			r, body = e.do(http.MethodPost, "/chat-messages/"+task+"/stop", map[string]any{"user": "stan"})
			if r.StatusCode != 200 || string(body) != `{"result":"success"}`+"\n" {
				t.Errorf("stop: %d %s", r.StatusCode, body)
			}
			stoppedAt = time.Now()
		}
		return true
	})
	if stoppedAt.IsZero() {
		t.Fatal("never stopped")
	}
	if d := time.Since(stoppedAt); d > 2*time.Second { // the rest would take 8 s
		t.Errorf("stream ended %v after the stop", d)
	}
	n := len(frames)
	// Dify's EasyUIBasedGenerateTaskPipeline._process_stream_response
	// answers QueueStopEvent with message_end alone: no `message` frame
	// repeats the partial answer.
	if n < 2 || frames[n-1].event() != "message_end" || frames[n-2].event() == "message" {
		t.Fatalf("a stopped stream ends with message_end alone: %v", frames[max(0, n-3):])
	}
	if got := deltas.String(); !strings.HasPrefix(got, "part 1. part 2. ") || strings.Contains(got, "part 9") {
		t.Errorf("partial answer %q", got)
	}
	conv := frames[0].str("conversation_id")
	_, body := e.do(http.MethodGet, "/messages?user=stan&conversation_id="+conv, nil)
	m := decode[dify.MessagePage](t, body).Data[0]
	// EasyUIBasedGenerateTaskPipeline._save_message stores a stopped
	// turn's answer stripped: the batch boundary's trailing space goes.
	if m.Answer != strings.TrimSpace(deltas.String()) || m.Status != "normal" {
		t.Errorf("stored stopped message: %q %q", m.Answer, m.Status)
	}

	r, body := e.do(http.MethodPost, "/chat-messages/no-such-task/stop", map[string]any{"user": "stan"})
	if r.StatusCode != 200 || string(body) != `{"result":"success"}`+"\n" {
		t.Errorf("unknown task: %d %s", r.StatusCode, body)
	}
	r, body = e.do(http.MethodPost, "/chat-messages/x/stop", map[string]any{})
	e.wantError(r, body, 400, "invalid_param", "Arg user must be provided.")
	r, body = e.do(http.MethodPost, "/chat-messages/x/stop", "nope")
	e.wantError(r, body, 400, "bad_request", "The browser (or proxy) sent a request that this server could not understand.")
}

var runIDRE = regexp.MustCompile(`\(agent_run_id=[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\)$`)

func TestRunLimits(t *testing.T) {
	lastError := func(t *testing.T, frames []sseFrame) sseFrame {
		t.Helper()
		f := frames[len(frames)-1]
		if f.event() != "error" || f.data["status"] != float64(400) || f.str("code") != replay.RunLimitCode || !runIDRE.MatchString(f.str("message")) {
			t.Fatalf("last frame: %s", f.raw)
		}
		if _, ok := f.data["task_id"]; ok {
			t.Errorf("error events carry no task_id (docs/api §2.5): %s", f.raw)
		}
		for _, g := range frames {
			if g.event() == "message_end" {
				t.Errorf("message_end after a run limit")
			}
		}
		return f
	}
	t.Run("model requests", func(t *testing.T) {
		e := newEnv(t, mockserver.Config{MaxModelRequests: 2})
		_, frames := e.chat(chatBody("Use your tools", "lim"))
		f := lastError(t, frames)
		if len(frames) != 6 || !strings.HasPrefix(f.str("message"), "Agent run exceeded its limit of 2 model requests (") {
			t.Fatalf("cut at the third model request: %d frames, %s", len(frames), f.raw)
		}
		_, body := e.do(http.MethodGet, "/messages?user=lim&conversation_id="+f.str("conversation_id"), nil)
		m := decode[dify.MessagePage](t, body).Data[0]
		if m.Status != "error" || m.Error == nil || *m.Error != f.str("message") || len(m.AgentThoughts) != 2 {
			t.Errorf("stored: %s", body)
		}
		// The turn's declared count is used when the cassette sets one.
		_, frames = newEnv(t, mockserver.Config{}).chat(chatBody("Think hard", "lim"))
		if f := lastError(t, frames); len(frames) != 2 || !strings.Contains(f.str("message"), "limit of 500 model requests") {
			t.Fatalf("declared 900 requests: %d frames %s", len(frames), f.raw)
		}
	})
	t.Run("run timeout", func(t *testing.T) {
		e := newEnv(t, mockserver.Config{Speed: 1, RunTimeout: 250 * time.Millisecond})
		_, frames := e.chat(chatBody("Count to three", "lim"))
		f := lastError(t, frames)
		if len(frames) != 4 || !strings.HasPrefix(f.str("message"), "Agent run exceeded its wall-clock deadline of 250ms (") {
			t.Fatalf("%d frames, %s", len(frames), f.raw)
		}
		// Never early; the upper bound only guards against "never cut".
		if f.at < 248*time.Millisecond || f.at > 2*time.Second {
			t.Errorf("error frame at %v, due at 250ms", f.at)
		}
	})
}

// TestDisconnect: clients that drop mid-stream end their replays at once;
// the goroutine count returns to its baseline.
func TestDisconnect(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 1})
	baseline := runtime.NumGoroutine()
	const clients = 25
	var cancels []context.CancelFunc
	var bodies []io.ReadCloser
	for i := 0; i < clients; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		j, _ := json.Marshal(chatBody("Take your time", "dc"))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url("/chat-messages"), strings.NewReader(string(j)))
		req.Header.Set("Authorization", "Bearer app-test")
		req.Header.Set("Content-Type", "application/json") // Dify reads the body with get_json()
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// Wait for the first frame so the replay is surely running.
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		cancels = append(cancels, cancel)
		bodies = append(bodies, resp.Body)
	}
	if n := runtime.NumGoroutine(); n < baseline+clients {
		t.Fatalf("only %d goroutines with %d live streams (baseline %d)", n, clients, baseline)
	}
	for i := range cancels {
		cancels[i]()
		bodies[i].Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines stay at %d (baseline %d):\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Each dropped turn is stored with what was streamed before the drop.
	_, body := e.do(http.MethodGet, "/conversations?user=dc&limit=100", nil)
	p := decode[dify.ConversationPage](t, body)
	if len(p.Data) != clients {
		t.Fatalf("%d conversations", len(p.Data))
	}
	_, body = e.do(http.MethodGet, "/messages?user=dc&conversation_id="+p.Data[0].ID, nil)
	if m := decode[dify.MessagePage](t, body).Data; len(m) != 1 || strings.Contains(m[0].Answer, "part 20") {
		t.Errorf("dropped turn: %s", body)
	}
}

func TestShutdownEndsStreams(t *testing.T) {
	e := newEnv(t, mockserver.Config{Speed: 1})
	start := time.Now()
	resp := e.send(http.MethodPost, "/chat-messages", chatBody("Take your time", "sd"))
	defer resp.Body.Close()
	done := make(chan error, 1)
	frames := readFrames(t, resp.Body, start, func(f sseFrame) bool {
		if f.event() == "agent_thought" {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				done <- e.srv.Shutdown(ctx)
			}()
		}
		return true
	})
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	last := frames[len(frames)-1]
	if last.event() != "error" || last.str("code") != "internal_server_error" || last.data["status"] != float64(500) || last.str("message") != replay.ShutdownMessage {
		t.Fatalf("last frame %s", last.raw)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	r, body := e.do(http.MethodPost, "/chat-messages", chatBody("Count to three", "sd"))
	e.wantError(r, body, 503, "service_unavailable", "*")
	_, body = e.do(http.MethodGet, "/messages?user=sd&conversation_id="+frames[0].str("conversation_id"), nil)
	if m := decode[dify.MessagePage](t, body).Data; len(m) != 1 || m[0].Status != "error" {
		t.Errorf("stored: %s", body)
	}
}

// TestConcurrentUse drives every stateful route from many goroutines; run
// with -race.
func TestConcurrentUse(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	try := func(method, path string, body any, hdr ...string) (int, []byte, error) {
		var r io.Reader
		if body != nil {
			j, _ := json.Marshal(body)
			r = strings.NewReader(string(j))
		}
		req, _ := http.NewRequest(method, e.url(path), r)
		req.Header.Set("Authorization", "Bearer app-test")
		req.Header.Set("Content-Type", "application/json") // Dify reads the body with get_json()
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := e.hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return resp.StatusCode, data, err
	}
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			user := fmt.Sprintf("cc-%d", i%4)
			status, data, err := try(http.MethodPost, "/chat-messages", chatBody("First question", user))
			if err != nil || status != 200 {
				t.Errorf("chat: %d %v", status, err)
				return
			}
			m := regexp.MustCompile(`"conversation_id":"([^"]+)"`).FindSubmatch(data)
			task := regexp.MustCompile(`"task_id":"([^"]+)"`).FindSubmatch(data)
			conv := string(m[1])
			steps := []struct {
				method, path string
				body         any
				hdr          []string
			}{
				{http.MethodPost, "/chat-messages", chatBody("more", user, "conversation_id", conv), []string{mockserver.HeaderSpeed, "50"}},
				{http.MethodPost, "/chat-messages/" + string(task[1]) + "/stop", map[string]any{"user": user}, nil},
				{http.MethodGet, "/conversations?limit=3&user=" + user, nil, nil},
				{http.MethodGet, "/messages?user=" + user + "&conversation_id=" + conv, nil, nil},
				{http.MethodPost, "/conversations/" + conv + "/name", map[string]any{"name": "n", "user": user}, nil},
				{http.MethodPost, "/conversations/" + conv + "/name", map[string]any{"auto_generate": true, "user": user}, nil},
			}
			for _, s := range steps {
				if status, data, err := try(s.method, s.path, s.body, s.hdr...); err != nil || status != 200 {
					t.Errorf("%s %s: %d %s %v", s.method, s.path, status, data, err)
				}
			}
			if i%2 == 0 {
				if status, _, err := try(http.MethodDelete, "/conversations/"+conv, map[string]any{"user": user}); err != nil || status != 204 {
					t.Errorf("delete: %d %v", status, err)
				}
			}
		}(i)
	}
	wg.Wait()
	total := 0
	for u := 0; u < 4; u++ {
		_, body := e.do(http.MethodGet, fmt.Sprintf("/conversations?limit=100&user=cc-%d", u), nil)
		total += len(decode[dify.ConversationPage](t, body).Data)
	}
	if total != 16 {
		t.Errorf("%d conversations survive, want 16", total)
	}
}
