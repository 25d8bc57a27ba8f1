package record_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// quickTurn is agentTurn without its pauses, for tests that forward
// thousands of turns.
func quickTurn(answer1, answer2 string) []scheduledFrame {
	turn := agentTurn(answer1, answer2)
	for i := range turn {
		turn[i].At = 0
	}
	return turn
}

// liveHeap is the heap still in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// checkHeld fails when one of the recorder's per-session structures holds
// more than its bound.
func checkHeld(t *testing.T, rec *record.Recorder, bounds map[string]int) {
	t.Helper()
	held := record.Held(rec)
	for name, n := range held {
		if bound, ok := bounds[name]; ok && n > bound {
			t.Errorf("%s holds %d entries, want at most %d", name, n, bound)
		}
	}
	t.Logf("held: %v", held)
}

// A hybrid server forwards distinct conversations for as long as it runs:
// what the recorder keeps of them stays within the open-session bound,
// while a follow-up still joins its conversation's cassette. Before the
// bound, 2,000 conversations left 2,000 entries in each index (message and
// task ids too, which nobody looks up in hybrid mode) and the recorder held
// 1.3 MB; with 50 open it holds about 120 KiB, its fixed part included.
func TestForwardKeepsABoundedNumberOfSessionsOpen(t *testing.T) {
	const conversations, open = 2000, 50
	const maxRetained = 256 << 10
	up := newFakeDify(t, quickTurn("Hello ", "there"))
	up.freshIDs = true
	// No log: its lines would be held by the recorder's Logf.
	rec, _ := liveRecorder(t, up, t.TempDir(), func(c *record.Config) { c.MaxTurns, c.Logf = 4, nil })
	record.SetBounds(rec, open, open)

	first, _, err := forward(t, rec, record.ChatTurn{Query: "question 0", User: "user-0"})
	if err != nil || !first.Saved {
		t.Fatalf("first turn: %v %+v", err, first)
	}
	for i := 1; i < conversations; i++ {
		if _, _, err := forward(t, rec, record.ChatTurn{Query: fmt.Sprintf("question %d", i), User: fmt.Sprintf("user-%d", i)}); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if i == 1 {
			// While its session is open, a follow-up lands in the same cassette.
			again, _, err := forward(t, rec, record.ChatTurn{Query: "and then?", User: "user-0", ConversationID: first.ConversationID})
			if err != nil || !again.Saved || again.Cassette != first.Cassette || again.Turn != 1 {
				t.Fatalf("follow-up while open: %v %+v", err, again)
			}
		}
	}
	checkHeld(t, rec, map[string]int{"open": open, "reserved": open, "byConversation": open, "lastByUser": open,
		"byTask": 0, "byMessage": 0, "byRequested": 0, "pending": 0})

	// Closed long ago: forwarded, but not added to its cassette out of order.
	late, _, err := forward(t, rec, record.ChatTurn{Query: "still there?", User: "user-0", ConversationID: first.ConversationID})
	if err != nil {
		t.Fatal(err)
	}
	if late.Saved || !strings.Contains(late.NotSaved, "no longer open") {
		t.Errorf("follow-up of a closed conversation: saved %v, reason %q", late.Saved, late.NotSaved)
	}

	// What the recorder holds is what a collection frees once it is gone.
	withRecorder := liveHeap()
	rec.Close()
	rec = nil
	retained := int64(withRecorder) - int64(liveHeap())
	t.Logf("%d conversations forwarded: the recorder holds %d KiB", conversations, retained>>10)
	if retained > maxRetained {
		t.Errorf("the recorder holds %d KiB after %d conversations, want at most %d KiB", retained>>10, conversations, maxRetained>>10)
	}
}

// The session closed at the bound is the least recently used one, not the
// oldest: a conversation that goes on stays open.
func TestForwardClosesTheLeastRecentlyUsedSession(t *testing.T) {
	up := newFakeDify(t, quickTurn("a", "b"))
	up.freshIDs = true
	rec, logs := liveRecorder(t, up, t.TempDir(), nil)
	record.SetBounds(rec, 2, 2)
	start := func(q string) *record.Forwarded {
		fwd, _, err := forward(t, rec, record.ChatTurn{Query: q, User: "u"})
		if err != nil || !fwd.Saved {
			t.Fatalf("%s: %v %+v", q, err, fwd)
		}
		return fwd
	}
	followUp := func(of *record.Forwarded) *record.Forwarded {
		fwd, _, err := forward(t, rec, record.ChatTurn{Query: "more", User: "u", ConversationID: of.ConversationID})
		if err != nil {
			t.Fatal(err)
		}
		return fwd
	}
	a, b := start("first trip"), start("second trip")
	if fwd := followUp(a); !fwd.Saved || fwd.Cassette != a.Cassette || fwd.Turn != 1 {
		t.Fatalf("follow-up of a: %+v", fwd)
	}
	start("third trip") // closes b, used before a's follow-up
	if fwd := followUp(a); !fwd.Saved || fwd.Cassette != a.Cassette || fwd.Turn != 2 {
		t.Errorf("a was closed: %+v", fwd)
	}
	if fwd := followUp(b); fwd.Saved || !strings.Contains(fwd.NotSaved, "no longer open") {
		t.Errorf("b was not closed: %+v", fwd)
	}
	if !strings.Contains(logs.String(), "cassette second-trip.yaml is complete") {
		t.Errorf("closing b was not logged:\n%s", logs)
	}
}

// Record mode: chats, and uploads of users who never chat, leave at most
// the bounds behind in every index and in the waiting list.
func TestRecordKeepsABoundedNumberOfSessionsOpen(t *testing.T) {
	const chats, open = 100, 10
	up := newFakeDify(t, quickTurn("One ", "two."))
	up.freshIDs = true
	rec, srv, _, logs := recorderFor(t, up, "")
	record.SetBounds(rec, open, open)
	for i := 0; i < chats; i++ {
		body := chatBody(fmt.Sprintf("question %d", i), "")
		body["user"] = fmt.Sprintf("user-%d", i)
		chat(t, srv.URL, nil, body)
		upload := "--XyZ\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\nuploader-" + fmt.Sprint(i) + "\r\n" +
			"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--XyZ--\r\n"
		if code, _ := do(t, http.MethodPost, srv.URL+"/v1/files/upload", "multipart/form-data; boundary=XyZ", upload); code != 201 {
			t.Fatalf("upload: %d", code)
		}
	}
	checkHeld(t, rec, map[string]int{"open": open, "reserved": open, "byConversation": open, "lastByUser": open,
		"byTask": open, "byMessage": open, "pending": open, "pending users": open})
	if err := stop(srv, rec); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Written()); n != chats+1 { // app.yaml too
		t.Errorf("%d files written, want %d", n, chats+1)
	}
	want := fmt.Sprintf("%d interaction(s) were not saved: %d already waited", chats-open, open)
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, logs)
	}
}

// Refused saves are each logged; Close returns the first hundred and counts
// the rest, so a server whose upstream keeps answering secrets does not
// collect them.
func TestRefusedSavesKeptAreBounded(t *testing.T) {
	const turns = 110
	turn := quickTurn("Done", ".")
	turn[0].Raw = dataFrame(`"agent_thought","id":"11111111-2222-4333-8444-555555555555","position":1,"thought":"the key is app-Qz7Xw2Vb","observation":"9Kq4Lm8Np3Rs6Tu1 ok","tool":"","tool_input":"","tool_labels":{},"message_files":[]`)
	up := newFakeDify(t, turn)
	up.freshIDs = true
	rec, _ := liveRecorder(t, up, t.TempDir(), nil)
	for i := 0; i < turns; i++ {
		if fwd, _, err := forward(t, rec, record.ChatTurn{Query: fmt.Sprintf("key %d", i), User: "u"}); err != nil || fwd.Saved {
			t.Fatalf("turn %d: %v %+v", i, err, fwd)
		}
	}
	checkHeld(t, rec, map[string]int{"refused": 100})
	err := rec.Close()
	if want := fmt.Sprintf("%d more save(s) refused", turns-100); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Close does not say %q (%d lines)", want, strings.Count(fmt.Sprint(err), "\n")+1)
	}
}
