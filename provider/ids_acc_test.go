package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// TestAccIdsCheckedAtPlan: ids that are not UUIDs fail the plan, before the
// conversation in the same configuration (or an action's trigger) is made.
func TestAccIdsCheckedAtPlan(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	withConversation := func(body string) string {
		return env.providerBlock() + `
resource "dify_conversation" "made_first" {
  query = "Hello"
}
` + body
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{Config: withConversation(`
resource "dify_message_feedback" "f" {
  message_id = "the-first-answer"
  rating     = "like"
}`), ExpectError: errRE("Invalid message id", `"the-first-answer" is not a Dify message id`, "UUIDs")},
			{Config: withConversation(`
data "dify_messages" "m" {
  conversation_id = "yesterday"
}`), ExpectError: errRE("Invalid conversation id", `"yesterday"`)},
			{Config: withConversation(`
data "dify_end_user" "u" {
  id = "alice"
}`), ExpectError: errRE("Invalid end user id", `"alice"`)},
			{Config: env.providerBlock() + `
resource "dify_conversation" "c" {
  query = "Hello"
  files = ["itinerary.md"]
}`, ExpectError: errRE("Invalid upload id", `"itinerary.md"`)},
		},
	})
	if n := env.counts.get("POST /chat-messages"); n != 0 {
		t.Errorf("%d chat messages sent; an invalid id must fail the plan first", n)
	}
}

// TestAccChatActionConversationIDCheckedAtPlan: dify_chat's conversation_id
// is checked before the triggering resource is created.
func TestAccChatActionConversationIDCheckedAtPlan(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	resource.ParallelTest(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_14_0)},
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{{
			Config: env.providerBlock() + `
resource "dify_conversation" "trigger" {
  query = "Hello"
  lifecycle {
    action_trigger {
      events  = [after_create]
      actions = [action.dify_chat.next]
    }
  }
}

action "dify_chat" "next" {
  config {
    query           = "And tomorrow?"
    conversation_id = "yesterday"
  }
}
`,
			ExpectError: errRE("Invalid conversation id", `"yesterday"`),
		}},
	})
	if n := env.counts.get("POST /chat-messages"); n != 0 {
		t.Errorf("%d chat messages sent; the trigger must not be created", n)
	}
}

// TestAccImportErrorsSayWhatToDo: imports that cannot work say why and what
// to do instead of Terraform's generic messages.
func TestAccImportErrorsSayWhatToDo(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	stream, err := env.client().SendChatMessage(context.Background(), dify.ChatRequest{Query: "Hello", User: "frontdesk", Inputs: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := dify.Collect(stream)
	if err != nil {
		t.Fatal(err)
	}
	conv := reply.ConversationID
	config := env.providerBlock() + `
resource "dify_conversation" "c" {
  query = "Hello"
}

resource "dify_file" "f" {
  filename = "a.txt"
  content  = "a"
}

resource "dify_annotation" "a" {
  question = "q"
  answer   = "a"
}

resource "dify_message_feedback" "m" {
  message_id = "` + exampleUUID + `"
  rating     = "like"
}
`
	imp := func(addr, id string, parts ...string) resource.TestStep {
		return resource.TestStep{Config: config, ResourceName: addr, ImportState: true, ImportStateId: id, ExpectError: errRE(parts...)}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			imp("dify_file.f", "c0000000-0000-4000-8000-000000000001", "dify_file cannot be imported", "cannot read an uploaded file back", "Upload the file again"),
			imp("dify_conversation.c", "frontdesk/"+conv+"/extra", `"extra" after the last slash`, `did you mean "frontdesk/`+conv+`"`),
			// The default user is acc-user; the conversation is frontdesk's.
			imp("dify_conversation.c", conv, "Cannot import conversation", `for end user "acc-user"`, "USER/CONVERSATION_ID"),
			imp("dify_annotation.a", "faq-1", "Invalid import id", `"faq-1" is not a Dify annotation id`, "dify_annotations"),
			imp("dify_annotation.a", exampleUUID, "Cannot import annotation", "has no annotation "+exampleUUID),
			imp("dify_message_feedback.m", exampleUUID, "Invalid import id", "USER/MESSAGE_ID"),
			imp("dify_message_feedback.m", "alice/"+exampleUUID, "Cannot import message feedback", "no end-user feedback on message"),
		},
	})
}
