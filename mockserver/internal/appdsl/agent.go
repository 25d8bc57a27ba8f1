package appdsl

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The New Agent's part of a DSL (DSL 0.7.0): `agent.package_ref` names an
// entry of `agent_packages`, an AgentPackage (api/services/agent/
// dsl_entities.py) whose Agent Soul (AgentSoulConfig in
// api/models/agent_config_entities.py) carries the app's features and
// input variables.

var agentKeys = map[string]bool{"package_ref": true}

var packageKeys = map[string]bool{"schema_version": true, "metadata": true, "soul": true, "omitted_assets": true}

var metadataKeys = map[string]bool{
	"name": true, "description": true, "role": true, "icon_type": true, "icon": true, "icon_background": true,
}

var soulKeys = map[string]bool{
	"schema_version": true, "prompt": true, "tools": true, "knowledge": true, "human": true, "env": true,
	"config_skills": true, "config_files": true, "config_note": true, "files": true, "sandbox": true,
	"memory": true, "model": true, "app_features": true, "app_variables": true, "misc_legacy": true,
}

var appVariableKeys = map[string]bool{"name": true, "type": true, "required": true, "default": true}

const forbidden = "Dify's Agent package schema forbids other keys, so Dify refuses this import; ignored here"

// agent derives a New Agent app.
func (p *parser) agent(root, appNode *yaml.Node) (*derived, error) {
	ag, agKey := get(root, "agent")
	if !isMap(ag) {
		return nil, p.fail(or(agKey, appNode), "app.mode agent needs `agent: {package_ref: …}` naming an entry of `agent_packages` (Dify's Agent App DSL, version %s)", agentModeVersion)
	}
	p.unknownKeys(ag, "agent", agentKeys, "ignored")
	refNode, refKey := get(ag, "package_ref")
	if !isStr(refNode) || refNode.Value == "" {
		return nil, p.fail(or(refKey, agKey), "agent.package_ref must name an entry of agent_packages")
	}
	ref := refNode.Value
	pkgs, pkgsKey := get(root, "agent_packages")
	if !isMap(pkgs) {
		return nil, p.fail(or(pkgsKey, refNode), "agent_packages is missing: agent.package_ref %s names nothing (Dify refuses the import)", strconv.Quote(keyName(ref)))
	}
	pkg, _ := get(pkgs, ref)
	if pkg == nil {
		return nil, p.fail(refNode, "agent.package_ref %s is not a key of agent_packages (Dify refuses the import)", strconv.Quote(keyName(ref)))
	}
	for i := 0; i+1 < len(pkgs.Content); i += 2 {
		if k := pkgs.Content[i]; k.Value != ref {
			p.warn(k, "agent_packages.%s is not the app's agent (agent.package_ref); ignored", keyName(k.Value))
		}
	}
	if mc, k := get(root, "model_config"); k != nil && truthy(mc) {
		p.warn(k, "model_config is not read for app.mode agent (the import starts from an empty model config); ignored")
	}
	if _, k := get(root, "workflow"); k != nil {
		p.warn(k, "workflow is not read for app.mode agent; ignored")
	}
	path := "agent_packages." + keyName(ref)
	if !isMap(pkg) {
		return nil, p.fail(pkg, "%s must be a mapping with metadata and soul", path)
	}
	p.unknownKeys(pkg, path, packageKeys, forbidden)
	if sv, k := get(pkg, "schema_version"); k != nil && !(sv.ShortTag() == "!!int" && sv.Value == "1") {
		return nil, p.fail(sv, "%s.schema_version must be 1, the Agent package version Dify reads (Dify refuses the import)", path)
	}
	d := &derived{toolIcons: newObj()}
	md, mdKey := get(pkg, "metadata")
	if !isMap(md) {
		return nil, p.fail(or(mdKey, pkg), "%s.metadata is missing (Dify's AgentPackage requires it, with a name)", path)
	}
	p.unknownKeys(md, path+".metadata", metadataKeys, forbidden)
	if n, _ := get(md, "name"); isStr(n) && n.Value != "" {
		d.fallbackName = n.Value
	} else {
		return nil, p.fail(md, "%s.metadata.name is missing (Dify's AgentPackage requires it)", path)
	}
	if desc, _ := get(md, "description"); isStr(desc) {
		d.fallbackDescription = desc.Value
	}
	soul, soulKey := get(pkg, "soul")
	if !isMap(soul) {
		return nil, p.fail(or(soulKey, pkg), "%s.soul is missing (Dify's AgentPackage requires the Agent Soul)", path)
	}
	p.unknownKeys(soul, path+".soul", soulKeys, forbidden)

	// merge_agent_app_features: the empty model config's features, then
	// the Soul's app_features dumped with exclude_none on top.
	d.features = modelConfigFeatures(nil)
	af, afKey := get(soul, "app_features")
	if afKey != nil && !isNull(af) && !isMap(af) {
		return nil, p.fail(af, "%s.soul.app_features must be a mapping", path)
	}
	dumped, err := p.dump(af, appFeaturesModel, path+".soul.app_features")
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(dumped.n.Content); i += 2 {
		d.features.set(dumped.n.Content[i].Value, dumped.n.Content[i+1])
	}
	d.form, err = p.appVariables(soul, path+".soul")
	if err != nil {
		return nil, err
	}
	return d, nil
}

// appVariables is agent_app_variables_to_user_input_form
// (api/core/app/apps/agent_app/app_variable_projection.py): each variable
// becomes {<control>: {label, variable, required[, default]}}, the label
// being the name and the control following the variable's type.
func (p *parser) appVariables(soul *yaml.Node, path string) (*yaml.Node, error) {
	form := seqNode()
	vars, k := get(soul, "app_variables")
	if isNull(vars) {
		return form, nil
	}
	if !isSeq(vars) {
		return nil, p.fail(or(k, vars), "%s.app_variables must be a list of {name, type, required, default}", path)
	}
	for i, v := range vars.Content {
		where := fmt.Sprintf("%s.app_variables[%d]", path, i)
		if !isMap(v) {
			return nil, p.fail(v, "%s must be a mapping with name and type", where)
		}
		p.unknownKeys(v, where, appVariableKeys, "not an app variable field; Dify ignores it")
		name, _ := get(v, "name")
		if !isStr(name) || name.Value == "" || len(name.Value) > 255 {
			return nil, p.fail(v, "%s.name must be a name of 1 to 255 characters (Dify refuses the import)", where)
		}
		typ, _ := get(v, "type")
		if !isStr(typ) || typ.Value == "" || len(typ.Value) > 64 {
			return nil, p.fail(v, "%s.type must be a type name of 1 to 64 characters (Dify refuses the import)", where)
		}
		required := false
		if r, rk := get(v, "required"); rk != nil && !isNull(r) {
			b, ok := laxBool(r)
			if !ok {
				return nil, p.fail(r, "%s.required must be a boolean", where)
			}
			required = b
		}
		item := newObj().
			set("label", strNode(name.Value)).
			set("variable", strNode(name.Value)).
			set("required", boolNode(required))
		if def, _ := get(v, "default"); !isNull(def) {
			item.set("default", def)
		}
		form.Content = append(form.Content, newObj().set(formType(typ.Value), item.n).n)
	}
	return form, nil
}

// formType is _form_type_for_agent_variable.
func formType(t string) string {
	switch strings.ToLower(strings.TrimSpace(t)) {
	case "number", "integer", "float":
		return "number"
	case "boolean", "bool":
		return "checkbox"
	case "paragraph", "long_text", "multiline":
		return "paragraph"
	}
	return "text-input"
}

// A model is a pydantic model of the Agent Soul's app_features: dumping a
// value through it is model_dump(mode="json", exclude_none=True) of what
// model_validate makes of the value. Declared fields come first, in
// declaration order, with their defaults; extra keys (the feature models
// allow them) follow in the file's order.
type model struct {
	fields []field
}

type fieldKind int

const (
	anyField fieldKind = iota
	boolField
	strField
	intField
	strListField
	modelField
)

type field struct {
	name string
	kind fieldKind
	sub  *model
	def  func() *yaml.Node // nil: the default is None (left out of the dump)
}

func toggleFields(enabledDefault bool) []field {
	return []field{{name: "enabled", kind: boolField, def: func() *yaml.Node { return boolNode(enabledDefault) }}}
}

func withFields(base []field, more ...field) *model {
	return &model{fields: append(append([]field(nil), base...), more...)}
}

// The feature models of api/models/agent_config_entities.py.
var (
	toggleModel = withFields(toggleFields(false))
	ttsModel    = withFields(toggleFields(false),
		field{name: "language", kind: strField}, field{name: "voice", kind: strField}, field{name: "autoPlay", kind: strField})
	sqaaModelModel = withFields(nil,
		field{name: "provider", kind: strField}, field{name: "name", kind: strField},
		field{name: "mode", kind: strField}, field{name: "completion_params", kind: anyField})
	sqaaModel = withFields(toggleFields(false),
		field{name: "prompt", kind: strField}, field{name: "model", kind: modelField, sub: sqaaModelModel})
	moderationIOModel = withFields(toggleFields(false), field{name: "preset_response", kind: strField})
	moderationConfig  = withFields(nil,
		field{name: "keywords", kind: strField}, field{name: "api_based_extension_id", kind: strField},
		field{name: "inputs_config", kind: modelField, sub: moderationIOModel},
		field{name: "outputs_config", kind: modelField, sub: moderationIOModel})
	swaModel = withFields(toggleFields(false),
		field{name: "type", kind: strField}, field{name: "config", kind: modelField, sub: moderationConfig})
	imageModel      = withFields(toggleFields(true))
	fileUploadModel = withFields(toggleFields(true),
		field{name: "allowed_file_extensions", kind: strListField, def: func() *yaml.Node {
			return strSeq("JPG", "JPEG", "PNG", "GIF", "WEBP", "SVG")
		}},
		field{name: "allowed_file_types", kind: strListField, def: func() *yaml.Node {
			return strSeq("document", "image", "audio", "video")
		}},
		field{name: "allowed_file_upload_methods", kind: strListField, def: func() *yaml.Node {
			return strSeq("local_file", "remote_url")
		}},
		field{name: "image", kind: modelField, sub: imageModel, def: func() *yaml.Node { return newObj().n }},
		field{name: "number_limits", kind: intField, def: func() *yaml.Node { return intNode(3) }})
	appFeaturesModel = withFields(nil,
		field{name: "opening_statement", kind: strField},
		field{name: "suggested_questions", kind: strListField},
		field{name: "suggested_questions_after_answer", kind: modelField, sub: sqaaModel},
		field{name: "speech_to_text", kind: modelField, sub: toggleModel},
		field{name: "text_to_speech", kind: modelField, sub: ttsModel},
		field{name: "retriever_resource", kind: modelField, sub: toggleModel},
		field{name: "sensitive_word_avoidance", kind: modelField, sub: swaModel},
		field{name: "file_upload", kind: modelField, sub: fileUploadModel, def: func() *yaml.Node { return newObj().n }})
)

// dump validates n (a mapping, or null for "all defaults") against m and
// returns its exclude_none dump.
func (p *parser) dump(n *yaml.Node, m *model, path string) (obj, error) {
	out := newObj()
	declared := map[string]bool{}
	for _, f := range m.fields {
		declared[f.name] = true
		v, k := get(n, f.name)
		if k == nil {
			if f.def == nil {
				continue
			}
			v = f.def()
		}
		if isNull(v) {
			continue // exclude_none
		}
		where := path + "." + f.name
		switch f.kind {
		case boolField:
			b, ok := laxBool(v)
			if !ok {
				return out, p.fail(v, "%s must be a boolean (Dify refuses the import)", where)
			}
			v = boolNode(b)
		case strField:
			if !isStr(v) {
				return out, p.fail(v, "%s must be a string (Dify refuses the import)", where)
			}
		case intField:
			i, ok := laxInt(v)
			if !ok {
				return out, p.fail(v, "%s must be a whole number (Dify refuses the import)", where)
			}
			v = intNode(i)
		case strListField:
			if err := p.stringList(v, k, where); err != nil {
				return out, err
			}
		case modelField:
			if !isMap(v) {
				return out, p.fail(v, "%s must be a mapping (Dify refuses the import)", where)
			}
			sub, err := p.dump(v, f.sub, where)
			if err != nil {
				return out, err
			}
			v = sub.n
		}
		out.set(f.name, v)
	}
	if isMap(n) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if declared[k.Value] || isNull(v) {
				continue
			}
			out.set(k.Value, dropNulls(v))
		}
	}
	return out, nil
}

// dropNulls is exclude_none on a free-form value: mapping entries whose
// value is None are left out, at any depth (list items are kept).
func dropNulls(n *yaml.Node) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		out := newObj()
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !isNull(n.Content[i+1]) {
				out.set(n.Content[i].Value, dropNulls(n.Content[i+1]))
			}
		}
		return out.n
	case yaml.SequenceNode:
		out := seqNode()
		for _, c := range n.Content {
			out.Content = append(out.Content, dropNulls(c))
		}
		return out
	}
	return n
}

// laxBool is a pydantic bool in lax mode: true/false, 0/1, and the strings
// pydantic accepts.
func laxBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode {
		return false, false
	}
	switch n.ShortTag() {
	case "!!bool":
		return n.Value == "true", true
	case "!!int":
		switch n.Value {
		case "0":
			return false, true
		case "1":
			return true, true
		}
	case "!!str":
		switch strings.ToLower(n.Value) {
		case "0", "off", "f", "false", "n", "no":
			return false, true
		case "1", "on", "t", "true", "y", "yes":
			return true, true
		}
	}
	return false, false
}

// laxInt is a pydantic int in lax mode: an integer, or a string of one.
func laxInt(n *yaml.Node) (int, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	switch n.ShortTag() {
	case "!!int", "!!str":
		i, err := strconv.Atoi(strings.TrimSpace(n.Value))
		return i, err == nil
	}
	return 0, false
}
