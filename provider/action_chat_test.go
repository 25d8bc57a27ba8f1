package provider

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// The dify_chat action's behaviour, driven without Terraform against the
// in-process mock; the acceptance tests cover the same action through the
// Terraform CLI (>= 1.14).

func testProviderData(t *testing.T, env *mockEnv) *providerData {
	t.Helper()
	d, err := newProviderData(settings{BaseURL: env.BaseURL, APIKey: testAPIKey, User: "acc-user",
		RetryMaxAttempts: 1, RetryMaxDelay: 50 * time.Millisecond, RequestTimeout: 10 * time.Second}, "test")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func chatModel(query string) chatActionModel {
	return chatActionModel{Query: types.StringValue(query), User: types.StringNull(), ConversationID: types.StringNull(),
		Inputs: types.MapNull(types.StringType), ExpectAnswerMatches: types.StringNull(), KeepConversation: types.BoolNull(), Timeout: types.StringNull()}
}

func conversationCount(t *testing.T, env *mockEnv) int {
	t.Helper()
	page, err := env.client().ListConversations(context.Background(), dify.ListConversationsParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Data)
}

// TestChatAction_progress replays the tool-use cassette: progress reports
// every thought and tool call of the recording and the whole answer, the
// expectation passes, and the conversation is deleted afterwards.
func TestChatAction_progress(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	rec, folded := env.cassetteTurn("tool-use")
	a := &chatAction{data: testProviderData(t, env)}
	m := chatModel(rec.Request.Query)
	m.Inputs = types.MapValueMust(types.StringType, map[string]attr.Value{"home_city": types.StringValue("Berlin")})
	m.ExpectAnswerMatches = types.StringValue(regexp.QuoteMeta(lastLine(folded.Answer)))
	var got []string
	diags := a.run(context.Background(), m, func(s string) { got = append(got, s) })
	if diags.HasError() {
		t.Fatalf("run failed: %v", diags)
	}
	all := strings.Join(got, "\n")
	for _, th := range folded.Thoughts {
		if th := strings.TrimSpace(deref(th.Thought)); th != "" && !strings.Contains(all, "thought: "+clip(th, progressFieldMax)) {
			t.Errorf("thought %q not reported:\n%s", th, all)
		}
		if tool := deref(th.Tool); tool != "" && !strings.Contains(all, "tool call: "+tool) {
			t.Errorf("tool call %q not reported:\n%s", tool, all)
		}
	}
	var answer []string
	for _, line := range got {
		if s, ok := strings.CutPrefix(line, "answer: "); ok {
			answer = append(answer, s)
		}
	}
	if want := nonEmptyLines(folded.Answer); strings.Join(nonEmptyLines(strings.Join(answer, "\n")), "\n") != strings.Join(want, "\n") {
		t.Errorf("streamed answer lines %q, want %q", answer, want)
	}
	if !strings.Contains(all, "reply finished: ") || !strings.Contains(all, "deleted conversation ") || !strings.Contains(all, "answer matches") {
		t.Errorf("summary, clean-up or verdict missing:\n%s", all)
	}
	if n := conversationCount(t, env); n != 0 {
		t.Errorf("%d conversations left; the action must delete the one it started", n)
	}
}

// TestChatAction_failures: an unmet expectation, an in-stream error event and
// a timeout each fail with their own message, and none leaves a
// conversation behind.
func TestChatAction_failures(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	a := &chatAction{data: testProviderData(t, env)}
	plain, _ := env.cassetteTurn("plain-answer")
	limit, _ := env.cassetteTurn("run-limit")

	m := chatModel(plain.Request.Query)
	m.ExpectAnswerMatches = types.StringValue(`(?i)\bnever in this answer\b`)
	diags := a.run(context.Background(), m, func(string) {})
	if !diags.HasError() || !strings.Contains(diags[0].Summary(), "did not match") || !strings.Contains(diags[0].Detail(), "was deleted") {
		t.Errorf("unmet expectation: %v", diags)
	}

	diags = a.run(context.Background(), chatModel(limit.Request.Query), func(string) {})
	if !diags.HasError() || !strings.Contains(diags[0].Detail(), `code "agent_run_limit_exceeded"`) || !strings.Contains(diags[0].Detail(), "was deleted") {
		t.Errorf("in-stream error: %v", diags)
	}
	if n := conversationCount(t, env); n != 0 {
		t.Errorf("%d conversations left after failures", n)
	}
}

func TestChatAction_timeout(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{Speed: 1})
	a := &chatAction{data: testProviderData(t, env)}
	long, _ := env.cassetteTurn("long-with-pings")
	m := chatModel(long.Request.Query)
	m.Timeout = types.StringValue("1s")
	start := time.Now()
	diags := a.run(context.Background(), m, func(string) {})
	if !diags.HasError() || !strings.Contains(diags[0].Detail(), "within the timeout of 1s") || !strings.Contains(diags[0].Detail(), "was deleted") {
		t.Errorf("timeout: %v", diags)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("a 1s timeout took %s", took)
	}
	if n := conversationCount(t, env); n != 0 {
		t.Errorf("%d conversations left after the timeout", n)
	}
}

// TestChatAction_keepAndExisting: keep_conversation keeps the new
// conversation; a message to an existing conversation never deletes it.
func TestChatAction_keepAndExisting(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	a := &chatAction{data: testProviderData(t, env)}
	m := chatModel("Hello")
	m.KeepConversation = types.BoolValue(true)
	if diags := a.run(context.Background(), m, func(string) {}); diags.HasError() {
		t.Fatal(diags)
	}
	page, err := env.client().ListConversations(context.Background(), dify.ListConversationsParams{Limit: 100})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("kept conversations: %v %v", page, err)
	}
	m = chatModel("Hello")
	m.ConversationID = types.StringValue(page.Data[0].ID)
	if diags := a.run(context.Background(), m, func(string) {}); diags.HasError() {
		t.Fatal(diags)
	}
	msgs, err := env.client().ListMessages(context.Background(), dify.ListMessagesParams{ConversationID: page.Data[0].ID})
	if err != nil || len(msgs.Data) != 2 {
		t.Fatalf("the existing conversation should hold 2 messages: %v %v", msgs, err)
	}
}

func lastLine(s string) string {
	lines := nonEmptyLines(s)
	return lines[len(lines)-1]
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
