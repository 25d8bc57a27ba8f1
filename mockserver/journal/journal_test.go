package journal

import (
	"strings"
	"testing"
	"time"
)

func TestRingKeepsTheNewestEntries(t *testing.T) {
	j := New(3)
	for i := range 5 {
		r := j.Start(Request{Method: "GET", Path: "/v1/x"})
		r.Frame(0, "message", 0, 0, []byte(strings.Repeat("x", 10)))
		r.Finish(200 + i)
	}
	got := j.List(Filter{})
	if len(got) != 3 || got[0].ID != 3 || got[2].ID != 5 || got[0].Status != 202 {
		t.Fatalf("%+v", got)
	}
	if n, want := j.Held(), costs(j); n != want || streamBytes(j) != 30 {
		t.Fatalf("held %d, want %d (evicted entries give theirs back); stream bytes %d, want 30", n, want, streamBytes(j))
	}
	j.Clear()
	if n := j.Held(); n != 0 || len(j.List(Filter{})) != 0 {
		t.Fatalf("after clear: %d bytes, %d entries", n, len(j.List(Filter{})))
	}
	if r := j.Start(Request{Method: "GET", Path: "/"}); r.ID() != 6 {
		t.Fatalf("ids restart after clear: %d", r.ID())
	}
}

func TestStreamBudgetKeepsTimingDropsBytes(t *testing.T) {
	j := New(10)
	r := j.Start(Request{Method: "POST", Path: "/v1/chat-messages"})
	// Room for three frames' timing and 25 bytes of data: the third
	// frame's bytes do not fit; timing is kept past the bound (an entry
	// being written is never dropped, and its frame list is capped).
	j.budget = j.Held() + 3*(frameOverhead+int64(len("agent_message"))) + 25
	for i := range 4 {
		r.Frame(i, "agent_message", time.Duration(i)*time.Millisecond, time.Duration(i)*time.Millisecond, []byte("0123456789"))
	}
	e, _ := j.Get(r.ID())
	if len(e.Frames) != 4 || e.Frames[1].Data == "" || e.Frames[2].Data != "" || !e.StreamDataDropped || e.Frames[3].PlannedMS != 3 {
		t.Fatalf("%+v", e)
	}
	if n := streamBytes(j); n != 20 {
		t.Fatalf("held %d", n)
	}
}

// costs sums what j's entries were charged; streamBytes their frame bytes.
func costs(j *Journal) int64       { return sum(j, func(r *Record) int64 { return r.cost }) }
func streamBytes(j *Journal) int64 { return sum(j, func(r *Record) int64 { return r.stream }) }

func sum(j *Journal, field func(*Record) int64) (n int64) {
	for _, r := range j.records() {
		r.mu.Lock()
		n += field(r)
		r.mu.Unlock()
	}
	return n
}

// frames is a FrameSource: frame i is its i-th string.
type frames struct{ f []string }

func (f *frames) Render(dst []byte, i int) []byte { return append(dst, f.f[i]...) }
func (f *frames) Size() int64                     { return 1000 }

// A rendered frame reads as a copied one, but the journal holds and charges
// its source once instead of every frame's bytes.
func TestRenderedFramesReadAsCopiedOnes(t *testing.T) {
	src := &frames{[]string{"data: {\"event\":\"agent_message\",\"answer\":\"Hi\"}\n\n", "data: {\"event\":\"message_end\"}\n\n"}}
	j := New(10)
	copied, rendered := j.Start(Request{Method: "POST", Path: "/v1/chat-messages"}), j.Start(Request{Method: "POST", Path: "/v1/chat-messages"})
	before := j.Held()
	for i, f := range src.f {
		copied.Frame(i, "agent_message", 0, 0, []byte(f))
	}
	copiedCost := j.Held() - before
	for i, f := range src.f {
		// The bytes written are a scratch buffer the writer reuses.
		buf := []byte(f)
		rendered.RenderedFrame(i, "agent_message", 0, 0, buf, src)
		copy(buf, strings.Repeat("x", len(buf)))
	}
	renderedCost := j.Held() - before - copiedCost
	a, _ := j.Get(copied.ID())
	b, _ := j.Get(rendered.ID())
	if len(b.Frames) != 2 || b.Frames[0] != a.Frames[0] || b.Frames[1] != a.Frames[1] || b.Frames[1].Data != src.f[1] {
		t.Fatalf("rendered %+v, copied %+v", b.Frames, a.Frames)
	}
	want := 2*(frameOverhead+int64(len("agent_message"))) + src.Size()
	if renderedCost != want {
		t.Errorf("rendered frames charged %d, want the frames' overhead and the source once: %d (copied: %d)", renderedCost, want, copiedCost)
	}
	for _, e := range j.List(Filter{}) {
		for _, f := range e.Frames {
			if f.Data != "" {
				t.Errorf("a listing holds frame bytes: %+v", f)
			}
		}
	}

	// A frame of another source is copied; the entry's source stays.
	other := &frames{[]string{"data: {\"event\":\"ping\"}\n\n"}}
	rendered.RenderedFrame(0, "ping", 0, 0, []byte(other.f[0]), other)
	if b, _ := j.Get(rendered.ID()); len(b.Frames) != 3 || b.Frames[0].Data != src.f[0] || b.Frames[2].Data != other.f[0] {
		t.Fatalf("%+v", b.Frames)
	}

	// An evicted entry still held by its request keeps no source.
	j.Clear()
	rendered.RenderedFrame(1, "message_end", 0, 0, []byte(src.f[1]), src)
	if e := rendered.Snapshot(true); len(e.Frames) != 0 || e.FrameCount != 4 || rendered.src != nil {
		t.Fatalf("evicted: %+v", e.Frames)
	}
}

// MaxEntryStream counts rendered frames' bytes as copied ones': what an
// entry reads back does not depend on how its frames were kept.
func TestRenderedFramesCountTowardsTheEntryBound(t *testing.T) {
	big := &frames{[]string{strings.Repeat("a", MaxEntryStream/2+1)}}
	j := New(10)
	r := j.Start(Request{Method: "POST", Path: "/v1/chat-messages"})
	for range 3 {
		r.RenderedFrame(0, "agent_message", 0, 0, []byte(big.f[0]), big)
	}
	e, _ := j.Get(r.ID())
	if len(e.Frames) != 3 || e.Frames[0].Data != big.f[0] || e.Frames[1].Data != "" || !e.StreamDataDropped {
		t.Fatalf("kept %d frames, data %d/%d/%d bytes, dropped %v", len(e.Frames), len(e.Frames[0].Data), len(e.Frames[1].Data), len(e.Frames[2].Data), e.StreamDataDropped)
	}
}

func TestMaxFramesCountsTheRest(t *testing.T) {
	j := New(1)
	r := j.Start(Request{Method: "POST", Path: "/v1/chat-messages"})
	for i := range MaxFrames + 7 {
		r.Frame(i, "ping", 0, 0, nil)
	}
	e, _ := j.Get(r.ID())
	if len(e.Frames) != MaxFrames || e.FramesDropped != 7 || e.FrameCount != MaxFrames+7 {
		t.Fatalf("kept %d dropped %d count %d", len(e.Frames), e.FramesDropped, e.FrameCount)
	}
}

func TestMatchRoute(t *testing.T) {
	for _, c := range []struct {
		pattern, method, path string
		want                  bool
	}{
		{"/v1/chat-messages", "POST", "/v1/chat-messages", true},
		{"/v1/chat-messages", "POST", "/v1/chat-messages/abc/stop", false},
		{"POST /v1/chat-messages", "GET", "/v1/chat-messages", false},
		{"post /v1/chat-messages", "POST", "/v1/chat-messages", true},
		{"/v1/conversations/:id", "DELETE", "/v1/conversations/123", true},
		{"/v1/conversations/:id", "GET", "/v1/conversations", false},
		{"/v1/*", "GET", "/v1/messages", true},
		{"/v1/*", "GET", "/v1/conversations/1/name", true},
		{"/v1/*", "GET", "/v2/x", false},
		{"*", "GET", "/anything", true},
	} {
		if got := MatchRoute(c.pattern, c.method, c.path); got != c.want {
			t.Errorf("MatchRoute(%q, %q, %q) = %v", c.pattern, c.method, c.path, got)
		}
	}
}

func TestEventName(t *testing.T) {
	for in, want := range map[string]string{
		`data: {"event":"agent_message","answer":"x"}` + "\n\n": "agent_message",
		`data: {"event": "message_end"}` + "\n\n":               "message_end",
		"event: ping\n\n":              "ping",
		"data: not json\n\n":           "",
		`data: {"event":"unterminated`: "",
	} {
		if got := EventName([]byte(in)); got != want {
			t.Errorf("EventName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSlowSubscriberIsToldItLagged(t *testing.T) {
	j := New(10)
	ch, cancel := j.Subscribe()
	defer cancel()
	for range subscriberBuffer + 10 {
		j.Publish("state", nil)
	}
	for range subscriberBuffer {
		<-ch
	}
	j.Publish("state", nil)
	if ev := <-ch; ev.Type != EventLagged {
		t.Fatalf("want lagged, got %q", ev.Type)
	}
	if ev := <-ch; ev.Type != "state" {
		t.Fatalf("then the event: %q", ev.Type)
	}
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("channel open after cancel")
	}
}

// TestByteBoundDropsOldestEntries: past the byte bound the oldest entries
// go, the newest stays, and what is held never passes the bound.
func TestByteBoundDropsOldestEntries(t *testing.T) {
	j := NewBounded(1000, 256<<10)
	body := strings.Repeat("q", 60<<10)
	for i := range 50 {
		r := j.Start(Request{Method: "POST", Path: "/v1/chat-messages"})
		if !r.charge(int64(len(body))) {
			t.Fatal("a live entry was refused")
		}
		r.Frame(0, "message", 0, 0, []byte(body))
		r.Finish(200)
		if h := j.Held(); h > j.Bytes() {
			t.Fatalf("after %d entries %d bytes held, bound %d", i+1, h, j.Bytes())
		}
	}
	got := j.List(Filter{})
	if len(got) == 0 || len(got) > 3 || got[len(got)-1].ID != 50 || j.Dropped() != int64(50-len(got)) {
		t.Fatalf("kept %d entries (last %d), dropped %d", len(got), got[len(got)-1].ID, j.Dropped())
	}
	j.Clear()
	if j.Held() != 0 || streamBytes(j) != 0 {
		t.Fatalf("after clear %d bytes held (%d stream)", j.Held(), streamBytes(j))
	}
}

func TestClipKeepsRunes(t *testing.T) {
	var cut []string
	if got := clip("aé", 2, &cut, "x"); got != "a" || len(cut) != 1 {
		t.Fatalf("%q %v", got, cut)
	}
	if got := clip("abc", 3, &cut, "y"); got != "abc" || len(cut) != 1 {
		t.Fatalf("%q %v", got, cut)
	}
}

// A stream that says how many frames it will write fills one frame list.
func TestExpectFramesAllocatesOnce(t *testing.T) {
	j := New(10)
	r := j.Start(Request{Method: "POST", Path: "/v1/chat-messages"})
	r.Frame(0, "agent_message", 0, 0, nil)
	r.ExpectFrames(41)
	list := &r.e.Frames[:1][0]
	for i := range 41 {
		r.Frame(i+1, "agent_message", 0, 0, nil)
	}
	if e, _ := j.Get(r.ID()); &r.e.Frames[0] != list || len(e.Frames) != 42 || e.Frames[0].Index != 0 || e.Frames[41].Index != 41 {
		t.Fatalf("the frame list moved: %d frames, capacity %d", len(e.Frames), cap(r.e.Frames))
	}
	r.ExpectFrames(MaxFrames * 2) // bounded
	if c := cap(r.e.Frames); c > 42+MaxFrames {
		t.Fatalf("capacity %d", c)
	}

	// A record the journal dropped while its stream goes on gets no room.
	gone := j.Start(Request{Method: "POST", Path: "/v1/chat-messages"})
	j.Clear()
	gone.ExpectFrames(41)
	if c := cap(gone.e.Frames); c != 0 {
		t.Fatalf("an evicted record was given room for %d frames", c)
	}
}

// A shared frame (a live turn's bytes, which the recorder keeps) reads and
// costs as a copied one, and an evicted entry lets go of it.
func TestSharedFramesReadAndCostAsCopiedOnes(t *testing.T) {
	data := []string{"data: {\"event\":\"agent_message\",\"answer\":\"Hi\"}\n\n", "data: {\"event\":\"message_end\"}\n\n"}
	j := New(10)
	copied, shared := j.Start(Request{Method: "POST", Path: "/v1/chat-messages"}), j.Start(Request{Method: "POST", Path: "/v1/chat-messages"})
	before := j.Held()
	for i, f := range data {
		copied.Frame(i, "agent_message", 0, 0, []byte(f))
	}
	copiedCost := j.Held() - before
	// A frame the mock made up among them: copied.
	shared.Frame(-1, "ping", 0, 0, []byte("event: ping\n\n"))
	afterPing := j.Held()
	for i, f := range data {
		shared.SharedFrame(i, "agent_message", 0, 0, []byte(f))
	}
	if sharedCost := j.Held() - afterPing; sharedCost != copiedCost {
		t.Errorf("shared frames charged %d, copied ones %d", sharedCost, copiedCost)
	}
	a, _ := j.Get(copied.ID())
	b, _ := j.Get(shared.ID())
	if len(b.Frames) != 3 || b.Frames[0].Data != "event: ping\n\n" || b.Frames[1] != a.Frames[0] || b.Frames[2] != a.Frames[1] {
		t.Fatalf("shared %+v, copied %+v", b.Frames, a.Frames)
	}
	for _, e := range j.List(Filter{}) {
		for _, f := range e.Frames {
			if f.Data != "" {
				t.Errorf("a listing holds frame bytes: %+v", f)
			}
		}
	}
	j.release(shared)
	if shared.shared != nil {
		t.Error("an evicted entry still holds its shared frames")
	}
}
