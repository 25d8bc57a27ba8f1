package mockserver_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/rules"
)

// chatEntry is the journal entry of the last chat request.
func (e *env) chatEntry() journal.Entry {
	e.t.Helper()
	list := e.srv.Journal().List(journal.Filter{Route: "POST /v1/chat-messages"})
	if len(list) == 0 {
		e.t.Fatal("no chat request in the journal")
	}
	last := list[0]
	for _, en := range list {
		if en.ID > last.ID {
			last = en
		}
	}
	full, _ := e.srv.Journal().Get(last.ID)
	return full
}

// An annotation's answer is a turn like any other (issue 19): the one
// player streams it, so it is journaled frame by frame, takes faults from
// the header and from control-API rules, and is stored as every turn is.
func TestAnnotationTurnIsLikeAnyTurn(t *testing.T) {
	for _, mode := range []string{dify.ModeAgent, dify.ModeAgentChat} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, mockserver.Config{Mode: mode})
			a := e.createAnnotation("What are your opening hours?", "9 to 5.")
			e.replyJob("enable", 0.9, "openai", "m")

			_, frames := e.chat(chatBody("what are your opening hours", "u1"))
			en := e.chatEntry()
			if en.Annotation != a.ID || en.Cassette != "" || en.Turn != nil || en.Outcome != "completed" || en.FrameCount != len(frames) {
				t.Errorf("journal entry: annotation %q cassette %q turn %v outcome %q frames %d (streamed %d)",
					en.Annotation, en.Cassette, en.Turn, en.Outcome, en.FrameCount, len(frames))
			}
			if n := len(en.Frames); n != len(frames) || en.Frames[n-1].Event != "message_end" {
				t.Errorf("journal frames %+v", en.Frames)
			}

			// A header fault: the stream ends with Dify's error event after
			// the first frame, and the turn is stored as an errored turn.
			resp, frames := e.chat(chatBody("what are your opening hours", "u2"), "X-Dify-Mock-Fault", "error-after:1;code=completion_request_error;message=boom")
			if resp.Header.Get(mockserver.HeaderAnnotation) != a.ID || len(frames) != 2 || frames[1].event() != "error" || frames[1].str("message") != "boom" {
				t.Fatalf("faulted annotation turn: %v", frames)
			}
			if m := e.messages(frames[0].str("conversation_id"), "u2"); len(m) != 1 || m[0].Status != "error" || m[0].Error == nil || *m[0].Error != "boom" {
				t.Errorf("stored %+v", m)
			}
			if en := e.chatEntry(); en.Outcome != "faulted" || en.Fault == "" {
				t.Errorf("journal: outcome %q fault %q", en.Outcome, en.Fault)
			}

			// A rule's fault applies to it, and the rule is used up by it.
			r, err := e.srv.Rules().Add(rules.Rule{Fault: "error-after:0", Times: 1})
			if err != nil {
				t.Fatal(err)
			}
			_, frames = e.chat(chatBody("what are your opening hours", "u3"))
			if len(frames) != 1 || frames[0].event() != "error" {
				t.Errorf("rule fault on an annotation turn: %v", frames)
			}
			if en := e.chatEntry(); en.Rule != r.ID {
				t.Errorf("journal rule %q, want %q", en.Rule, r.ID)
			}
			if e.srv.Rules().Len() != 0 {
				t.Error("a times:1 rule survived the turn it applied to")
			}

			// Every turn's stored message has the Service API's parent.
			_, frames = e.chat(chatBody("what are your opening hours", "u4"))
			conv := frames[0].str("conversation_id")
			e.chat(chatBody("what are your opening hours", "u4", "conversation_id", conv))
			for _, m := range e.messages(conv, "u4") {
				if m.ParentMessageID == nil || *m.ParentMessageID != "00000000-0000-0000-0000-000000000000" {
					t.Errorf("parent_message_id %v, want UUID_NIL (every Service API message)", m.ParentMessageID)
				}
			}
		})
	}
}

// message_end of an annotation turn carries every key of Dify's LLMUsage
// (LLMUsage.empty_usage(): time_to_first_token and time_to_generate null),
// as the recorded model turns carry them.
func TestAnnotationUsageHasEveryKey(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	e.createAnnotation("Hours?", "9 to 5.")
	e.replyJob("enable", 0.9, "openai", "m")
	_, frames := e.chat(chatBody("hours", "u1"))
	end := frames[len(frames)-1]
	usage, _ := end.data["metadata"].(map[string]any)["usage"].(map[string]any)
	for _, k := range []string{"prompt_tokens", "prompt_unit_price", "prompt_price_unit", "prompt_price", "completion_tokens",
		"completion_unit_price", "completion_price_unit", "completion_price", "total_tokens", "total_price", "currency",
		"latency", "time_to_first_token", "time_to_generate"} {
		if _, ok := usage[k]; !ok {
			t.Errorf("usage lacks %q: %s", k, end.raw)
		}
	}
	if usage["total_price"] != "0.0" || usage["time_to_first_token"] != nil {
		t.Errorf("usage %v", usage)
	}
}

// A times:1 rule is used up only by a request that plays: one Dify would
// refuse (here: an unknown conversation, a blank query) leaves it for the
// next request.
func TestRuleIsUsedOnlyByARequestThatPlays(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	r, err := e.srv.Rules().Add(rules.Rule{Cassette: "tools", Times: 1})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := e.do("POST", "/chat-messages", chatBody("hi", "u1", "conversation_id", "3f1c5b1e-0000-4000-8000-000000000000"))
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown conversation: %d", resp.StatusCode)
	}
	resp, _ = e.do("POST", "/chat-messages", chatBody("   ", "u1"))
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("blank query: %d", resp.StatusCode)
	}
	if list := e.srv.Rules().List(); len(list) != 1 || list[0].Used != 0 {
		t.Fatalf("refused requests used the rule: %+v", list)
	}
	resp, _ = e.chat(chatBody("hi", "u1"))
	if resp.Header.Get(mockserver.HeaderCassette) != "tools" {
		t.Errorf("the rule's cassette did not play: %s", resp.Header.Get(mockserver.HeaderCassette))
	}
	if en := e.chatEntry(); en.Rule != r.ID {
		t.Errorf("journal rule %q", en.Rule)
	}
	if e.srv.Rules().Len() != 0 {
		t.Error("the rule was not used up by the request that played")
	}
}

// messages is GET /messages of a conversation.
func (e *env) messages(conv, user string) []dify.Message {
	e.t.Helper()
	resp, body := e.do("GET", "/messages?conversation_id="+conv+"&user="+user, nil)
	if resp.StatusCode != 200 {
		e.t.Fatalf("GET /messages: %d %s", resp.StatusCode, body)
	}
	return decode[dify.MessagePage](e.t, body).Data
}

// storedValuesSet is the test set plus a cassette whose answer ends in a
// newline and carries template variables, with an app whose opening
// statement has variables and a special token.
func storedValuesSet(t *testing.T) *cassette.Set {
	t.Helper()
	params := strings.Replace(testParams, `"opening_statement":"Hello from the test app"`,
		`"opening_statement":"Hi {{city}}! Budget: {{budget}}. {{missing}}<|endoftext|> {{#query#}}"`, 1)
	set := testSet(t, params) // its app.yaml has the opening statement
	c, _ := set.Get("timing")
	dir := filepath.Dir(c.Path)
	answer := "  Use {{name}} or {{#context#}}, not {{ spaced }}.\n"
	data := chatFile(t, cassette.Meta{Description: "an answer to normalise", Mode: "agent"},
		turn{query: "Template me", frames: []frame{delta(0, recMsg, answer), closing(ms(1), recMsg, answer), end(ms(2), recMsg)}})
	if err := os.WriteFile(filepath.Join(dir, "template.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The values the store phase writes, each as Dify's code writes it.
func TestStoredValuesAreDifys(t *testing.T) {
	e := newEnv(t, mockserver.Config{Cassettes: storedValuesSet(t)})
	_, frames := e.chat(chatBody("Template me", "u1", "inputs", map[string]any{"city": "Rio {{x}}", "budget": "low"}))
	streamed := ""
	for _, f := range frames {
		if f.event() == "message" {
			streamed = f.str("answer")
		}
	}
	if streamed != "  Use {{name}} or {{#context#}}, not {{ spaced }}.\n" {
		t.Fatalf("streamed %q: the stream is as recorded", streamed)
	}
	conv := frames[0].str("conversation_id")
	// EasyUIBasedGenerateTaskPipeline._save_message:
	// remove_template_variables(answer.strip()).
	m := e.messages(conv, "u1")
	if len(m) != 1 || m[0].Answer != "Use {name} or {#context#}, not {{ spaced }}." {
		t.Errorf("stored answer %q", m[0].Answer)
	}
	// MessageBasedAppGenerator._get_conversation_introduction: the opening
	// statement through PromptTemplateParser.format (string values have
	// their own variables rewritten, absent ones stay, <|…|> removed).
	_, body := e.do("GET", "/conversations?user=u1", nil)
	page := decode[dify.ConversationPage](t, body)
	want := "Hi Rio {x}! Budget: low. {{missing}} {{#query#}}"
	if len(page.Data) != 1 || page.Data[0].Introduction == nil || *page.Data[0].Introduction != want {
		t.Errorf("introduction = %s, want %q", body, want)
	}
}

// A conversation's updated_at is set when a turn in it begins (Dify's
// MessageBasedAppGenerator._init_generate_records), not when it ends: a
// first turn leaves it at the creation time, a follow-up moves it to the
// follow-up's start. The clock runs a thousand times fast, so the turn's
// few hundred milliseconds are minutes of created_at.
func TestConversationUpdatedWhenATurnBegins(t *testing.T) {
	base, start := time.Unix(1800000000, 0), time.Now()
	clock := func() time.Time { return base.Add(time.Since(start) * 1000) }
	e := newEnv(t, mockserver.Config{Now: clock})
	conversation := func() dify.Conversation {
		t.Helper()
		_, body := e.do("GET", "/conversations?user=clock", nil)
		p := decode[dify.ConversationPage](t, body)
		if len(p.Data) != 1 {
			t.Fatalf("conversations: %s", body)
		}
		return p.Data[0]
	}
	_, frames := e.chat(chatBody("Count to three", "clock"), mockserver.HeaderSpeed, "1")
	c := conversation()
	if c.UpdatedAt != c.CreatedAt {
		t.Errorf("after the first turn: created_at %d, updated_at %d; want them equal", c.CreatedAt, c.UpdatedAt)
	}
	before := clock().Unix()
	e.chat(chatBody("Count to three", "clock", "conversation_id", frames[0].str("conversation_id")), mockserver.HeaderSpeed, "1")
	after := clock().Unix()
	c = conversation()
	// The turn lasts well over 100 clock-seconds; its start is within the
	// first few of them.
	if c.UpdatedAt < before || c.UpdatedAt > before+(after-before)/2 {
		t.Errorf("follow-up ran from %d to %d: updated_at %d, want its start", before, after, c.UpdatedAt)
	}
}

// The journal keeps a replay's recorded frames by rendering them again from
// the bound turn (journal.RenderedFrame) instead of copying each: what it
// gives back must still be the bytes the client read, frame for frame, with
// a made-up frame (a fault's error) among them.
func TestJournalFramesAreTheBytesSent(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	for _, hdr := range [][]string{nil, {"X-Dify-Mock-Fault", "error-after:2;code=completion_request_error;message=boom"}} {
		resp := e.send(http.MethodPost, "/chat-messages", chatBody("hello", "u1"), hdr...)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("chat: %d %v", resp.StatusCode, err)
		}
		en := e.chatEntry()
		var journaled strings.Builder
		for _, f := range en.Frames {
			journaled.WriteString(f.Data)
		}
		if journaled.String() != string(body) || len(en.Frames) < 3 || en.StreamDataDropped {
			t.Errorf("fault %v: the journal's %d frames\n%s\nthe client read\n%s", hdr, len(en.Frames), journaled.String(), body)
		}
	}
}
