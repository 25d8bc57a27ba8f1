package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

func strOrNull(p *string) knownvalue.Check {
	if p == nil {
		return knownvalue.Null()
	}
	return knownvalue.StringExact(*p)
}

func stringsExact(xs []string) knownvalue.Check {
	checks := make([]knownvalue.Check, 0, len(xs))
	for _, x := range xs {
		checks = append(checks, knownvalue.StringExact(x))
	}
	return knownvalue.ListExact(checks)
}

func TestAccAppInfoDataSource(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	var want dify.AppInfo
	env.appResponse("/info", &want)
	ds := "data.dify_app_info.this"
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{{
			Config: env.providerBlock() + `data "dify_app_info" "this" {}`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("name"), knownvalue.StringExact(want.Name)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("description"), knownvalue.StringExact(want.Description)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("tags"), stringsExact(want.Tags)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("mode"), knownvalue.StringExact(want.Mode)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("author_name"), knownvalue.StringExact(want.AuthorName)),
			},
		}},
	})
}

func TestAccAppParametersDataSource(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	var want dify.AppParameters
	env.appResponse("/parameters", &want)
	if len(want.UserInputForm) == 0 {
		t.Fatal("the built-in app has no user_input_form; this test needs one")
	}
	form := map[int]knownvalue.Check{}
	for i, it := range want.UserInputForm {
		var maxLen knownvalue.Check = knownvalue.Null()
		if it.MaxLength != nil {
			maxLen = knownvalue.Int64Exact(int64(*it.MaxLength))
		}
		form[i] = knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"control":    knownvalue.StringExact(it.Control),
			"variable":   knownvalue.StringExact(it.Variable),
			"label":      knownvalue.StringExact(it.Label),
			"required":   knownvalue.Bool(it.Required),
			"default":    knownvalue.StringExact(it.Default),
			"options":    stringsExact(nonNil(it.Options)),
			"max_length": maxLen,
		})
	}
	sp := want.SystemParameters
	ds := "data.dify_app_parameters.this"
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{{
			Config: env.providerBlock() + `data "dify_app_parameters" "this" {}`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("opening_statement"), strOrNull(want.OpeningStatement)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("suggested_questions"), stringsExact(want.SuggestedQuestions)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("suggested_questions_after_answer_enabled"), knownvalue.Bool(want.SuggestedQuestionsAfterAnswer.Enabled)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("speech_to_text_enabled"), knownvalue.Bool(want.SpeechToText.Enabled)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("text_to_speech"), knownvalue.ObjectExact(map[string]knownvalue.Check{
					"enabled":   knownvalue.Bool(want.TextToSpeech.Enabled),
					"voice":     knownvalue.StringExact(want.TextToSpeech.Voice),
					"language":  knownvalue.StringExact(want.TextToSpeech.Language),
					"auto_play": knownvalue.StringExact(want.TextToSpeech.AutoPlay),
				})),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("retriever_resource_enabled"), knownvalue.Bool(want.RetrieverResource.Enabled)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("annotation_reply_enabled"), knownvalue.Bool(want.AnnotationReply.Enabled)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("more_like_this_enabled"), knownvalue.Bool(want.MoreLikeThis.Enabled)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("user_input_form"), knownvalue.ListSizeExact(len(want.UserInputForm))),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("user_input_form"), knownvalue.ListPartial(form)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("file_upload").AtMapKey("allowed_file_types"), stringsExact(nonNil(want.FileUpload.AllowedFileTypes))),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("system_parameters"), knownvalue.ObjectExact(map[string]knownvalue.Check{
					"image_file_size_limit":      knownvalue.Int64Exact(int64(sp.ImageFileSizeLimit)),
					"video_file_size_limit":      knownvalue.Int64Exact(int64(sp.VideoFileSizeLimit)),
					"audio_file_size_limit":      knownvalue.Int64Exact(int64(sp.AudioFileSizeLimit)),
					"file_size_limit":            knownvalue.Int64Exact(int64(sp.FileSizeLimit)),
					"workflow_file_upload_limit": knownvalue.Int64Exact(int64(sp.WorkflowFileUploadLimit)),
				})),
			},
		}},
	})
}

func TestAccAppMetaDataSource(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	var want dify.AppMeta
	env.appResponse("/meta", &want)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{{
			Config: env.providerBlock() + `data "dify_app_meta" "this" {}`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.dify_app_meta.this", tfjsonpath.New("tool_icons"), knownvalue.MapSizeExact(len(want.ToolIcons))),
			},
		}},
	})
}

func TestAccAppSiteDataSource(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	var want dify.AppSite
	env.appResponse("/site", &want)
	ds := "data.dify_app_site.this"
	check := func(attr string, v knownvalue.Check) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(ds, tfjsonpath.New(attr), v)
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{{
			Config: env.providerBlock() + `data "dify_app_site" "this" {}`,
			ConfigStateChecks: []statecheck.StateCheck{
				check("title", knownvalue.StringExact(want.Title)),
				check("description", strOrNull(want.Description)),
				check("icon", strOrNull(want.Icon)),
				check("icon_type", strOrNull(want.IconType)),
				check("icon_background", strOrNull(want.IconBackground)),
				check("icon_url", strOrNull(want.IconURL)),
				check("chat_color_theme", strOrNull(want.ChatColorTheme)),
				check("chat_color_theme_inverted", knownvalue.Bool(want.ChatColorThemeInverted)),
				check("copyright", strOrNull(want.Copyright)),
				check("privacy_policy", strOrNull(want.PrivacyPolicy)),
				check("custom_disclaimer", strOrNull(want.CustomDisclaimer)),
				check("input_placeholder", strOrNull(want.InputPlaceholder)),
				check("default_language", knownvalue.StringExact(want.DefaultLanguage)),
				check("show_workflow_steps", knownvalue.Bool(want.ShowWorkflowSteps)),
				check("use_icon_as_answer_icon", knownvalue.Bool(want.UseIconAsAnswerIcon)),
			},
		}},
	})
}

func TestAccServerDataSource(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	var want dify.ServerInfo
	env.appResponse("/", &want)
	ds := "data.dify_server.this"
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{{
			Config: env.providerBlock() + `data "dify_server" "this" {}`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("welcome"), knownvalue.StringExact(want.Welcome)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("api_version"), knownvalue.StringExact(want.APIVersion)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("server_version"), knownvalue.StringExact(want.ServerVersion)),
			},
		}},
	})
}

// TestAccConversationsAndMessagesDataSources creates a conversation from the
// tool-use cassette and reads it back through both listing data sources.
func TestAccConversationsAndMessagesDataSources(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	rec, folded := env.cassetteTurn("tool-use")
	thoughts := map[int]knownvalue.Check{}
	for i, th := range folded.Thoughts {
		thoughts[i] = knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"position": knownvalue.Int64Exact(int64(th.Position)),
			"tool":     knownvalue.StringExact(deref(th.Tool)),
		})
	}
	config := env.providerBlock() + `
resource "dify_conversation" "trip" {
  query = ` + hclString(rec.Request.Query) + `
  name  = "Lisbon plan"
}

data "dify_conversations" "all" {
  depends_on = [dify_conversation.trip]
}

data "dify_messages" "trip" {
  conversation_id = dify_conversation.trip.id
}
`
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.dify_conversations.all", tfjsonpath.New("user"), knownvalue.StringExact("acc-user")),
				statecheck.ExpectKnownValue("data.dify_conversations.all", tfjsonpath.New("conversations"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.ObjectPartial(map[string]knownvalue.Check{
						"name":   knownvalue.StringExact("Lisbon plan"),
						"status": knownvalue.StringExact("normal"),
					}),
				})),
				statecheck.CompareValuePairs("data.dify_conversations.all", tfjsonpath.New("conversations").AtSliceIndex(0).AtMapKey("id"),
					"dify_conversation.trip", tfjsonpath.New("id"), compareSame),
				statecheck.ExpectKnownValue("data.dify_messages.trip", tfjsonpath.New("messages"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.ObjectPartial(map[string]knownvalue.Check{
						"query":          knownvalue.StringExact(rec.Request.Query),
						"answer":         knownvalue.StringExact(folded.Answer),
						"status":         knownvalue.StringExact("normal"),
						"agent_thoughts": knownvalue.ListPartial(thoughts),
					}),
				})),
				statecheck.CompareValuePairs("data.dify_messages.trip", tfjsonpath.New("messages").AtSliceIndex(0).AtMapKey("id"),
					"dify_conversation.trip", tfjsonpath.New("message_id"), compareSame),
			},
		}},
	})
}

func TestAccEndUserDataSource(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	ds := "data.dify_end_user.owner"
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{{
			Config: env.providerBlock() + `
resource "dify_file" "note" {
  content  = "hello"
  filename = "note.txt"
  user     = "end-user-42"
}

data "dify_end_user" "owner" {
  id = dify_file.note.created_by
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.CompareValuePairs(ds, tfjsonpath.New("id"), "dify_file.note", tfjsonpath.New("created_by"), compareSame),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("external_user_id"), knownvalue.StringExact("end-user-42")),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("session_id"), knownvalue.StringExact("end-user-42")),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("type"), knownvalue.StringExact("service-api")),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("is_anonymous"), knownvalue.Bool(false)),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("created_at"), knownvalue.StringRegexp(regexp.MustCompile(`^\d{4}-\d\d-\d\dT`))),
			},
		}},
	})
}
