package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

const feedbackAddr = "dify_message_feedback.test"

func feedbackConfig(env *mockEnv, rating, content string) string {
	c := ""
	if content != "" {
		c = "content = " + hclString(content)
	}
	return env.providerBlock() + `
resource "dify_conversation" "c" {
  query = "Hello"
}

resource "dify_message_feedback" "test" {
  message_id = dify_conversation.c.message_id
  rating     = ` + hclString(rating) + `
  ` + c + `
}

data "dify_app_feedbacks" "all" {
  depends_on = [dify_message_feedback.test]
}

data "dify_app_feedbacks" "likes" {
  rating     = "like"
  depends_on = [dify_message_feedback.test]
}
`
}

// userFeedback returns the end-user feedback rows the mock holds.
func userFeedback(t *testing.T, env *mockEnv) []dify.AppFeedback {
	t.Helper()
	page, err := env.client().ListAppFeedbacks(context.Background(), dify.ListAppFeedbacksParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []dify.AppFeedback
	for _, f := range page.Data {
		if f.FromSource == dify.FeedbackFromUser {
			out = append(out, f)
		}
	}
	return out
}

// TestAccMessageFeedbackResource rates a message, re-rates it in place,
// imports it, detects a revoke and a change made outside Terraform, and
// revokes on destroy. dify_app_feedbacks sees the same rows.
func TestAccMessageFeedbackResource(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	var msgID string
	expectFeedback := func(rating string, content *string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			rows := userFeedback(t, env)
			if len(rows) != 1 || rows[0].MessageID != msgID || rows[0].Rating != rating ||
				fmt.Sprint(deref(rows[0].Content), rows[0].Content == nil) != fmt.Sprint(deref(content), content == nil) {
				return fmt.Errorf("mock holds %+v, want one %s row on %s with content %v", rows, rating, msgID, content)
			}
			return nil
		}
	}
	outside := func(rating string) func() {
		return func() {
			if err := env.client().SendFeedback(context.Background(), msgID, dify.FeedbackRequest{Rating: rating, User: "acc-user"}); err != nil {
				t.Fatalf("changing the feedback outside Terraform: %v", err)
			}
		}
	}
	helpful := "Helpful"
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy: func(*terraform.State) error {
			if rows := userFeedback(t, env); len(rows) != 0 {
				return fmt.Errorf("destroy left feedback %+v", rows)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: feedbackConfig(env, "like", helpful),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(feedbackAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(feedbackAddr, tfjsonpath.New("user"), knownvalue.StringExact("acc-user")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(feedbackAddr, tfjsonpath.New("rating"), knownvalue.StringExact("like")),
					statecheck.ExpectKnownValue(feedbackAddr, tfjsonpath.New("content"), knownvalue.StringExact(helpful)),
					statecheck.CompareValuePairs(feedbackAddr, tfjsonpath.New("message_id"), "dify_conversation.c", tfjsonpath.New("message_id"), compareSame),
					statecheck.ExpectKnownValue("data.dify_app_feedbacks.all", tfjsonpath.New("feedbacks"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectPartial(map[string]knownvalue.Check{
							"rating": knownvalue.StringExact("like"), "content": knownvalue.StringExact(helpful),
							"from_source": knownvalue.StringExact("user"), "from_account_id": knownvalue.Null(),
							"from_end_user_id": knownvalue.NotNull(),
						}),
					})),
					statecheck.CompareValuePairs("data.dify_app_feedbacks.all", tfjsonpath.New("feedbacks").AtSliceIndex(0).AtMapKey("message_id"),
						feedbackAddr, tfjsonpath.New("message_id"), compareSame),
					statecheck.ExpectKnownValue("data.dify_app_feedbacks.likes", tfjsonpath.New("feedbacks"), knownvalue.ListSizeExact(1)),
				},
				Check: resource.ComposeTestCheckFunc(stateAttr(feedbackAddr, "message_id", &msgID),
					func(s *terraform.State) error { return expectFeedback("like", &helpful)(s) }),
			},
			{
				// Rating again without a comment clears the comment in place.
				Config: feedbackConfig(env, "dislike", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(feedbackAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(feedbackAddr, tfjsonpath.New("content"), knownvalue.Null()),
					statecheck.ExpectKnownValue("data.dify_app_feedbacks.likes", tfjsonpath.New("feedbacks"), knownvalue.ListSizeExact(0)),
				},
				Check: func(s *terraform.State) error { return expectFeedback("dislike", nil)(s) },
			},
			{
				ResourceName:      feedbackAddr,
				ImportState:       true,
				ImportStateIdFunc: func(*terraform.State) (string, error) { return "acc-user/" + msgID, nil },
				ImportStateVerify: true,
			},
			{
				ResourceName:  feedbackAddr,
				ImportState:   true,
				ImportStateId: "no-slash",
				ExpectError:   errRE("Invalid import id", "USER/MESSAGE_ID"),
			},
			{
				// Revoked outside Terraform: refresh drops it, the plan rates again.
				PreConfig: outside(""),
				Config:    feedbackConfig(env, "dislike", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(feedbackAddr, plancheck.ResourceActionCreate),
				}},
				Check: func(s *terraform.State) error { return expectFeedback("dislike", nil)(s) },
			},
			{
				// Changed outside Terraform: the plan puts it back in place.
				PreConfig: outside("like"),
				Config:    feedbackConfig(env, "dislike", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(feedbackAddr, plancheck.ResourceActionUpdate),
				}},
				Check: func(s *terraform.State) error { return expectFeedback("dislike", nil)(s) },
			},
			{
				// Another user cannot rate this user's message: Dify's 404.
				Config: feedbackConfig(env, "dislike", "") + `
resource "dify_message_feedback" "stranger" {
  message_id = dify_conversation.c.message_id
  user       = "someone-else"
  rating     = "like"
}
`,
				ExpectError: errRE("Unable to rate message", "HTTP 404", "no such message for this user"),
			},
		},
	})
}

// TestAccMessageFeedbackResource_refreshRequestCount: N feedback resources
// refresh from one GET /app/feedbacks per Terraform graph walk.
func TestAccMessageFeedbackResource_refreshRequestCount(t *testing.T) {
	const n = 5
	env := newMockEnv(t, mockserver.Config{})
	config := env.providerBlock() + fmt.Sprintf(`
resource "dify_conversation" "c" {
  count = %d
  query = "Hello number ${count.index}"
}

resource "dify_message_feedback" "f" {
  count      = %d
  message_id = dify_conversation.c[count.index].message_id
  rating     = count.index %% 2 == 0 ? "like" : "dislike"
}
`, n, n)
	var walksBefore int64
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{Config: config},
			{PreConfig: func() { env.counts.reset(); walksBefore = env.configures.Load() }, Config: config, PlanOnly: true},
			{
				PreConfig: func() {
					walks := int(env.configures.Load() - walksBefore)
					got := env.counts.get("GET /app/feedbacks")
					t.Logf("refresh of %d feedbacks: %d graph walks, %d GET /app/feedbacks", n, walks, got)
					if walks == 0 || got > walks {
						t.Errorf("GET /app/feedbacks = %d for %d walks; want at most one per walk (one per resource would be %d)", got, walks, n*walks)
					}
				},
				Config:   config,
				PlanOnly: true,
			},
		},
	})
}

// TestAccMessageFeedbackResource_identity: the identity is (user,
// message_id), and an import block with it plans no change.
func TestAccMessageFeedbackResource_identity(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	resource.ParallelTest(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{
				Config: feedbackConfig(env, "like", "Helpful"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity(feedbackAddr, map[string]knownvalue.Check{
						"user": knownvalue.StringExact("acc-user"), "message_id": knownvalue.StringRegexp(uuidRE),
					}),
					statecheck.ExpectIdentityValueMatchesState(feedbackAddr, tfjsonpath.New("message_id")),
				},
			},
			{
				ResourceName:    feedbackAddr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithResourceIdentity,
			},
		},
	})
}
