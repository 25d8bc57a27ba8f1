package dify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// eventNames drains s and returns the event names and the terminal error.
func eventNames(s *ChatStream) ([]string, error) {
	var names []string
	for {
		ev, err := s.Next()
		if err != nil {
			return names, err
		}
		names = append(names, ev.EventName())
	}
}

func TestChatStreamLegacySequence(t *testing.T) {
	raw := string(readTestdata(t, "legacy-agent-chat.sse"))
	want := "agent_thought agent_message agent_message agent_message agent_thought ping agent_thought message_file " +
		"agent_thought agent_message agent_message agent_thought message_end tts_message tts_message_end"
	inputs := map[string]string{"LF": raw, "CRLF": strings.ReplaceAll(raw, "\n", "\r\n")}
	for name, in := range inputs {
		for how, r := range readers(in) {
			t.Run(name+"/"+how, func(t *testing.T) {
				names, err := eventNames(NewChatStream(r))
				if err != io.EOF {
					t.Errorf("terminal error = %v, want io.EOF", err)
				}
				if got := strings.Join(names, " "); got != want {
					t.Errorf("events =\n%s\nwant\n%s", got, want)
				}
			})
		}
	}
}

func TestChatStreamTypedEvents(t *testing.T) {
	s := NewChatStream(strings.NewReader(string(readTestdata(t, "new-agent.sse"))))
	var types []string
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, fmt.Sprintf("%T", ev))
	}
	want := "*dify.PingEvent *dify.AgentThoughtEvent *dify.AgentThoughtEvent *dify.AgentThoughtEvent *dify.AgentThoughtEvent " +
		"*dify.AgentMessageEvent *dify.AgentMessageEvent *dify.AgentThoughtEvent *dify.MessageFileEvent *dify.MessageEvent *dify.MessageEndEvent"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("types =\n%s\nwant\n%s", got, want)
	}
}

func TestChatStreamEndings(t *testing.T) {
	const (
		msg   = `data: {"event":"agent_message","task_id":"t","answer":"hi"}` + "\n\n"
		end   = `data: {"event":"message_end","task_id":"t","metadata":{"usage":{"total_tokens":1}}}` + "\n\n"
		tts   = `data: {"event":"tts_message_end","task_id":"t","audio":""}` + "\n\n"
		fail  = `data: {"event":"error","status":400,"code":"agent_run_limit_exceeded","message":"limit"}` + "\n\n"
		unkwn = `data: {"event":"workflow_finished","data":{}}` + "\n\n"
	)
	for _, tc := range []struct {
		name   string
		input  string
		events string
		end    func(error) bool
	}{
		{"clean end", msg + end, "agent_message message_end", isEOF},
		{"trailing TTS after message_end", msg + end + tts, "agent_message message_end tts_message_end", isEOF},
		{"unknown events pass through", unkwn + msg + end, "workflow_finished agent_message message_end", isEOF},
		{"no message_end", msg + msg, "agent_message agent_message", isTruncated},
		{"empty body", "", "", isTruncated},
		{"only pings", "event: ping\n\nevent: ping\n\n", "ping ping", isTruncated},
		{"cut inside a frame", msg + `data: {"event":"agent_mess`, "agent_message", isTruncated},
		{"final message_end without blank line", msg + strings.TrimSuffix(end, "\n\n"), "agent_message message_end", isEOF},
		{"final delta without blank line", msg + strings.TrimSuffix(msg, "\n"), "agent_message agent_message", isTruncated},
		{"error event ends the stream", msg + fail + msg + end, "agent_message error", isEOF},
		{"garbage after message_end", msg + end + "data: {broken", "agent_message message_end", isEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names, err := eventNames(NewChatStream(strings.NewReader(tc.input)))
			if got := strings.Join(names, " "); got != tc.events {
				t.Errorf("events = %q, want %q", got, tc.events)
			}
			if !tc.end(err) {
				t.Errorf("terminal error = %v", err)
			}
		})
	}
}

func isEOF(err error) bool { return err == io.EOF }

func isTruncated(err error) bool {
	return errors.Is(err, ErrTruncatedStream) && strings.Contains(err.Error(), "ended before message_end")
}

func TestChatStreamReadErrors(t *testing.T) {
	boom := errors.New("connection reset by peer")
	msg := `data: {"event":"agent_message","answer":"hi"}` + "\n\n"
	end := `data: {"event":"message_end","metadata":{}}` + "\n\n"

	s := NewChatStream(io.MultiReader(strings.NewReader(msg), iotest.ErrReader(boom)))
	names, err := eventNames(s)
	if len(names) != 1 || !errors.Is(err, ErrTruncatedStream) || !errors.Is(err, boom) {
		t.Errorf("read error before message_end: %v %v", names, err)
	}
	if _, again := s.Next(); again != err {
		t.Errorf("terminal error not sticky: %v", again)
	}

	// After message_end the turn is complete: a reset is just the end.
	names, err = eventNames(NewChatStream(io.MultiReader(strings.NewReader(msg+end), iotest.ErrReader(boom))))
	if len(names) != 2 || err != io.EOF {
		t.Errorf("read error after message_end: %v %v", names, err)
	}
}

func TestChatStreamMalformedFrame(t *testing.T) {
	in := `data: {"event":"agent_message","answer":"a"}` + "\n\n" +
		"data: {not json}\n\n" +
		`data: {"event":"agent_thought","position":"NaN"}` + "\n\n" +
		`data: {"event":"agent_message","answer":"b"}` + "\n\n" +
		`data: {"event":"message_end","metadata":{}}` + "\n\n"
	s := NewChatStream(strings.NewReader(in))
	var got []string
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		var fe *FrameError
		switch {
		case errors.As(err, &fe):
			got = append(got, "FrameError("+fe.Event+")")
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, ev.EventName())
		}
	}
	if want := "agent_message FrameError() FrameError(agent_thought) agent_message message_end"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
}

// blockingBody serves its frames, then blocks until closed, like a live
// connection waiting for the next event.
type blockingBody struct {
	r       io.Reader
	closed  chan struct{}
	waiting chan struct{} // optional: signalled once a Read starts blocking
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if n, err := b.r.Read(p); err != io.EOF {
		return n, err
	}
	if b.waiting != nil {
		close(b.waiting)
		b.waiting = nil
	}
	<-b.closed
	return 0, errors.New("read on closed body")
}

func (b *blockingBody) Close() error { close(b.closed); return nil }

func TestChatStreamCloseAbortsNext(t *testing.T) {
	waiting := make(chan struct{})
	body := &blockingBody{r: strings.NewReader(`data: {"event":"agent_message","answer":"a"}` + "\n\n"), closed: make(chan struct{}), waiting: waiting}
	s := NewChatStream(body)
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Next()
		done <- err
	}()
	select {
	case <-waiting: // Next is blocked reading the body
	case <-time.After(10 * time.Second):
		t.Fatal("Next never reached the body")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrTruncatedStream) || !strings.Contains(err.Error(), "closed") {
			t.Errorf("Next after Close = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not abort Next")
	}
}

// The client hands events over as they arrive, not when the body ends.
func TestSendChatMessageStreamsLive(t *testing.T) {
	release := make(chan struct{})
	srv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"event":"agent_message","conversation_id":"c","answer":"first"}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second):
			return
		}
		fmt.Fprint(w, "event: ping\n\n"+`data: {"event":"message_end","conversation_id":"c","metadata":{}}`+"\n\n")
	})
	c := newTestClient(t, srv)
	s, err := c.SendChatMessage(testContext(t), ChatRequest{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := ev.(*AgentMessageEvent); !ok || m.Answer != "first" {
		t.Fatalf("first event = %#v", ev)
	}
	close(release)
	names, err := eventNames(s)
	if strings.Join(names, " ") != "ping message_end" || err != io.EOF {
		t.Errorf("rest = %v %v", names, err)
	}
}

func TestSendChatMessageContextCancel(t *testing.T) {
	srv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"event":"agent_message","answer":"a"}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c := newTestClient(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.SendChatMessage(ctx, ChatRequest{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = s.Next()
	if !errors.Is(err, ErrTruncatedStream) || !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel = %v", err)
	}
}

func TestChatStreamOversizedFrame(t *testing.T) {
	big := `data: {"event":"agent_message","answer":"` + strings.Repeat("x", 200) + `"}` + "\n\n"
	s := NewChatStream(strings.NewReader(`data: {"event":"agent_message","answer":"a"}` + "\n\n" + big))
	s.fr.max = 100
	names, err := eventNames(s)
	if len(names) != 1 || !errors.Is(err, ErrTruncatedStream) || !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("events %v, err %v", names, err)
	}
}
