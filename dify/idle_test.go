package dify

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// A server that sends one frame and then goes silent with the connection
// open: without an idle timeout the client would wait for the context.
func TestStreamIdleTimeoutEndsASilentStream(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"event":"agent_message","conversation_id":"c","message_id":"m","task_id":"t","id":"m","answer":"hi"}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	const idle = 150 * time.Millisecond
	c := newTestClient(t, h, WithStreamIdleTimeout(idle))
	s, err := c.SendChatMessage(testContext(t), ChatRequest{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	turn, err := Collect(s)
	elapsed := time.Since(start)
	if !errors.Is(err, ErrTruncatedStream) || !errors.Is(err, ErrStreamIdle) {
		t.Fatalf("err = %v, want truncated by idle timeout", err)
	}
	if turn.Answer != "hi" {
		t.Errorf("partial answer %q", turn.Answer)
	}
	if elapsed < idle-20*time.Millisecond || elapsed > idle+2*time.Second {
		t.Errorf("ended after %s, want about %s", elapsed, idle)
	}
}

// Frames that keep arriving (like Dify's pings) keep the stream alive past
// the idle timeout: ten pings 150 ms apart last 1.5 s, well past a 1 s idle
// timeout, while each gap leaves 850 ms of slack for a loaded machine.
func TestStreamIdleTimeoutResetByData(t *testing.T) {
	const pings, gap, idle = 10, 150 * time.Millisecond, time.Second
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < pings; i++ {
			io.WriteString(w, "event: ping\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(gap) // pacing the server, not waiting for the client
		}
		io.WriteString(w, `data: {"event":"message_end","conversation_id":"c","message_id":"m","task_id":"t","id":"m","metadata":{}}`+"\n\n")
	})
	c := newTestClient(t, h, WithStreamIdleTimeout(idle))
	s, err := c.SendChatMessage(testContext(t), ChatRequest{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := Collect(s)
	if err != nil || !turn.Completed {
		t.Fatalf("turn=%+v err=%v", turn, err)
	}
}
