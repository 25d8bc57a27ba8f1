package appdsl_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/appdsl"
	"github.com/difyops/terraform-provider-dify/mockserver/mocktest"
)

func parseFile(t *testing.T, path string) (*cassette.App, []appdsl.Warning) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	app, warns, err := appdsl.Parse(data, path)
	if err != nil {
		t.Fatalf("Parse(%s): %v", path, err)
	}
	return app, warns
}

func parseString(t *testing.T, dsl string) (*cassette.App, []appdsl.Warning, error) {
	t.Helper()
	return appdsl.Parse([]byte(dsl), "test.yml")
}

// body decodes a response body generically (numbers kept as written).
func body(t *testing.T, app *cassette.App, path string) map[string]any {
	t.Helper()
	r, ok := app.Responses[path]
	if !ok {
		t.Fatalf("no GET %s", path)
	}
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("GET %s: status %d, Content-Type %q", path, r.Status, r.Header.Get("Content-Type"))
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("GET %s body %s: %v", path, r.Body, err)
	}
	return m
}

// keys lists an object's keys in wire order.
func keys(t *testing.T, raw []byte, path ...string) []string {
	t.Helper()
	for _, p := range path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		raw = m[p]
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%v is not an object: %s", path, raw)
	}
	var out []string
	for dec.More() {
		tok, _ := dec.Token()
		out = append(out, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func warningsText(ws []appdsl.Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.String() + "\n")
	}
	return b.String()
}

// parametersOrder is the key order of get_parameters_from_feature_dict
// (and of the recorded /parameters bodies).
var parametersOrder = []string{
	"opening_statement", "suggested_questions", "suggested_questions_after_answer", "speech_to_text",
	"text_to_speech", "retriever_resource", "annotation_reply", "more_like_this", "user_input_form",
	"sensitive_word_avoidance", "file_upload", "system_parameters",
}

var siteOrder = []string{
	"title", "chat_color_theme", "chat_color_theme_inverted", "icon_type", "icon", "icon_background", "icon_url",
	"description", "copyright", "privacy_policy", "input_placeholder", "custom_disclaimer", "default_language",
	"show_workflow_steps", "use_icon_as_answer_icon",
}

// The wire shape matches the built-in (recorded-shape) app description:
// same top-level keys in the same order.
func TestBodiesHaveTheRecordedShape(t *testing.T) {
	app, _ := parseFile(t, "testdata/support-agent.yml")
	if got := keys(t, app.Responses["/parameters"].Body); !reflect.DeepEqual(got, parametersOrder) {
		t.Errorf("/parameters keys %v, want %v", got, parametersOrder)
	}
	if got := keys(t, app.Responses["/site"].Body); !reflect.DeepEqual(got, siteOrder) {
		t.Errorf("/site keys %v, want %v", got, siteOrder)
	}
	if got := keys(t, app.Responses["/info"].Body); !reflect.DeepEqual(got, []string{"name", "description", "tags", "mode", "author_name"}) {
		t.Errorf("/info keys %v", got)
	}
	root := body(t, app, "/")
	if root["welcome"] != "Dify OpenAPI" || root["server_version"] == "" {
		t.Errorf("GET / %v", root)
	}
	for _, p := range cassette.AppPaths {
		var compact bytes.Buffer
		if b := app.Responses[p].Body; json.Compact(&compact, b) != nil || !bytes.Equal(compact.Bytes(), b) {
			t.Errorf("GET %s is not compact JSON: %s", p, b)
		}
	}
}

func TestNewAgentResponses(t *testing.T) {
	app, warns := parseFile(t, "testdata/support-agent.yml")
	if len(warns) != 0 {
		t.Errorf("a clean DSL warns:\n%s", warningsText(warns))
	}
	if app.Meta.Provenance != cassette.ProvenanceDSL || app.Meta.Mode != dify.ModeAgent || !strings.Contains(app.Meta.Source, "not recorded") {
		t.Errorf("meta %+v: want provenance %q, mode agent, a source saying it was not recorded", app.Meta, cassette.ProvenanceDSL)
	}
	if app.Info.Name != "Support Agent" || app.Info.Mode != dify.ModeAgent {
		t.Errorf("Info %+v", app.Info)
	}
	info := body(t, app, "/info")
	if toJSON(t, info["tags"]) != "[]" || info["description"] != "Answers questions about orders and returns." || info["author_name"] != appdsl.AuthorName {
		t.Errorf("/info %v", info)
	}

	p := body(t, app, "/parameters")
	// The Soul's app_features win over the empty model config's features
	// (merge_agent_app_features).
	if p["opening_statement"] != "Hi, I am the support agent. What can I do for you?" {
		t.Errorf("opening_statement %v", p["opening_statement"])
	}
	if toJSON(t, p["suggested_questions"]) != `["Where is my order?","How do I return an item?"]` {
		t.Errorf("suggested_questions %v", p["suggested_questions"])
	}
	for key, want := range map[string]string{
		"suggested_questions_after_answer": `{"enabled":true}`,
		"speech_to_text":                   `{"enabled":true}`,
		"retriever_resource":               `{"enabled":false}`,
		// Not a Soul feature: the annotation setting an import never makes.
		"annotation_reply": `{"enabled":false}`,
		"more_like_this":   `{"enabled":false}`,
	} {
		if got := toJSON(t, p[key]); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	// Declared fields in the Soul model's order, not the file's (sorted).
	raw := app.Responses["/parameters"].Body
	if got := keys(t, raw, "text_to_speech"); !reflect.DeepEqual(got, []string{"enabled", "language", "voice", "autoPlay"}) {
		t.Errorf("text_to_speech keys %v", got)
	}
	if got := keys(t, raw, "file_upload"); !reflect.DeepEqual(got, []string{"enabled", "allowed_file_extensions", "allowed_file_types", "allowed_file_upload_methods", "image", "number_limits"}) {
		t.Errorf("file_upload keys %v", got)
	}
	fu := p["file_upload"].(map[string]any)
	if toJSON(t, fu["allowed_file_extensions"]) != `["PDF","PNG"]` || toJSON(t, fu["number_limits"]) != "2" || toJSON(t, fu["image"]) != `{"enabled":true}` {
		t.Errorf("file_upload %v", fu)
	}

	// agent_app_variables_to_user_input_form: label = variable = name,
	// the control from the type, default only when set and as typed.
	type item struct{ control, variable, def string }
	want := []item{
		{"text-input", "customer_name", `"Alex"`},
		{"paragraph", "order_notes", ""},
		{"number", "max_items", "3"},
		{"number", "budget_share", "0.5"},
		{"checkbox", "is_vip", "false"},
		{"text-input", "tier", ""},
		{"paragraph", "history", ""},
	}
	form := p["user_input_form"].([]any)
	if len(form) != len(want) {
		t.Fatalf("user_input_form has %d items, want %d: %v", len(form), len(want), form)
	}
	for i, w := range want {
		entry := form[i].(map[string]any)
		inner, ok := entry[w.control].(map[string]any)
		if len(entry) != 1 || !ok {
			t.Errorf("item %d: %v, want a single %s key", i, entry, w.control)
			continue
		}
		if inner["label"] != w.variable || inner["variable"] != w.variable {
			t.Errorf("item %d: %v", i, inner)
		}
		def, has := inner["default"]
		if (w.def == "") == has || (has && toJSON(t, def) != w.def) {
			t.Errorf("item %d default %v (present %v), want %q", i, def, has, w.def)
		}
		if _, typed := inner["type"]; typed {
			t.Errorf("item %d carries a type key Dify's projection does not write: %v", i, inner)
		}
	}
	if req := form[0].(map[string]any)["text-input"].(map[string]any)["required"]; req != true {
		t.Errorf("customer_name required = %v", req)
	}

	if got := toJSON(t, body(t, app, "/meta")); got != `{"tool_icons":{}}` {
		t.Errorf("/meta %s", got)
	}
	site := body(t, app, "/site")
	for key, want := range map[string]string{
		"title": `"Support Agent"`, "icon_type": `"emoji"`, "icon": `"🎧"`, "icon_background": `"#E0F2FE"`,
		"icon_url": "null", "description": "null", "default_language": `"en-US"`,
		"show_workflow_steps": "true", "use_icon_as_answer_icon": "false", "chat_color_theme_inverted": "false",
	} {
		if got := toJSON(t, site[key]); got != want {
			t.Errorf("/site %s = %s, want %s", key, got, want)
		}
	}
}

// A Soul without app_features gets the Soul model's defaults: file upload
// on with its default types, retriever_resource from the empty model
// config ({"enabled": true}); the Agent package's name fills an empty
// app name.
func TestNewAgentDefaults(t *testing.T) {
	app, warns, err := parseString(t, `
version: "0.7.0"
kind: app
app: {mode: agent, name: ""}
agent: {package_ref: a}
agent_packages:
  a:
    schema_version: 1
    metadata: {name: Packaged Name, description: From the package}
    soul: {schema_version: 1}
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings:\n%s", warningsText(warns))
	}
	p := body(t, app, "/parameters")
	if p["opening_statement"] != nil || toJSON(t, p["user_input_form"]) != "[]" || toJSON(t, p["suggested_questions"]) != "[]" {
		t.Errorf("parameters %v", p)
	}
	if got := toJSON(t, p["retriever_resource"]); got != `{"enabled":true}` {
		t.Errorf("retriever_resource %s", got)
	}
	if got := toJSON(t, p["speech_to_text"]); got != `{"enabled":false}` {
		t.Errorf("speech_to_text %s", got)
	}
	wantUpload := `{"enabled":true,"allowed_file_extensions":["JPG","JPEG","PNG","GIF","WEBP","SVG"],"allowed_file_types":["document","image","audio","video"],"allowed_file_upload_methods":["local_file","remote_url"],"image":{"enabled":true},"number_limits":3}`
	var fu struct {
		FileUpload json.RawMessage `json:"file_upload"`
	}
	_ = json.Unmarshal(app.Responses["/parameters"].Body, &fu)
	if string(fu.FileUpload) != wantUpload {
		t.Errorf("file_upload %s\nwant        %s", fu.FileUpload, wantUpload)
	}
	if app.Info.Name != "Packaged Name" || app.Info.Description != "From the package" {
		t.Errorf("Info %+v", app.Info)
	}
	// The Site row is written when the app is created, before the package
	// fills the empty name: its title stays empty.
	if site := body(t, app, "/site"); site["title"] != "" || site["icon"] != "" || site["icon_background"] != "#FFFFFF" {
		t.Errorf("/site %v", site)
	}
}

func TestLegacyAgentResponses(t *testing.T) {
	app, warns := parseFile(t, "testdata/legacy-helper.yml")
	if len(warns) != 0 {
		t.Errorf("a clean DSL warns:\n%s", warningsText(warns))
	}
	if app.Info.Mode != dify.ModeAgentChat || app.Meta.Mode != dify.ModeAgentChat {
		t.Errorf("mode %q / %q", app.Info.Mode, app.Meta.Mode)
	}
	raw := app.Responses["/parameters"].Body
	p := body(t, app, "/parameters")
	// model_config features are stored as JSON and served as written,
	// key order included.
	if got := keys(t, raw, "sensitive_word_avoidance"); !reflect.DeepEqual(got, []string{"configs", "enabled", "type"}) {
		t.Errorf("sensitive_word_avoidance keys %v", got)
	}
	if got := toJSON(t, p["text_to_speech"]); got != `{"enabled":true,"language":"en-US","voice":"echo"}` {
		t.Errorf("text_to_speech %s", got)
	}
	if got := toJSON(t, p["annotation_reply"]); got != `{"enabled":false}` {
		t.Errorf("annotation_reply %s", got)
	}
	form := p["user_input_form"].([]any)
	var controls []string
	for _, it := range form {
		for k := range it.(map[string]any) {
			controls = append(controls, k)
		}
	}
	if want := []string{"text-input", "paragraph", "select", "number", "checkbox", "file", "file-list", "json_object"}; !reflect.DeepEqual(controls, want) {
		t.Errorf("controls %v, want %v", controls, want)
	}
	if len(app.Parameters.UserInputForm) != len(form) || app.Parameters.UserInputForm[2].Options[1] != "imperial" {
		t.Errorf("decoded form %+v", app.Parameters.UserInputForm)
	}
	// get_app_meta: builtin and api tools (four keys or more), not plugin.
	meta := body(t, app, "/meta")
	icons := meta["tool_icons"].(map[string]any)
	if len(icons) != 2 || icons["current_time"] == nil || icons["get_weather"] == nil {
		t.Errorf("tool_icons %v", icons)
	}
	if got := toJSON(t, icons["get_weather"]); got != `{"background":"#252525","content":"😁"}` {
		t.Errorf("api tool icon %s", got)
	}
}

// An empty feature is not stored (from_model_config_dict keeps only truthy
// values), so to_dict's default stands in; retriever_resource's is on.
func TestLegacyDefaults(t *testing.T) {
	app, _, err := parseString(t, `
version: "0.1.5"
kind: app
app: {mode: agent-chat, name: Bare, icon: null}
model_config:
  pre_prompt: ""
  more_like_this: {}
  suggested_questions: []
  speech_to_text: {enabled: yes}
  opening_statement: ""
`)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(app.Responses["/parameters"].Body, &p); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"more_like_this":     `{"enabled":false}`,
		"retriever_resource": `{"enabled":true}`,
		// PyYAML reads yes as a boolean.
		"speech_to_text":      `{"enabled":true}`,
		"suggested_questions": `[]`,
		"opening_statement":   `""`,
		"file_upload":         `{"image":{"enabled":false,"number_limits":3,"detail":"high","transfer_methods":["remote_url","local_file"]}}`,
		"user_input_form":     `[]`,
	} {
		if got := string(p[key]); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	// str(None): Dify stores a null icon as the text "None".
	if site := body(t, app, "/site"); site["icon"] != "None" || site["icon_type"] != "emoji" {
		t.Errorf("/site %v", site)
	}
}

func TestAnnotationReplyIsNotImported(t *testing.T) {
	app, warns, err := parseString(t, `
version: "0.3.0"
kind: app
app: {mode: agent-chat, name: A}
model_config: {pre_prompt: "", annotation_reply: {enabled: true, score_threshold: 0.9}}
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := toJSON(t, body(t, app, "/parameters")["annotation_reply"]); got != `{"enabled":false}` {
		t.Errorf("annotation_reply %s", got)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].Message, "annotation-reply/enable") {
		t.Errorf("want one warning pointing at the annotation setting, got:\n%s", warningsText(warns))
	}
}

func TestBadFiles(t *testing.T) {
	huge := "version: \"0.7.0\"\nkind: app\napp: {mode: agent}\n# " + strings.Repeat("x", appdsl.MaxSize) + "\n"
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'j'; i++ {
		bomb += string(i) + ": &" + string(i) + " [*" + string(i-1) + ", *" + string(i-1) + ", *" + string(i-1) + ", *" + string(i-1) + ", *" + string(i-1) + ", *" + string(i-1) + ", *" + string(i-1) + ", *" + string(i-1) + ", *" + string(i-1) + ", *" + string(i-1) + "]\n"
	}
	bomb += "kind: app\napp: {mode: agent-chat}\n"
	const agentChat = "kind: app\napp: {mode: agent-chat, name: A}\nmodel_config: {pre_prompt: ''}\n"
	for _, c := range []struct {
		name, dsl string
		err       string // substring of the one error; "" = none
		warn      string // substring of the one warning; "" = none
	}{
		{name: "not YAML", dsl: "kind: app\napp: [unclosed\n", err: "not a YAML document"},
		{name: "empty", dsl: "", err: "empty file"},
		{name: "a list", dsl: "- kind: app\n", err: "content must be a mapping"},
		{name: "not kind app", dsl: "kind: Deployment\napp: {mode: agent}\n", err: "kind is \"Deployment\", not app"},
		{name: "a cassette", dsl: "version: 1\ndify_mock: {kind: app}\nkind: app\napp: {mode: agent}\n", err: "dify-mock cassette"},
		{name: "workflow", dsl: "version: \"0.6.0\"\nkind: app\napp: {mode: workflow, name: W}\nworkflow: {graph: {nodes: []}}\n", err: "app.mode is workflow (a Workflow app): dify-mock serves only Agent apps, app.mode agent (New Agent) or agent-chat (legacy Agent)"},
		{name: "chatflow", dsl: "version: \"0.6.0\"\nkind: app\napp: {mode: advanced-chat}\n", err: "app.mode is advanced-chat (a Chatflow app)"},
		{name: "chatbot", dsl: "version: \"0.6.0\"\nkind: app\napp: {mode: chat}\nmodel_config: {}\n", err: "app.mode is chat (a Chatbot app)"},
		{name: "completion", dsl: "version: \"0.6.0\"\nkind: app\napp: {mode: completion}\n", err: "app.mode is completion"},
		{name: "unknown mode", dsl: "kind: app\napp: {mode: spaceship}\n", err: "\"spaceship\" is not a Dify app mode"},
		{name: "missing app", dsl: "version: \"0.7.0\"\nkind: app\n", err: "Missing app data"},
		{name: "missing app.mode", dsl: "version: \"0.7.0\"\nkind: app\napp: {name: A}\n", err: "app.mode is missing"},
		{name: "agent-chat without model_config", dsl: "version: \"0.7.0\"\nkind: app\napp: {mode: agent-chat}\n", err: "needs a model_config mapping"},
		{name: "agent without package", dsl: "version: \"0.7.0\"\nkind: app\napp: {mode: agent}\n", err: "app.mode agent needs `agent: {package_ref: …}`"},
		{name: "dangling package_ref", dsl: "version: \"0.7.0\"\nkind: app\napp: {mode: agent}\nagent: {package_ref: x}\nagent_packages: {y: {}}\n", err: "agent.package_ref \"x\" is not a key of agent_packages"},
		{name: "package schema 2", dsl: "version: \"0.7.0\"\nkind: app\napp: {mode: agent}\nagent: {package_ref: x}\nagent_packages: {x: {schema_version: 2, metadata: {name: A}, soul: {}}}\n", err: "schema_version must be 1"},
		{name: "variable without type", dsl: "version: \"0.7.0\"\nkind: app\napp: {mode: agent}\nagent: {package_ref: x}\nagent_packages: {x: {metadata: {name: A}, soul: {app_variables: [{name: v}]}}}\n", err: "app_variables[0].type"},
		{name: "bad toggle", dsl: "version: \"0.7.0\"\nkind: app\napp: {mode: agent}\nagent: {package_ref: x}\nagent_packages: {x: {metadata: {name: A}, soul: {app_features: {speech_to_text: {enabled: maybe}}}}}\n", err: "speech_to_text.enabled must be a boolean"},
		{name: "bad legacy form", dsl: "kind: app\napp: {mode: agent-chat}\nmodel_config: {pre_prompt: '', user_input_form: [{text-input: {label: x}}]}\n", err: "has no variable name"},
		{name: "huge", dsl: huge, err: "over Dify's 10485760-byte (10 MB) DSL limit"},
		{name: "alias bomb", dsl: bomb, err: "aliases expand to more than"},

		{name: "newer version", dsl: "version: \"9.1.0\"\n" + agentChat, warn: "DSL version 9.1.0 is newer than 0.7.0"},
		{name: "version not a number", dsl: "version: latest\n" + agentChat, warn: "version \"latest\" is not a version number"},
		{name: "version not a string", dsl: "version: 0.6\n" + agentChat, warn: "version is not a string"},
		{name: "no version", dsl: agentChat, warn: "no `version`"},
		{name: "no kind", dsl: "version: \"0.3.0\"\napp: {mode: agent-chat}\nmodel_config: {pre_prompt: ''}\n", warn: "no `kind`"},
		{name: "unknown top-level key", dsl: "version: \"0.3.0\"\nfeatures: {}\n" + agentChat, warn: "unknown key (top level).features"},
		{name: "unknown app key", dsl: "version: \"0.3.0\"\nkind: app\napp: {mode: agent-chat, colour: red}\nmodel_config: {pre_prompt: ''}\n", warn: "unknown key app.colour"},
		{name: "unknown model_config key", dsl: "version: \"0.3.0\"\nkind: app\napp: {mode: agent-chat}\nmodel_config: {pre_prompt: '', voice_mode: on}\n", warn: "unknown key model_config.voice_mode"},
		{name: "unknown soul key", dsl: "version: \"0.7.0\"\nkind: app\napp: {mode: agent}\nagent: {package_ref: x}\nagent_packages: {x: {metadata: {name: A}, soul: {mood: happy}}}\n", warn: "unknown key agent_packages.x.soul.mood"},
		{name: "agent mode in an old DSL", dsl: "version: \"0.6.0\"\nkind: app\napp: {mode: agent}\nagent: {package_ref: x}\nagent_packages: {x: {metadata: {name: A}, soul: {}}}\n", warn: "app.mode agent arrived with DSL 0.7.0"},
		{name: "no pre_prompt", dsl: "version: \"0.3.0\"\nkind: app\napp: {mode: agent-chat}\nmodel_config: {opening_statement: hi}\n", warn: "no pre_prompt"},
		{name: "image icon", dsl: "version: \"0.3.0\"\nkind: app\napp: {mode: agent-chat, icon_type: image, icon: 0b1c}\nmodel_config: {pre_prompt: ''}\n", warn: "icon_url stays null"},
	} {
		t.Run(c.name, func(t *testing.T) {
			app, warns, err := parseString(t, c.dsl)
			switch {
			case c.err != "" && err == nil:
				t.Fatalf("no error, want one with %q", c.err)
			case c.err != "" && !strings.Contains(err.Error(), c.err):
				t.Fatalf("error %q, want it to contain %q", err, c.err)
			case c.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.err == "" && app == nil:
				t.Fatal("no app and no error")
			}
			if c.err != "" && !strings.HasPrefix(err.Error(), "test.yml") {
				t.Errorf("error %q does not name the file", err)
			}
			var matching int
			for _, w := range warns {
				if c.warn != "" && strings.Contains(w.String(), c.warn) {
					matching++
				}
			}
			if c.warn != "" && (matching != 1 || len(warns) != 1) {
				t.Errorf("want exactly one warning with %q, got:\n%s", c.warn, warningsText(warns))
			}
			if c.warn == "" && c.err == "" && len(warns) != 0 {
				t.Errorf("unexpected warnings:\n%s", warningsText(warns))
			}
		})
	}
}

// Secrets a DSL carries never reach a response, a warning or an error.
func TestSecretsNeverShown(t *testing.T) {
	const marker = "TEST-ONLY-NOT-A-REAL-SECRET-7f3a9c"
	for _, file := range []string{"testdata/secrets-agent.yml", "testdata/secrets-workflow.yml", "testdata/secrets-legacy.yml"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(data, []byte(marker)); n < 3 {
				t.Fatalf("fixture holds the marker %d times; the test needs it in several places", n)
			}
			app, warns, err := appdsl.Parse(data, file)
			var out strings.Builder
			out.WriteString(warningsText(warns))
			if err != nil {
				out.WriteString(err.Error())
			}
			if app != nil {
				for _, r := range app.Responses {
					out.Write(r.Body)
				}
				out.WriteString(toJSON(t, app.Meta))
			}
			if strings.Contains(out.String(), marker) {
				t.Errorf("a secret value reached the output:\n%s", out.String())
			}
			if len(warns) == 0 && err == nil {
				t.Errorf("no warning about the stored secrets")
			}
		})
	}
}

// A credential in a served field (here an opening statement) is served
// redacted, with a warning that does not repeat it.
func TestServedCredentialsAreRedacted(t *testing.T) {
	key := "app-" + strings.Repeat("Zq8", 8) // built here so no key sits in the repository
	app, warns, err := parseString(t, "version: \"0.3.0\"\nkind: app\napp: {mode: agent-chat, name: A}\nmodel_config: {pre_prompt: '', opening_statement: 'use "+key+"'}\n")
	if err != nil {
		t.Fatal(err)
	}
	if b := app.Responses["/parameters"].Body; bytes.Contains(b, []byte(key)) || !bytes.Contains(b, []byte("[REDACTED]")) {
		t.Errorf("/parameters %s", b)
	}
	if w := warningsText(warns); len(warns) != 1 || strings.Contains(w, key) || !strings.Contains(w, "GET /parameters") {
		t.Errorf("warnings:\n%s", w)
	}
}

// The derived app runs in the mock: the form is read (inputs checked
// against it) and the bodies are served byte for byte.
func TestTheMockServesADSLApp(t *testing.T) {
	set, warns, err := appdsl.Load("testdata/support-agent.yml")
	if err != nil || len(warns) != 0 {
		t.Fatalf("Load: %v %v", err, warns)
	}
	m := mocktest.Start(t, mocktest.WithCassettes(set), mocktest.WithSpeed(0))
	if m.Server.Mode() != dify.ModeAgent {
		t.Errorf("mode %s", m.Server.Mode())
	}
	get := func(path string) []byte {
		req, _ := http.NewRequest(http.MethodGet, m.BaseURL+path, nil)
		req.Header.Set("Authorization", "Bearer app-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	for _, p := range []string{"/info", "/parameters", "/meta", "/site"} {
		if got := get(p); !bytes.Equal(got, set.App.Responses[p].Body) {
			t.Errorf("GET %s served %s", p, got)
		}
	}
	// customer_name is required: a chat without it is refused as Dify does.
	req, _ := http.NewRequest(http.MethodPost, m.BaseURL+"/chat-messages", strings.NewReader(`{"query":"hi","user":"u","response_mode":"streaming","inputs":{}}`))
	req.Header.Set("Authorization", "Bearer app-test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "customer_name is required in input form") {
		t.Errorf("chat without a required input: %d %s", resp.StatusCode, b)
	}
}
