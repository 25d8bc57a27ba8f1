package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// Tests of the parts that need a newer Terraform: resource identity (1.12),
// list resources with `terraform query` and actions (1.14). They skip on
// older CLIs; scripts/test.sh runs the acceptance suite on Terraform 1.14 as
// well, where none of them skips.

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// conversationWithInputsConfig is a conversation whose first message carries
// inputs and an uploaded file, the arguments an import now reads back.
func conversationWithInputsConfig(env *mockEnv, query string) string {
	return env.providerBlock() + `
resource "dify_file" "doc" {
  filename = "notes.md"
  content  = "# Lisbon\n"
}

resource "dify_conversation" "test" {
  query  = ` + hclString(query) + `
  inputs = { home_city = "Berlin", budget = "high" }
  files  = [dify_file.doc.id]
}
`
}

// TestAccConversationResource_importReadsInputsAndFiles: an import reads the
// first message's inputs and files back, so ImportStateVerify holds for them
// (runs on every Terraform).
func TestAccConversationResource_importReadsInputsAndFiles(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	rec, _ := env.cassetteTurn("tool-use")
	var id string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				Config: conversationWithInputsConfig(env, rec.Request.Query),
				Check:  stateAttr(convAddr, "id", &id),
			},
			{
				ResourceName:      convAddr,
				ImportState:       true,
				ImportStateIdFunc: func(*terraform.State) (string, error) { return "acc-user/" + id, nil },
				ImportStateVerify: true,
				// auto_generate_name is not stored by Dify; prices and the
				// unit prices of usage are not in the history (docs/api §6).
				ImportStateVerifyIgnore: []string{"auto_generate_name", "usage", "timeouts"},
			},
		},
	})
}

// TestAccResourceIdentity: conversations and files carry an identity, and an
// import block with `identity = {...}` imports a conversation with a plan
// that changes nothing (inputs and files included).
func TestAccResourceIdentity(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	rec, _ := env.cassetteTurn("tool-use")
	resource.ParallelTest(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				Config: conversationWithInputsConfig(env, rec.Request.Query),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity(convAddr, map[string]knownvalue.Check{
						"user": knownvalue.StringExact("acc-user"),
						"id":   knownvalue.StringRegexp(uuidRE),
					}),
					statecheck.ExpectIdentityValueMatchesState(convAddr, tfjsonpath.New("id")),
					statecheck.ExpectIdentityValueMatchesState(convAddr, tfjsonpath.New("user")),
					statecheck.ExpectIdentity("dify_file.doc", map[string]knownvalue.Check{
						"id": knownvalue.StringRegexp(uuidRE),
					}),
					statecheck.ExpectIdentityValueMatchesState("dify_file.doc", tfjsonpath.New("id")),
				},
			},
			{
				ResourceName:    convAddr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithResourceIdentity,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(convAddr, tfjsonpath.New("inputs"), knownvalue.MapExact(map[string]knownvalue.Check{
						"home_city": knownvalue.StringExact("Berlin"), "budget": knownvalue.StringExact("high"),
					})),
					plancheck.ExpectKnownValue(convAddr, tfjsonpath.New("query"), knownvalue.StringExact(rec.Request.Query)),
				}},
			},
		},
	})
}

// TestAccConversationListResource: `terraform query` finds the user's
// conversations, filters them by name, and returns identities and (with
// include_resource) the resource as an import reads it.
func TestAccConversationListResource(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	rec, folded := env.cassetteTurn("tool-use")
	plain, _ := env.cassetteTurn("plain-answer")
	var lisbonID, helloID string
	idIs := func(id *string) knownvalue.Check {
		return knownvalue.StringFunc(func(v string) error {
			if v != *id {
				return fmt.Errorf("id %q, want %q", v, *id)
			}
			return nil
		})
	}
	config := env.providerBlock() + `
resource "dify_conversation" "lisbon" {
  query  = ` + hclString(rec.Request.Query) + `
  inputs = { home_city = "Berlin", budget = "high" }
  name   = "Lisbon budget"
}

resource "dify_conversation" "hello" {
  query = ` + hclString(plain.Request.Query) + `
  name  = "Greeting"
}
`
	resource.ParallelTest(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_14_0)},
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeTestCheckFunc(
					stateAttr("dify_conversation.lisbon", "id", &lisbonID),
					stateAttr("dify_conversation.hello", "id", &helloID),
				),
			},
			{
				Query: true,
				Config: `
list "dify_conversation" "all" {
  provider         = dify
  include_resource = true
  config {
    user = "acc-user"
  }
}

list "dify_conversation" "lisbon" {
  provider = dify
  config {
    name_contains = "LISBON"
  }
}

list "dify_conversation" "nobody" {
  provider = dify
  config {
    user = "someone-else"
  }
}
`,
				QueryResultChecks: []querycheck.QueryResultCheck{
					querycheck.ExpectLength("dify_conversation.all", 2),
					querycheck.ExpectLength("dify_conversation.lisbon", 1),
					querycheck.ExpectLength("dify_conversation.nobody", 0),
					querycheck.ExpectIdentity("dify_conversation.lisbon", map[string]knownvalue.Check{
						"user": knownvalue.StringExact("acc-user"), "id": idIs(&lisbonID),
					}),
					querycheck.ExpectIdentity("dify_conversation.all", map[string]knownvalue.Check{
						"user": knownvalue.StringExact("acc-user"), "id": idIs(&helloID),
					}),
					querycheck.ExpectResourceDisplayName("dify_conversation.lisbon",
						queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"user": knownvalue.StringExact("acc-user"), "id": idIs(&lisbonID)}),
						knownvalue.StringExact("Lisbon budget")),
					querycheck.ExpectResourceKnownValues("dify_conversation.all",
						queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"user": knownvalue.StringExact("acc-user"), "id": idIs(&lisbonID)}),
						[]querycheck.KnownValueCheck{
							{Path: tfjsonpath.New("query"), KnownValue: knownvalue.StringExact(rec.Request.Query)},
							{Path: tfjsonpath.New("name"), KnownValue: knownvalue.StringExact("Lisbon budget")},
							{Path: tfjsonpath.New("answer"), KnownValue: knownvalue.StringExact(folded.Answer)},
							{Path: tfjsonpath.New("inputs"), KnownValue: knownvalue.MapExact(map[string]knownvalue.Check{
								"home_city": knownvalue.StringExact("Berlin"), "budget": knownvalue.StringExact("high")})},
							{Path: tfjsonpath.New("files"), KnownValue: knownvalue.Null()},
						}),
				},
			},
		},
	})
}

// TestAccChatAction runs dify_chat from a resource's action_trigger: a
// passing smoke test deletes its conversation; an unmet expectation fails
// the apply with the answer in the diagnostic; an invalid expression fails
// at plan time, before anything is sent. (The unmet expectation comes last:
// the final destroy uses the last configuration, which must be valid.)
func TestAccChatAction(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	rec, folded := env.cassetteTurn("tool-use")
	config := func(version, expect string) string {
		return env.providerBlock() + `
resource "terraform_data" "release" {
  input = ` + hclString(version) + `
  lifecycle {
    action_trigger {
      events  = [after_create, after_update]
      actions = [action.dify_chat.smoke]
    }
  }
}

action "dify_chat" "smoke" {
  config {
    query                 = ` + hclString(rec.Request.Query) + `
    inputs                = { home_city = "Berlin", budget = "medium" }
    expect_answer_matches = ` + hclString(expect) + `
    timeout               = "2m"
  }
}
`
	}
	chats := func(want int) resource.TestCheckFunc {
		return func(*terraform.State) error {
			if got := env.counts.get("POST /chat-messages"); got != want {
				return fmt.Errorf("%d chat messages sent, want %d", got, want)
			}
			return nil
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_14_0)},
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				Config: config("v1", regexp.QuoteMeta(lastLine(folded.Answer))),
				Check:  resource.ComposeTestCheckFunc(chats(1), expectRemaining(env, 0)),
			},
			{
				Config:      config("v2", `(unclosed`),
				PlanOnly:    true,
				ExpectError: errRE("Invalid regular expression", "not a valid Go (RE2) regular expression"),
			},
			{
				Config:      config("v3", `(?i)\bno such answer\b`),
				ExpectError: errRE("dify_chat answer did not match", "expect_answer_matches", "was deleted"),
			},
		},
	})
	if got := env.counts.get("POST /chat-messages"); got != 2 {
		t.Errorf("%d chat messages sent in all, want 2 (the invalid expression must fail before sending)", got)
	}
}
