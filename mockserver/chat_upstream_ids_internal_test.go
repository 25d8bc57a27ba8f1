package mockserver

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
)

const (
	upConv = "c0c0c0c0-1111-4111-8111-111111111111"
	upMsg  = "d0d0d0d0-2222-4222-8222-222222222222"
	upTask = "e0e0e0e0-3333-4333-8333-333333333333"
	upTh   = "f0f0f0f0-4444-4444-8444-444444444444"
)

func upFrame(fields string) []byte {
	return []byte(`data: {"event":` + fields + `,"conversation_id":"` + upConv + `","message_id":"` + upMsg + `","created_at":1764471600,"task_id":"` + upTask + `"}` + "\n\n")
}

// The client sees the mock's conversation, message and task ids in every
// frame; thought ids pass; the stored message folds the same frames.
func TestLiveFramesCarryTheMocksIDs(t *testing.T) {
	conv, msg, task := replay.NewUUID(), replay.NewUUID(), replay.NewUUID()
	ids := newLiveIDs(conv, msg, task)
	up := [][]byte{
		upFrame(`"agent_thought","id":"` + upTh + `","position":1,"thought":"","observation":"","tool":"","tool_input":"","tool_labels":{},"message_files":[]`),
		upFrame(`"agent_message","id":"` + upMsg + `","answer":"Hello "`),
		upFrame(`"agent_message","id":"` + upMsg + `","answer":"Seoul"`),
		upFrame(`"message_end","id":"` + upMsg + `","metadata":{"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"total_price":"0.1","currency":"USD","latency":0.5}},"files":null`),
	}
	turn := replay.NewLiveTurn("agent", "Plan Seoul")
	var sent []cassette.RecordedFrame
	for i, raw := range up {
		out := rewritten(ids, raw)
		for _, old := range []string{upConv, upMsg, upTask} {
			if strings.Contains(string(out), old) {
				t.Fatalf("frame %d still carries upstream id %s: %s", i, old, out)
			}
		}
		for _, want := range []string{conv, msg, task} {
			if !strings.Contains(string(out), want) {
				t.Fatalf("frame %d lacks the mock's id %s: %s", i, want, out)
			}
		}
		f := cassette.RecordedFrame{Offset: time.Duration(i) * 100 * time.Millisecond, Raw: out}
		sent = append(sent, f)
		turn.Add(f)
	}
	if !strings.Contains(string(sent[0].Raw), upTh) {
		t.Errorf("the thought id was changed: %s", sent[0].Raw)
	}
	bound := turn.Bind(replay.Binding{ConversationID: conv, MessageID: msg, TaskID: task, Now: time.Unix(1764471600, 0), Keep: true})
	res := bound.Fold(len(sent))
	if res.Answer != "Hello Seoul" || !res.Ended || res.Usage == nil || res.Usage.PromptTokens != 3 {
		t.Errorf("result = %+v", res)
	}
	if len(res.Thoughts) != 1 || res.Thoughts[0].ID != upTh || res.Thoughts[0].MessageID != msg {
		t.Errorf("thoughts = %+v; want the streamed thought id and the mock's message id", res.Thoughts)
	}
}

// rewritten is raw with ids.read applied to a copy.
func rewritten(ids *liveIDs, raw []byte) []byte {
	return ids.read(append([]byte(nil), raw...)).Raw
}

func TestUpstreamConversationsAreBounded(t *testing.T) {
	var m upstreamConversations
	for i := range maxMapped + 5 {
		m.set("conv-"+strconv.Itoa(i), "up")
	}
	if len(m.byID) != maxMapped || len(m.order) != maxMapped {
		t.Fatalf("%d mappings kept, want %d", len(m.byID), maxMapped)
	}
	if _, ok := m.get("conv-0"); ok {
		t.Error("the oldest mapping was kept")
	}
	m.set("conv", "up-1")
	if up, ok := m.get("conv"); !ok || up != "up-1" {
		t.Errorf("get = %q %v", up, ok)
	}
}

// FuzzLiveIDs: whatever the upstream sends, rewriting never panics, keeps
// every frame's length (UUIDs replace UUIDs), leaves a frame without a
// learnt id as it was, and replaces a learnt conversation id where it
// stands alone.
func FuzzLiveIDs(f *testing.F) {
	f.Add(upFrame(`"agent_message","id":"`+upMsg+`","answer":"Hello"`), []byte("event: ping\n\n"))
	f.Add([]byte(`data: {"event":"message_end","conversation_id":"short","task_id":null}`+"\n\n"), []byte("data: not json\n\n"))
	f.Add([]byte("data: {\"conversation_id\":\""+upConv+"\"}\r\n\r\n"), upFrame(`"error","code":"x"`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		conv, msg, task := replay.NewUUID(), replay.NewUUID(), replay.NewUUID()
		ids := newLiveIDs(conv, msg, task)
		for _, raw := range [][]byte{a, b, a} {
			out := rewritten(ids, raw)
			if len(out) != len(raw) {
				t.Fatalf("%q became %q: another length", raw, out)
			}
			touched := false
			for _, old := range ids.from {
				touched = touched || strings.Contains(string(raw), string(old))
			}
			if !touched && string(out) != string(raw) {
				t.Fatalf("%q holds no learnt id but became %q", raw, out)
			}
		}
		probe := []byte("data: {\"conversation_id\":\"" + upConv + "\"}\n\n")
		if out := rewritten(ids, probe); strings.Contains(string(out), upConv) && conv != upConv {
			t.Fatalf("the upstream conversation id survived: %q", out)
		}
	})
}

// A frame is decoded once, after its ids are rewritten: an answer that
// quotes the upstream's conversation id is stored as the client was sent
// it, with the mock's id, and a frame bringing a new id (here the first)
// is rewritten before it is decoded for the turn.
func TestLiveFramesAreStoredAsSent(t *testing.T) {
	conv, msg, task := replay.NewUUID(), replay.NewUUID(), replay.NewUUID()
	ids := newLiveIDs(conv, msg, task)
	turn := replay.NewLiveTurn("agent", "q")
	for i, raw := range [][]byte{
		upFrame(`"agent_message","id":"` + upMsg + `","answer":"Your conversation is ` + upConv + `. "`),
		upFrame(`"agent_message","id":"` + upMsg + `","answer":"Task ` + upTask + `."`),
		upFrame(`"message_end","id":"` + upMsg + `","metadata":{}`),
	} {
		f := ids.read(append([]byte(nil), raw...))
		if strings.Contains(string(f.Raw), upConv) || strings.Contains(string(f.Raw), upTask) {
			t.Fatalf("frame %d was sent with an upstream id: %s", i, f.Raw)
		}
		if c, m, k := f.Envelope(); c != conv || m != msg || k != task {
			t.Fatalf("frame %d decoded with ids %s %s %s, want the mock's", i, c, m, k)
		}
		turn.AddRead(f, time.Duration(i)*time.Millisecond)
	}
	res := turn.Bind(replay.Binding{ConversationID: conv, MessageID: msg, TaskID: task, Now: time.Unix(1764471600, 0), Keep: true}).Fold(turn.Len())
	if want := "Your conversation is " + conv + ". Task " + task + "."; res.Answer != want {
		t.Errorf("stored answer %q, want %q (as sent)", res.Answer, want)
	}
}
