// Package appdsl reads a Dify app DSL file — the YAML that Studio's
// "Export DSL" (GET /console/api/apps/{id}/export) writes and teams keep in
// git — and derives from it the app description dify-mock serves: the
// bodies of GET /, /info, /parameters, /meta and /site, as Dify would
// answer them for the app that importing the file creates.
//
// It reads `version`, `kind`, the `app` block (name, mode, description,
// icon_type, icon, icon_background, use_icon_as_answer_icon) and, by mode:
//
//   - agent-chat (the legacy Agent): `model_config`, imported as Dify's
//     AppDslService._create_or_update_app does
//     (api/services/app_dsl_service.py) into an AppModelConfig
//     (from_model_config_dict / to_dict in api/models/model.py);
//   - agent (the New Agent, DSL 0.7.0 and later): `agent.package_ref` and
//     the Agent package it names in `agent_packages`
//     (api/services/agent/dsl_entities.py, dsl_service.py), whose Agent
//     Soul (api/models/agent_config_entities.py) carries the app's features
//     (app_features) and input variables (app_variables).
//
// The responses follow the code that serves them:
// api/controllers/service_api/app/app.py (/info, /parameters, /meta),
// get_parameters_from_feature_dict (api/core/app/app_config/common/
// parameters_mapping.py), merge_agent_app_features
// (api/core/app/apps/agent_app/app_feature_projection.py),
// agent_app_variables_to_user_input_form
// (api/core/app/apps/agent_app/app_variable_projection.py),
// AppService.get_app_meta (api/services/app_service.py) and
// api/controllers/service_api/app/site.py with the Site row that
// api/events/event_handlers/create_site_record_when_app_created.py writes.
// What a DSL cannot say gets the defaults docs/mock/dsl.md lists.
//
// Other app modes (workflow, advanced-chat, chat, completion) are refused
// with the reason. Unknown versions and keys are warnings. Secrets a DSL may
// carry (environment variables, credentials, tool parameters) are never
// copied into a response, a warning or an error.
package appdsl

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/author"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
)

// MaxSize is Dify's DSL_MAX_SIZE (api/services/app_dsl_service.py): the
// importer refuses larger files, and so does dify-mock.
const MaxSize = 10 << 20

// CurrentVersion is the newest DSL version dify-mock knows
// (CURRENT_APP_DSL_VERSION in api/constants/dsl_version.py of Dify 1.16 and
// later, which added `app.mode: agent`).
const CurrentVersion = "0.7.0"

// agentModeVersion is the DSL version that introduced New Agent apps.
const agentModeVersion = "0.7.0"

// AuthorName is /info's author_name for a DSL app. Dify reports the account
// that imported the app, which no DSL names.
const AuthorName = "dify-mock"

// DefaultLanguage is /site's default_language: Dify copies the importing
// account's interface language, "en-US" unless changed (languages[0] in
// api/constants/languages.py).
const DefaultLanguage = "en-US"

// Warning is something in the DSL that dify-mock ignored or read differently
// from what its author may expect. It never quotes a value from the file.
type Warning struct {
	File    string
	Line    int // 1-based, 0 when not about one place
	Message string
}

func (w Warning) String() string {
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", w.File, w.Line, w.Message)
	}
	return w.File + ": " + w.Message
}

// Error is why a DSL cannot be served.
type Error struct {
	File   string
	Line   int
	Reason string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return e.File + ": " + e.Reason
}

// maxWarnings bounds the warnings of one file; a generated file with
// thousands of odd keys should not flood a terminal.
const maxWarnings = 50

// parser collects what one file says.
type parser struct {
	file     string
	warnings []Warning
	dropped  int
}

func (p *parser) warn(n *yaml.Node, format string, args ...any) {
	if len(p.warnings) >= maxWarnings {
		p.dropped++
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	p.warnings = append(p.warnings, Warning{File: p.file, Line: line, Message: fmt.Sprintf(format, args...)})
}

func (p *parser) fail(n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Reason: fmt.Sprintf(format, args...)}
}

// keyName is a key as a warning may show it: a key that looks like a
// secret is not repeated.
func keyName(k string) string {
	if r := secrets.RedactString(k); r != k {
		return "(a key that looks like a secret)"
	}
	if len(k) > 64 {
		return strconv.Quote(k[:64] + "…")
	}
	return k
}

// unknownKeys warns about the keys of mapping m that are not in known.
func (p *parser) unknownKeys(m *yaml.Node, path string, known map[string]bool, why string) {
	if !isMap(m) {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if !known[k.Value] {
			p.warn(k, "unknown key %s.%s: %s", path, keyName(k.Value), why)
		}
	}
}

var topLevelKeys = map[string]bool{
	"version": true, "kind": true, "app": true, "model_config": true, "workflow": true,
	"agent": true, "agent_packages": true, "dependencies": true,
}

var appKeys = map[string]bool{
	"name": true, "mode": true, "icon": true, "icon_type": true, "icon_background": true,
	"description": true, "use_icon_as_answer_icon": true,
}

// refused are the Dify app modes dify-mock does not impersonate, with what
// each is.
var refused = map[string]string{
	"workflow":      "a Workflow",
	"advanced-chat": "a Chatflow",
	"chat":          "a Chatbot",
	"completion":    "a Text Generator",
}

// Parse reads a Dify app DSL (source names it in warnings and errors) and
// returns the app description Dify would serve for it: Responses hold the
// bodies of GET /, /info, /parameters, /meta and /site, Info and Parameters
// are decoded, and Meta.Provenance is cassette.ProvenanceDSL.
func Parse(data []byte, source string) (*cassette.App, []Warning, error) {
	p := &parser{file: source}
	app, err := p.parse(data)
	if p.dropped > 0 {
		p.warnings = append(p.warnings, Warning{File: source, Message: fmt.Sprintf("%d more warning(s) not shown", p.dropped)})
	}
	if err != nil {
		return nil, p.warnings, err
	}
	return app, p.warnings, nil
}

func (p *parser) parse(data []byte) (*cassette.App, error) {
	if len(data) > MaxSize {
		return nil, p.fail(nil, "file is %d bytes, over Dify's %d-byte (10 MB) DSL limit", len(data), MaxSize)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, p.fail(nil, "not a YAML document: %s", yamlReason(err))
	}
	if len(doc.Content) == 0 {
		return nil, p.fail(nil, "empty file: a Dify app DSL is a YAML mapping with kind: app")
	}
	root, err := expand(doc.Content[0])
	if err != nil {
		return nil, p.fail(nil, "%v", err)
	}
	if !isMap(root) {
		return nil, p.fail(root, "Invalid YAML format: content must be a mapping (a Dify app DSL has version, kind and app at the top)")
	}
	if has(root, "dify_mock") {
		return nil, p.fail(root, "this is a dify-mock cassette (it has a dify_mock block), not a Dify app DSL")
	}
	p.unknownKeys(root, "(top level)", topLevelKeys, "not part of Dify's app DSL; ignored")
	if err := p.kind(root); err != nil {
		return nil, err
	}
	version := p.version(root)
	appNode, appKey := get(root, "app")
	if !truthy(appNode) || !isMap(appNode) {
		return nil, p.fail(or(appKey, root), "Missing app data in YAML content: a Dify app DSL needs an `app` mapping with at least `mode`")
	}
	p.unknownKeys(appNode, "app", appKeys, "not part of Dify's app DSL; ignored")
	modeNode, modeKey := get(appNode, "mode")
	if !truthy(modeNode) {
		return nil, p.fail(or(modeKey, appKey), "app.mode is missing (Dify refuses the import: \"loss app mode\"); dify-mock serves app.mode agent (New Agent) or agent-chat (legacy Agent)")
	}
	mode := pyStr(modeNode)
	var d *derived
	switch mode {
	case dify.ModeAgent:
		if versionBefore(version, agentModeVersion) {
			p.warn(modeNode, "app.mode agent arrived with DSL %s; this file says version %s", agentModeVersion, version)
		}
		d, err = p.agent(root, appNode)
	case dify.ModeAgentChat:
		d, err = p.legacy(root)
	default:
		if what, ok := refused[mode]; ok {
			return nil, p.fail(modeNode, "app.mode is %s (%s app): dify-mock serves only Agent apps, app.mode agent (New Agent) or agent-chat (legacy Agent)", mode, what)
		}
		return nil, p.fail(modeNode, "app.mode %s is not a Dify app mode; dify-mock serves app.mode agent (New Agent) or agent-chat (legacy Agent)", strconv.Quote(keyName(mode)))
	}
	if err != nil {
		return nil, err
	}
	p.sweepSecrets(root, "", false)
	a := p.appFields(appNode, d)
	return p.build(mode, version, a, d)
}

// yamlReason is a YAML parser error without the file's text: yaml.v3's
// messages name lines and token kinds, and never hold a value, but type
// errors (not reachable when decoding into a Node) would.
func yamlReason(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

func or(a, b *yaml.Node) *yaml.Node {
	if a != nil {
		return a
	}
	return b
}

func (p *parser) kind(root *yaml.Node) error {
	k, key := get(root, "kind")
	switch {
	case key == nil || !truthy(k):
		// Dify's importer sets a missing kind to "app".
		p.warn(root, "no `kind`: Dify reads the file as kind: app")
	case !isStr(k) || k.Value != cassette.KindApp:
		return p.fail(k, "kind is %s, not app: not a Dify app DSL", strconv.Quote(keyName(pyStr(k))))
	}
	return nil
}

// version returns the DSL version as Dify compares it (a missing version is
// "0.1.0"), warning about what Dify would not import silently.
func (p *parser) version(root *yaml.Node) string {
	v, key := get(root, "version")
	if key == nil || !truthy(v) {
		p.warn(root, "no `version`: Dify reads the file as DSL version 0.1.0")
		return "0.1.0"
	}
	if !isStr(v) {
		p.warn(v, "version is not a string (quote it, e.g. version: \"%s\"): Dify refuses to import a version of another type", CurrentVersion)
		return v.Value
	}
	parsed, ok := parseVersion(v.Value)
	if !ok {
		p.warn(v, "version %s is not a version number Dify can compare (Dify's import fails); read as %s", strconv.Quote(keyName(v.Value)), CurrentVersion)
		return CurrentVersion
	}
	current, _ := parseVersion(CurrentVersion)
	if compareVersions(parsed, current) > 0 {
		p.warn(v, "DSL version %s is newer than %s, the newest dify-mock knows: Dify asks before importing it, and keys it added are ignored here", v.Value, CurrentVersion)
	}
	return v.Value
}

// parseVersion reads a release version the way packaging.version does for
// the plain forms DSL files use ("0.1.5", "0.7").
func parseVersion(s string) ([]int, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if s == "" {
		return nil, false
	}
	var out []int
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

func compareVersions(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// versionBefore reports whether v is a comparable version older than ref.
func versionBefore(v, ref string) bool {
	a, ok := parseVersion(v)
	b, _ := parseVersion(ref)
	return ok && compareVersions(a, b) < 0
}

// derived is what the mode-specific part of a DSL contributes.
type derived struct {
	features  obj        // the feature dict get_parameters_from_feature_dict reads
	form      *yaml.Node // user_input_form
	toolIcons obj        // /meta tool_icons
	// fallbackName and fallbackDescription fill an empty app name and
	// description (a New Agent import takes the Agent package's).
	fallbackName, fallbackDescription string
}

// appInfo is the App row the import creates.
type appInfo struct {
	name, description, iconType, icon string
	iconBackground                    *string
	// siteTitle is the app's name when the app was created: the Site row
	// is written then (app_was_created), before a New Agent import fills
	// an empty name from its Agent package.
	siteTitle string
}

// appFields reads the app block as AppDslService._create_or_update_app
// does for a new app.
func (p *parser) appFields(appNode *yaml.Node, d *derived) appInfo {
	var a appInfo
	text := func(key string) string {
		v, _ := get(appNode, key)
		if isNull(v) {
			return ""
		}
		if v.Kind != yaml.ScalarNode {
			p.warn(v, "app.%s is not text; read as empty", key)
			return ""
		}
		return pyStr(v)
	}
	a.name = text("name")
	a.siteTitle = a.name
	if a.name == "" {
		a.name = d.fallbackName
	}
	a.description = text("description")
	if a.description == "" {
		a.description = d.fallbackDescription
	}
	// icon_type: emoji, image or link; anything else is emoji.
	a.iconType = "emoji"
	it, itKey := get(appNode, "icon_type")
	switch t := pyStr(it); {
	case itKey == nil || isNull(it):
	case t == "emoji" || t == "image" || t == "link":
		a.iconType = t
	default:
		p.warn(it, "app.icon_type %s is not emoji, image or link; Dify stores emoji", strconv.Quote(keyName(t)))
	}
	// str(app_data.get("icon", "")): a null icon is the text "None".
	if icon, key := get(appNode, "icon"); key != nil {
		a.icon = pyStr(icon)
	}
	if a.iconType == "image" {
		p.warn(it, "app.icon_type image names an uploaded file of the exporting workspace; /site's icon_url stays null (dify-mock has no such file)")
	}
	bg, bgKey := get(appNode, "icon_background")
	switch {
	case bgKey == nil:
		s := "#FFFFFF"
		a.iconBackground = &s
	case isNull(bg):
	default:
		s := pyStr(bg)
		a.iconBackground = &s
	}
	return a
}

// builtinApp is the built-in app description, for what every app of this
// Dify release shares: GET / and the upload limits.
var builtinApp = sync.OnceValues(func() (*cassette.App, error) {
	data, err := readFS(cassette.AppName + ".yaml")
	if err != nil {
		return nil, err
	}
	f, err := cassette.Decode("built-in app.yaml", data)
	if err != nil {
		return nil, err
	}
	return cassette.ParseApp(cassette.AppName, "built-in app.yaml", f)
})

func readFS(name string) ([]byte, error) {
	return fs.ReadFile(cassettes.FS(), name)
}

// build renders the five bodies and loads them as the mock loads any app
// description.
func (p *parser) build(mode, version string, a appInfo, d *derived) (*cassette.App, error) {
	builtin, err := builtinApp()
	if err != nil {
		return nil, fmt.Errorf("built-in app description: %w", err)
	}
	var root struct {
		ServerVersion string `json:"server_version"`
	}
	if err := json.Unmarshal(builtin.Responses["/"].Body, &root); err != nil || root.ServerVersion == "" {
		return nil, fmt.Errorf("built-in app description: GET / has no server_version")
	}
	var sysParams yaml.Node
	var params struct {
		SystemParameters json.RawMessage `json:"system_parameters"`
	}
	if err := json.Unmarshal(builtin.Responses["/parameters"].Body, &params); err != nil {
		return nil, fmt.Errorf("built-in app description: /parameters: %w", err)
	}
	// JSON is YAML: the node keeps the built-in keys' order.
	if err := yaml.Unmarshal(params.SystemParameters, &sysParams); err != nil || len(sysParams.Content) == 0 {
		return nil, fmt.Errorf("built-in app description: /parameters has no system_parameters")
	}

	info := newObj().
		set("name", strNode(a.name)).
		set("description", strNode(a.description)).
		set("tags", seqNode()).
		set("mode", strNode(mode)).
		set("author_name", strNode(AuthorName))

	// get_parameters_from_feature_dict, key by key, with its defaults.
	f := d.features
	feature := func(key string, def *yaml.Node) *yaml.Node {
		if v := f.get(key); v != nil {
			return v
		}
		return def
	}
	parameters := newObj().
		set("opening_statement", feature("opening_statement", nullNode())).
		set("suggested_questions", feature("suggested_questions", seqNode())).
		set("suggested_questions_after_answer", feature("suggested_questions_after_answer", enabledObj(false))).
		set("speech_to_text", feature("speech_to_text", enabledObj(false))).
		set("text_to_speech", feature("text_to_speech", enabledObj(false))).
		set("retriever_resource", feature("retriever_resource", enabledObj(false))).
		set("annotation_reply", feature("annotation_reply", enabledObj(false))).
		set("more_like_this", feature("more_like_this", enabledObj(false))).
		set("user_input_form", d.form).
		set("sensitive_word_avoidance", feature("sensitive_word_avoidance", defaultSensitiveWordAvoidance())).
		set("file_upload", feature("file_upload", defaultFileUpload())).
		set("system_parameters", sysParams.Content[0])

	meta := newObj().set("tool_icons", d.toolIcons.n)

	// The Site row create_site_record_when_app_created writes, served
	// through site_fields: title and icon from the app, the rest the
	// Site model's defaults (docs/mock/dsl.md).
	site := newObj().
		set("title", strNode(a.siteTitle)).
		set("chat_color_theme", nullNode()).
		set("chat_color_theme_inverted", boolNode(false)).
		set("icon_type", strNode(a.iconType)).
		set("icon", strNode(a.icon)).
		set("icon_background", strOrNull(a.iconBackground)).
		set("icon_url", nullNode()).
		set("description", nullNode()).
		set("copyright", nullNode()).
		set("privacy_policy", nullNode()).
		set("input_placeholder", nullNode()).
		set("custom_disclaimer", nullNode()).
		set("default_language", strNode(DefaultLanguage)).
		set("show_workflow_steps", boolNode(true)).
		set("use_icon_as_answer_icon", boolNode(false))

	desc := fmt.Sprintf("App description derived from the Dify app DSL %s (app.mode %s, DSL version %s).", p.file, mode, version)
	source := "derived by dify-mock from the Dify app DSL " + p.file + "; not recorded from a Dify"
	f2, err := author.GenerateApp(&author.AppScenario{
		Kind: cassette.KindApp, Description: desc, ServerVersion: root.ServerVersion,
		Info: *info.n, Parameters: *parameters.n, Meta: *meta.n, Site: *site.n,
	}, author.Options{Source: source})
	if err != nil {
		return nil, p.fail(nil, "the derived app description does not load: %v", err)
	}
	p.redactBodies(f2)
	app, err := cassette.ParseApp(cassette.AppName, p.file, f2)
	if err != nil {
		return nil, p.fail(nil, "the derived app description does not load: %v", err)
	}
	app.Meta.Provenance = cassette.ProvenanceDSL
	app.Meta.Source = source
	app.Meta.Description = desc
	app.Meta.Mode = mode
	return app, nil
}

// redactBodies is the last guard: no served body may carry a credential,
// whatever field of the DSL it came from.
func (p *parser) redactBodies(f *cassette.File) {
	for _, in := range f.Interactions {
		body := []byte(in.Response.Body)
		found := secrets.Scan(body)
		if len(found) == 0 {
			continue
		}
		path, _ := cassette.APIPath(in.Request.URL)
		p.warn(nil, "GET %s would carry a %s taken from the DSL; it is served as %s", path, found[0].Pattern, secrets.Redacted)
		in.Response.Body = string(secrets.Redact(body))
	}
}

// defaultSensitiveWordAvoidance is AppModelConfig.sensitive_word_avoidance_dict's
// default (api/models/model.py).
func defaultSensitiveWordAvoidance() *yaml.Node {
	return newObj().set("enabled", boolNode(false)).set("type", strNode("")).set("configs", seqNode()).n
}

// defaultFileUpload is AppModelConfig.file_upload_dict's default.
func defaultFileUpload() *yaml.Node {
	image := newObj().
		set("enabled", boolNode(false)).
		set("number_limits", intNode(3)).
		set("detail", strNode("high")).
		set("transfer_methods", strSeq("remote_url", "local_file"))
	return newObj().set("image", image.n).n
}

// sweepSecrets warns about credential-like fields that hold a value, by path
// only. Dify's export leaves them out (include_secret=false, and the Agent
// package nulls them); a hand-edited file may not. Under a credential-like
// key (secret_refs, credential_ref, …) a `value` counts as one too.
func (p *parser) sweepSecrets(n *yaml.Node, path string, underSecret bool) {
	switch n.Kind {
	case yaml.MappingNode:
		secretVar := false
		if t, _ := get(n, "value_type"); isStr(t) && t.Value == "secret" {
			secretVar = true // a workflow's secret environment variable
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			child := path + "." + keyName(k.Value)
			if path == "" {
				child = keyName(k.Value)
			}
			sensitive := sensitiveKey(k.Value)
			if v.Kind == yaml.ScalarNode {
				if truthy(v) && (sensitive || ((underSecret || secretVar) && k.Value == "value")) {
					p.warn(k, "%s holds a secret; dify-mock never serves it, but keep secrets out of DSL files (Dify's export leaves them out)", child)
				}
				continue
			}
			p.sweepSecrets(v, child, underSecret || sensitive)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p.sweepSecrets(c, fmt.Sprintf("%s[%d]", path, i), underSecret)
		}
	}
}

// sensitiveKey is Dify's _strip_sensitive_values rule
// (api/services/agent/dsl_entities.py) plus the mock's own credential
// field names.
func sensitiveKey(k string) bool {
	l := strings.ToLower(k)
	switch {
	case strings.Contains(l, "credential"), strings.Contains(l, "secret"), strings.Contains(l, "password"):
		// credential_type ("api-key", "unauthorized") names a kind, not a value.
		return l != "credential_type"
	case l == "api_key", l == "token", l == "access_token", l == "refresh_token":
		return true
	}
	return secrets.IsCredentialName(k)
}
