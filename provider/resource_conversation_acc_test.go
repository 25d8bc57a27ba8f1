package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

const convAddr = "dify_conversation.test"

func conversationConfig(env *mockEnv, body string) string {
	return env.providerBlock() + "\nresource \"dify_conversation\" \"test\" {\n" + body + "\n}\n"
}

// expectRemaining returns a CheckDestroy-style check that the mock holds
// exactly n conversations for the provider's user.
func expectRemaining(env *mockEnv, n int) func(*terraform.State) error {
	return func(*terraform.State) error {
		page, err := env.client().ListConversations(context.Background(), dify.ListConversationsParams{Limit: 100})
		if err != nil {
			return err
		}
		if len(page.Data) != n {
			return fmt.Errorf("mock holds %d conversations for acc-user, want %d: %+v", len(page.Data), n, page.Data)
		}
		return nil
	}
}

// TestAccConversationResource covers create, state values against the
// cassette, both import id forms, an in-place rename and a replacement on a
// changed query.
func TestAccConversationResource(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	rec, folded := env.cassetteTurn("tool-use")
	plain, plainFolded := env.cassetteTurn("plain-answer")
	if len(folded.Thoughts) == 0 || folded.Usage == nil {
		t.Fatal("the tool-use cassette has no thoughts or usage; this test needs both")
	}
	thoughts := make([]knownvalue.Check, 0, len(folded.Thoughts))
	for _, th := range folded.Thoughts {
		thoughts = append(thoughts, knownvalue.ObjectExact(map[string]knownvalue.Check{
			"id":          knownvalue.NotNull(),
			"position":    knownvalue.Int64Exact(int64(th.Position)),
			"thought":     knownvalue.StringExact(deref(th.Thought)),
			"tool":        knownvalue.StringExact(deref(th.Tool)),
			"tool_input":  knownvalue.StringExact(deref(th.ToolInput)),
			"observation": knownvalue.StringExact(deref(th.Observation)),
		}))
	}
	sameID := statecheck.CompareValue(compare.ValuesSame())
	newID := statecheck.CompareValue(compare.ValuesDiffer())
	var id string

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				Config: conversationConfig(env, `query = `+hclString(rec.Request.Query)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(convAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(convAddr, tfjsonpath.New("user"), knownvalue.StringExact("acc-user")),
					plancheck.ExpectKnownValue(convAddr, tfjsonpath.New("auto_generate_name"), knownvalue.Bool(true)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					sameID.AddStateValue(convAddr, tfjsonpath.New("id")),
					newID.AddStateValue(convAddr, tfjsonpath.New("id")),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f-]{36}$`))),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("user"), knownvalue.StringExact("acc-user")),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("answer"), knownvalue.StringExact(folded.Answer)),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("name"), knownvalue.StringExact(mockserver.GeneratedConversationName(rec.Request.Query))),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("agent_thoughts"), knownvalue.ListExact(thoughts)),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("usage"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"prompt_tokens":         knownvalue.Int64Exact(folded.Usage.PromptTokens),
						"prompt_unit_price":     knownvalue.StringExact(folded.Usage.PromptUnitPrice),
						"prompt_price":          knownvalue.StringExact(folded.Usage.PromptPrice),
						"completion_tokens":     knownvalue.Int64Exact(folded.Usage.CompletionTokens),
						"completion_unit_price": knownvalue.StringExact(folded.Usage.CompletionUnitPrice),
						"completion_price":      knownvalue.StringExact(folded.Usage.CompletionPrice),
						"total_tokens":          knownvalue.Int64Exact(folded.Usage.TotalTokens),
						"total_price":           knownvalue.StringExact(folded.Usage.TotalPrice),
						"currency":              knownvalue.StringExact(folded.Usage.Currency),
						"latency":               knownvalue.Float64Exact(folded.Usage.Latency),
					})),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("message_id"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("created_at"), knownvalue.NotNull()),
				},
				Check: stateAttr(convAddr, "id", &id),
			},
			{
				ResourceName:      convAddr,
				ImportState:       true,
				ImportStateIdFunc: func(*terraform.State) (string, error) { return "acc-user/" + id, nil },
				ImportStateVerify: true,
				// Dify stores the form's defaults for inputs the first turn left
				// out (BaseAppGenerator._prepare_user_inputs); the import leaves
				// out what leaving them out stores, so inputs read back as the
				// configuration has them: unset.
				ImportStateVerifyIgnore: []string{"auto_generate_name", "usage", "timeouts"},
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					a := states[0].Attributes
					if n := a["inputs.%"]; n != "" && n != "0" {
						return fmt.Errorf("imported %s inputs (budget %q, home_city %q), want none: the form's defaults are what an unset inputs stores", n, a["inputs.budget"], a["inputs.home_city"])
					}
					if a["usage.total_tokens"] != fmt.Sprint(folded.Usage.TotalTokens) {
						return fmt.Errorf("imported usage.total_tokens = %q, want %d", a["usage.total_tokens"], folded.Usage.TotalTokens)
					}
					if _, ok := a["usage.prompt_unit_price"]; ok && a["usage.prompt_unit_price"] != "" {
						return fmt.Errorf("imported usage.prompt_unit_price = %q; the history does not carry it", a["usage.prompt_unit_price"])
					}
					return nil
				},
			},
			{
				// A bare id imports with the provider's default user.
				ResourceName:            convAddr,
				ImportState:             true,
				ImportStateIdFunc:       func(*terraform.State) (string, error) { return id, nil },
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"auto_generate_name", "usage", "timeouts"},
			},
			{
				ResourceName:  convAddr,
				ImportState:   true,
				ImportStateId: "alice/",
				ExpectError:   errRE("Invalid import id", "USER/CONVERSATION_ID"),
			},
			{
				Config: conversationConfig(env, `query = `+hclString(rec.Request.Query)+"\nname = \"Lisbon, renamed\""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(convAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					sameID.AddStateValue(convAddr, tfjsonpath.New("id")),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("name"), knownvalue.StringExact("Lisbon, renamed")),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("answer"), knownvalue.StringExact(folded.Answer)),
				},
			},
			{
				Config: conversationConfig(env, `query = `+hclString(plain.Request.Query)+"\nname = \"Lisbon, renamed\""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(convAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					newID.AddStateValue(convAddr, tfjsonpath.New("id")),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("answer"), knownvalue.StringExact(plainFolded.Answer)),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("name"), knownvalue.StringExact("Lisbon, renamed")),
					statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("auto_generate_name"), knownvalue.Bool(false)),
				},
				// The replaced conversation is deleted, only the new one remains.
				Check: expectRemaining(env, 1),
			},
		},
	})
}

// TestAccConversationResource_inputsFilesAndName sends inputs and an uploaded
// file with the first message and names the conversation at create.
func TestAccConversationResource_inputsFilesAndName(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	rec, folded := env.cassetteTurn("file-read")
	var convID, fileID string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{{
			Config: env.providerBlock() + `
resource "dify_file" "itinerary" {
  filename = "itinerary.md"
  content  = "# Lisbon, 12-15 October\n"
}

resource "dify_conversation" "test" {
  query  = ` + hclString(rec.Request.Query) + `
  name   = "Itinerary check"
  inputs = { home_city = "Berlin", budget = "low" }
  files  = [dify_file.itinerary.id]
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("name"), knownvalue.StringExact("Itinerary check")),
				statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("auto_generate_name"), knownvalue.Bool(false)),
				statecheck.ExpectKnownValue(convAddr, tfjsonpath.New("answer"), knownvalue.StringExact(folded.Answer)),
			},
			Check: resource.ComposeTestCheckFunc(
				stateAttr(convAddr, "id", &convID),
				stateAttr("dify_file.itinerary", "id", &fileID),
				func(*terraform.State) error {
					// What reached Dify: the inputs and the file reference.
					page, err := env.client().ListMessages(context.Background(), dify.ListMessagesParams{ConversationID: convID})
					if err != nil {
						return err
					}
					if len(page.Data) != 1 {
						return fmt.Errorf("%d messages, want 1", len(page.Data))
					}
					m := page.Data[0]
					if m.Inputs["home_city"] != "Berlin" || m.Inputs["budget"] != "low" {
						return fmt.Errorf("inputs reached Dify as %v", m.Inputs)
					}
					for _, f := range m.MessageFiles {
						if f.UploadFileID != nil && *f.UploadFileID == fileID {
							return nil
						}
					}
					return fmt.Errorf("file %s not attached to the message: %+v", fileID, m.MessageFiles)
				},
			),
		}},
	})
}

// TestAccConversationResource_deletedOutsideTerraform deletes the
// conversation behind Terraform's back: refresh drops it from state, the plan
// is not empty, and apply creates a fresh one.
func TestAccConversationResource_deletedOutsideTerraform(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	config := conversationConfig(env, `query = "Hello"`)
	var id string
	newID := statecheck.CompareValue(compare.ValuesDiffer())
	deleteIt := func() {
		if err := env.client().DeleteConversation(context.Background(), id, "acc-user"); err != nil {
			t.Fatalf("deleting %s outside Terraform: %v", id, err)
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				Config:            config,
				Check:             stateAttr(convAddr, "id", &id),
				ConfigStateChecks: []statecheck.StateCheck{newID.AddStateValue(convAddr, tfjsonpath.New("id"))},
			},
			{
				PreConfig:          deleteIt,
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(convAddr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{newID.AddStateValue(convAddr, tfjsonpath.New("id"))},
				Check:             expectRemaining(env, 1),
			},
		},
	})
}

// TestAccConversationResource_inStreamError uses the run-limit cassette: the
// stream ends with an agent_run_limit_exceeded error event. The create must
// fail with Dify's code and message, keep nothing in state and leave no
// half-made conversation behind.
func TestAccConversationResource_inStreamError(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	rec, _ := env.cassetteTurn("run-limit")
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				Config: conversationConfig(env, `query = `+hclString(rec.Request.Query)),
				ExpectError: errRE("Unable to create conversation", `code "agent_run_limit_exceeded"`,
					"Agent run exceeded its limit", "was deleted.", "Nothing was recorded in Terraform state"),
			},
			{
				// Nothing reached the state, and the conversation is gone from Dify.
				Config:            env.providerBlock(),
				ConfigStateChecks: []statecheck.StateCheck{expectNoResources{}},
				Check:             expectRemaining(env, 0),
			},
		},
	})
}

// TestAccConversationResource_createTimeout replays a ~30 s turn at recorded
// speed with a 2 s create timeout: the run is stopped, the half-made
// conversation deleted, and the error names the timeout.
func TestAccConversationResource_createTimeout(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{Speed: 1})
	rec, _ := env.cassetteTurn("long-with-pings")
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{{
			Config:      conversationConfig(env, "query = "+hclString(rec.Request.Query)+"\ntimeouts {\n create = \"2s\"\n}"),
			ExpectError: errRE("Unable to create conversation", "create timeout of 2s", "was deleted."),
		}},
	})
}

// TestAccConversationResource_preStreamErrors covers errors Dify returns
// before any stream starts: the diagnostic carries status, code and message.
func TestAccConversationResource_preStreamErrors(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				Config:      conversationConfig(env, `query = "Hello"`+"\ninputs = { budget = \"astronomical\" }"),
				ExpectError: errRE("Unable to create conversation", `HTTP 400 with code "invalid_param"`, "budget in input form must be one of", "nothing was created"),
			},
			{
				Config:      conversationConfig(env, `query = "Hello"`+"\nfiles = [\"00000000-0000-4000-8000-000000000000\"]"),
				ExpectError: errRE("Unable to create conversation", "HTTP 400", "Invalid upload file"),
			},
		},
	})
}

// TestAccConversationResource_validation checks plan-time errors.
func TestAccConversationResource_validation(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{Config: conversationConfig(env, `query = ""`), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Attribute query string length must be at least 1`)},
			{Config: conversationConfig(env, "query = \"Hello\"\nname = \"\""), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Attribute name string length must be at least 1`)},
			{Config: conversationConfig(env, "query = \"Hello\"\nfiles = [\"\"]"), PlanOnly: true,
				ExpectError: errRE("Invalid upload id", `"" is not a Dify upload id`)},
			{Config: conversationConfig(env, "query = \"Hello\"\ntimeouts {\n create = \"soon\"\n}"), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?is)invalid.*duration.*"soon"`)},
		},
	})
}

// expectNoResources is a state check that the state holds no resources.
type expectNoResources struct{}

func (expectNoResources) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	if req.State == nil || req.State.Values == nil || req.State.Values.RootModule == nil {
		return
	}
	var names []string
	for _, r := range req.State.Values.RootModule.Resources {
		names = append(names, r.Address)
	}
	if len(names) > 0 {
		resp.Error = fmt.Errorf("state holds %s", strings.Join(names, ", "))
	}
}

// TestAccConversationResource_importThenPlan imports conversations made
// outside Terraform and plans with the configuration that made them: Dify
// stored every form variable (the given value, else the default), yet the
// plan is empty with and without inputs. Inputs that store the same values
// (an explicit default, a variable the form lacks) update in place; inputs
// that store other values replace the conversation.
func TestAccConversationResource_importThenPlan(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	start := func(inputs map[string]any) string {
		stream, err := env.client().SendChatMessage(context.Background(), dify.ChatRequest{Query: "Hello", User: "acc-user", Inputs: inputs})
		if err != nil {
			t.Fatal(err)
		}
		reply, err := dify.Collect(stream)
		if err != nil {
			t.Fatal(err)
		}
		return reply.ConversationID
	}
	bare := start(map[string]any{})
	withInputs := start(map[string]any{"home_city": "Lyon", "budget": "low"})
	config := func(a, b string) string {
		return env.providerBlock() + `
resource "dify_conversation" "bare" {
  query = "Hello"
  ` + a + `
}

resource "dify_conversation" "with_inputs" {
  query  = "Hello"
  ` + b + `
}
`
	}
	initial := config("", `inputs = { home_city = "Lyon", budget = "low" }`)
	var replacedID string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{Config: initial, ResourceName: "dify_conversation.bare", ImportState: true, ImportStatePersist: true, ImportStateId: bare},
			{Config: initial, ResourceName: "dify_conversation.with_inputs", ImportState: true, ImportStatePersist: true, ImportStateId: "acc-user/" + withInputs},
			{Config: initial, PlanOnly: true}, // an empty plan, or the step fails
			{
				Config: config(`inputs = { budget = "medium" }`, `inputs = { home_city = "Lyon", budget = "low", not_in_form = "x" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("dify_conversation.bare", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("dify_conversation.with_inputs", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("dify_conversation.bare", tfjsonpath.New("id"), knownvalue.StringExact(bare)),
					statecheck.ExpectKnownValue("dify_conversation.with_inputs", tfjsonpath.New("id"), knownvalue.StringExact(withInputs)),
				},
			},
			{
				Config: config(`inputs = { budget = "medium" }`, `inputs = { home_city = "Lyon", budget = "high" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("dify_conversation.bare", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("dify_conversation.with_inputs", plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: stateAttr("dify_conversation.with_inputs", "id", &replacedID),
			},
		},
	})
	if replacedID == "" || replacedID == withInputs {
		t.Errorf("with_inputs was not replaced: %q", replacedID)
	}
}
