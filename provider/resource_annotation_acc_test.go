package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

const annAddr = "dify_annotation.hours"

func annotationsConfig(env *mockEnv, hoursAnswer string) string {
	return env.providerBlock() + `
resource "dify_annotation" "hours" {
  question = "What are your opening hours?"
  answer   = ` + hclString(hoursAnswer) + `
}

resource "dify_annotation" "refund" {
  question = "Can I get a refund?"
  answer   = "Yes, within 30 days of booking."
}

data "dify_annotations" "all" {
  depends_on = [dify_annotation.hours, dify_annotation.refund]
}

data "dify_annotations" "refunds" {
  keyword    = "REFUND"
  depends_on = [dify_annotation.hours, dify_annotation.refund]
}
`
}

// mockAnnotations lists what the mock holds.
func mockAnnotations(t *testing.T, env *mockEnv) []dify.Annotation {
	t.Helper()
	all, err := listAnnotations(context.Background(), env.client(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestAccAnnotationResource creates annotations, updates one in place,
// imports it, detects an edit and a deletion made outside Terraform, and
// deletes on destroy; dify_annotations reads them back.
func TestAccAnnotationResource(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	sameID := statecheck.CompareValue(compare.ValuesSame())
	var id string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy: func(*terraform.State) error {
			if left := mockAnnotations(t, env); len(left) != 0 {
				return fmt.Errorf("destroy left %+v", left)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: annotationsConfig(env, "9am to 5pm, Monday to Friday."),
				ConfigStateChecks: []statecheck.StateCheck{
					sameID.AddStateValue(annAddr, tfjsonpath.New("id")),
					statecheck.ExpectKnownValue(annAddr, tfjsonpath.New("id"), knownvalue.StringRegexp(uuidRE)),
					statecheck.ExpectKnownValue(annAddr, tfjsonpath.New("hit_count"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue(annAddr, tfjsonpath.New("created_at"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue("data.dify_annotations.all", tfjsonpath.New("annotations"), knownvalue.ListSizeExact(2)),
					statecheck.ExpectKnownValue("data.dify_annotations.refunds", tfjsonpath.New("annotations"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectPartial(map[string]knownvalue.Check{
							"question": knownvalue.StringExact("Can I get a refund?"),
							"answer":   knownvalue.StringExact("Yes, within 30 days of booking."),
						}),
					})),
				},
				Check: stateAttr(annAddr, "id", &id),
			},
			{
				Config: annotationsConfig(env, "8am to 6pm, every day."),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(annAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("dify_annotation.refund", plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					sameID.AddStateValue(annAddr, tfjsonpath.New("id")),
					statecheck.ExpectKnownValue(annAddr, tfjsonpath.New("answer"), knownvalue.StringExact("8am to 6pm, every day.")),
				},
			},
			{
				ResourceName:      annAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				// Edited outside Terraform: the plan puts the text back.
				PreConfig: func() {
					if _, err := env.client().UpdateAnnotation(context.Background(), id, dify.AnnotationRequest{
						Question: "What are your opening hours?", Answer: "Closed."}); err != nil {
						t.Fatal(err)
					}
				},
				Config: annotationsConfig(env, "8am to 6pm, every day."),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(annAddr, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					for _, a := range mockAnnotations(t, env) {
						if a.ID == id && a.Answer != "8am to 6pm, every day." {
							return fmt.Errorf("answer in Dify is %q after apply", a.Answer)
						}
					}
					return nil
				},
			},
			{
				// Deleted outside Terraform: the plan creates it again.
				PreConfig: func() {
					if err := env.client().DeleteAnnotation(context.Background(), id); err != nil {
						t.Fatal(err)
					}
				},
				Config: annotationsConfig(env, "8am to 6pm, every day."),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(annAddr, plancheck.ResourceActionCreate),
				}},
				Check: func(*terraform.State) error {
					if n := len(mockAnnotations(t, env)); n != 2 {
						return fmt.Errorf("mock holds %d annotations, want 2", n)
					}
					return nil
				},
			},
		},
	})
}

// TestAccAnnotationResource_refreshRequestCount: N annotations refresh from
// one listing per Terraform graph walk, not one per resource.
func TestAccAnnotationResource_refreshRequestCount(t *testing.T) {
	const n = 8
	env := newMockEnv(t, mockserver.Config{})
	config := env.providerBlock() + fmt.Sprintf(`
resource "dify_annotation" "faq" {
  count    = %d
  question = "Question number ${count.index}"
  answer   = "Answer number ${count.index}"
}
`, n)
	var walksBefore int64
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{Config: config},
			{PreConfig: func() { env.counts.reset(); walksBefore = env.configures.Load() }, Config: config, PlanOnly: true},
			{
				PreConfig: func() {
					walks := int(env.configures.Load() - walksBefore)
					got := env.counts.get("GET /apps/annotations")
					t.Logf("refresh of %d annotations: %d graph walks, %d GET /apps/annotations", n, walks, got)
					if walks == 0 || got > walks {
						t.Errorf("GET /apps/annotations = %d for %d walks; want at most one per walk (one per resource would be %d)", got, walks, n*walks)
					}
				},
				Config:   config,
				PlanOnly: true,
			},
		},
	})
}

// TestAccAnnotationReply turns annotation reply on: a conversation whose
// first message matches the annotation is answered with it (and its
// hit_count grows), a changed threshold re-runs the enable job in place,
// and the setting imports by its fixed id.
func TestAccAnnotationReply(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	config := func(threshold string) string {
		return env.providerBlock() + `
resource "dify_annotation" "hours" {
  question = "What are your opening hours?"
  answer   = "9am to 5pm, Monday to Friday."
}

resource "dify_annotation_reply" "this" {
  score_threshold         = ` + threshold + `
  embedding_provider_name = "openai"
  embedding_model_name    = "text-embedding-3-small"
  depends_on              = [dify_annotation.hours]
}

resource "dify_conversation" "faq" {
  query      = "what are your OPENING hours"
  depends_on = [dify_annotation_reply.this]
}
`
	}
	const replyAddr = "dify_annotation_reply.this"
	jobs := statecheck.CompareValue(compare.ValuesDiffer())
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{
				Config: config("0.9"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("dify_conversation.faq", tfjsonpath.New("answer"), knownvalue.StringExact("9am to 5pm, Monday to Friday.")),
					statecheck.ExpectKnownValue("dify_conversation.faq", tfjsonpath.New("agent_thoughts"), knownvalue.ListSizeExact(0)),
					statecheck.ExpectKnownValue(replyAddr, tfjsonpath.New("id"), knownvalue.StringExact(annotationReplyID)),
					jobs.AddStateValue(replyAddr, tfjsonpath.New("job_id")),
				},
			},
			{
				// The refresh reads the hit the conversation made.
				Config: config("0.9"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(annAddr, tfjsonpath.New("hit_count"), knownvalue.Int64Exact(1)),
				},
			},
			{
				Config: config("0.8"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(replyAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("dify_conversation.faq", plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{jobs.AddStateValue(replyAddr, tfjsonpath.New("job_id"))},
			},
			{
				ResourceName:            replyAddr,
				ImportState:             true,
				ImportStateId:           annotationReplyID,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"score_threshold", "embedding_provider_name", "embedding_model_name", "job_id", "timeouts"},
			},
			{
				ResourceName:  replyAddr,
				ImportState:   true,
				ImportStateId: "enabled",
				ExpectError:   errRE("Invalid import id", annotationReplyID),
			},
		},
	})
}

// TestAccAnnotationModern: identity, import by identity and the list
// resource with querycheck (Terraform >= 1.14).
func TestAccAnnotationModern(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	config := annotationsConfig(env, "9am to 5pm, Monday to Friday.")
	var id string
	idIs := knownvalue.StringFunc(func(v string) error {
		if v != id {
			return fmt.Errorf("id %q, want %q", v, id)
		}
		return nil
	})
	resource.ParallelTest(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_14_0)},
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity(annAddr, map[string]knownvalue.Check{"id": knownvalue.StringRegexp(uuidRE)}),
					statecheck.ExpectIdentityValueMatchesState(annAddr, tfjsonpath.New("id")),
				},
				Check: stateAttr(annAddr, "id", &id),
			},
			{
				ResourceName:    annAddr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithResourceIdentity,
			},
			{
				Query: true,
				Config: `
list "dify_annotation" "all" {
  provider         = dify
  include_resource = true
}

list "dify_annotation" "hours" {
  provider = dify
  config {
    keyword = "opening"
  }
}
`,
				QueryResultChecks: []querycheck.QueryResultCheck{
					querycheck.ExpectLength("dify_annotation.all", 2),
					querycheck.ExpectLength("dify_annotation.hours", 1),
					querycheck.ExpectIdentity("dify_annotation.hours", map[string]knownvalue.Check{"id": idIs}),
					querycheck.ExpectResourceKnownValues("dify_annotation.all",
						queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"id": idIs}),
						[]querycheck.KnownValueCheck{
							{Path: tfjsonpath.New("question"), KnownValue: knownvalue.StringExact("What are your opening hours?")},
							{Path: tfjsonpath.New("answer"), KnownValue: knownvalue.StringExact("9am to 5pm, Monday to Friday.")},
							{Path: tfjsonpath.New("hit_count"), KnownValue: knownvalue.Int64Exact(0)},
						}),
				},
			},
		},
	})
}
