package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// The provider under faults during create (reads under 429/5xx are in
// TestAccProvider_retriesReads): a chat message is never sent twice, a
// failed create leaves nothing in Terraform state, and what Dify started for
// it is cleaned up when the provider knows of it.

// chatsSent counts POST /chat-messages (stop requests excluded).
func chatsSent(env *mockEnv) int { return env.counts.get("POST /chat-messages") }

// TestAccConversationResource_createErrorsAreNotRetried: 500 and 503 on the
// first message fail the create with the status and code, the message
// reaches the server exactly once, the diagnostic says the conversation may
// exist and how to find and import it (a 5xx does not prove Dify created
// nothing), nothing is recorded in state, and the same configuration then
// applies cleanly.
func TestAccConversationResource_createErrorsAreNotRetried(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	config := conversationConfig(env, `query = "Hello"`)
	var before int
	inject := func(status int) func() {
		return func() {
			before = chatsSent(env)
			env.fault("POST /v1/chat-messages", fmt.Sprintf("status:%d", status), 1)
		}
	}
	checkSentOnce := func() {
		if got := chatsSent(env) - before; got != 1 {
			t.Errorf("the first message was sent %d times, want exactly once", got)
		}
	}
	step := func(status int, code string) resource.TestStep {
		return resource.TestStep{
			PreConfig: inject(status),
			Config:    config,
			ExpectError: errRE("Unable to create conversation", fmt.Sprintf(`HTTP %d with code "%s"`, status, code),
				"sent once and not retried: it creates something", "may have reached Dify", "never re-sent automatically",
				"dify_conversations", "terraform import dify_conversation.NAME acc-user/CONVERSATION_ID", "run terraform apply again"),
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			step(500, "internal_server_error"),
			{PreConfig: checkSentOnce, Config: env.providerBlock(), ConfigStateChecks: []statecheck.StateCheck{expectNoResources{}}, Check: expectRemaining(env, 0)},
			step(503, "service_unavailable"),
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

// TestAccConversationResource_createRetriedOn429: Dify answers a 429 before
// it writes anything, so a first message refused with 429 and Retry-After is
// sent again after the wait and the apply succeeds with one conversation;
// a 429 that outlasts retry_max_attempts fails saying how many attempts were
// made; a Retry-After longer than the create timeout is not waited for, and
// the diagnostic says so. Refused attempts never leave a conversation.
func TestAccConversationResource_createRetriedOn429(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	// providerBlock's 50ms cap would shorten every Retry-After.
	block := func(maxDelay string, extra ...string) string {
		return strings.Replace(env.providerBlock(extra...), `retry_max_delay = "50ms"`, `retry_max_delay = "`+maxDelay+`"`, 1)
	}
	var before int
	sent := func(want int) func(*terraform.State) error {
		return func(*terraform.State) error {
			if got := chatsSent(env) - before; got != want {
				return fmt.Errorf("%d chat requests, want %d", got, want)
			}
			return nil
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				// Two attempts at most, both refused.
				PreConfig: func() {
					before = chatsSent(env)
					env.fault("POST /v1/chat-messages", "status:429;retry-after=1", 2)
				},
				Config: block("2s", `retry_max_attempts = 2`) +
					"\nresource \"dify_conversation\" \"test\" {\n  query = \"Hello\"\n}\n",
				ExpectError: errRE("Unable to create conversation", `HTTP 429 with code "too_many_requests"`,
					"made 2 attempts (retry_max_attempts = 2); each one failed", "Dify refused the first message", "nothing was created"),
			},
			{
				// A short Retry-After, then one the create timeout cannot wait
				// for (the newest rule answers first).
				PreConfig: func() {
					if got := chatsSent(env) - before; got != 2 {
						t.Errorf("%d chat requests with retry_max_attempts = 2", got)
					}
					before = chatsSent(env)
					env.fault("POST /v1/chat-messages", "status:429;retry-after=60", 1)
					env.fault("POST /v1/chat-messages", "status:429;retry-after=1", 1)
				},
				Config: block("2m") +
					"\nresource \"dify_conversation\" \"test\" {\n  query = \"Hello\"\n  timeouts {\n    create = \"10s\"\n  }\n}\n",
				ExpectError: errRE("Unable to create conversation", "HTTP 429",
					"made 2 attempts", "next wait (1m0s) would have passed the timeout", "nothing was created"),
			},
			{
				PreConfig: func() {
					if err := sent(2)(nil); err != nil {
						t.Error(err)
					}
					before = chatsSent(env)
					env.fault("POST /v1/chat-messages", "status:429;retry-after=1", 1)
				},
				Config: block("2s") +
					"\nresource \"dify_conversation\" \"test\" {\n  query = \"Hello\"\n}\n",
				Check: resource.ComposeTestCheckFunc(sent(2), expectRemaining(env, 1)),
			},
		},
	})
}

// TestAccConversationResource_cutStream cuts the reply stream after three
// frames: the create fails naming the early end, stops the run and deletes
// the conversation Dify had started, records nothing in state, and sent the
// message once. The same configuration then applies cleanly.
func TestAccConversationResource_cutStream(t *testing.T) {
	// The mock resets the connection after three frames, as a dropped
	// network or a proxy timeout would.
	env := newMockEnv(t, mockserver.Config{})
	cut := env.fault("POST /v1/chat-messages", "reset-after:3", 1)
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
					if got := env.faultUsed(cut); got != 1 {
						t.Errorf("the stream was cut %d times, want 1", got)
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
	env := newMockEnv(t, mockserver.Config{})
	cut := env.fault("POST /v1/chat-messages", "reset-after:0", 1)
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
					if got := env.faultUsed(cut); got != 1 {
						t.Errorf("the stream was cut %d times, want 1", got)
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
