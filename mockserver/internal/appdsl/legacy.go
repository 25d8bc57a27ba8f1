package appdsl

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// modelConfigKeys are the keys AppModelConfig.to_dict writes, which is what
// Dify's export puts under model_config (api/models/model.py).
var modelConfigKeys = map[string]bool{
	"opening_statement": true, "suggested_questions": true, "suggested_questions_after_answer": true,
	"speech_to_text": true, "text_to_speech": true, "retriever_resource": true, "annotation_reply": true,
	"more_like_this": true, "sensitive_word_avoidance": true, "external_data_tools": true, "model": true,
	"user_input_form": true, "dataset_query_variable": true, "pre_prompt": true, "agent_mode": true,
	"prompt_type": true, "chat_prompt_config": true, "completion_prompt_config": true, "dataset_configs": true,
	"file_upload": true,
}

// switchKeys are the model_config features that are JSON objects
// ({"enabled": …, …}) in /parameters.
var switchKeys = []string{
	"suggested_questions_after_answer", "speech_to_text", "text_to_speech", "retriever_resource",
	"more_like_this", "sensitive_word_avoidance", "file_upload",
}

// modelConfigFeatures is AppModelConfig.to_dict() (the keys /parameters
// reads) for the AppModelConfig that from_model_config_dict makes of mc:
// a feature is kept only when Python finds it truthy, else to_dict's
// default stands in. mc nil is the empty AppModelConfig a New Agent import
// creates. annotation_reply is not a model_config column at all: it comes
// from the app's annotation setting, which an import never creates.
func modelConfigFeatures(mc *yaml.Node) obj {
	kept := func(key string, def *yaml.Node) *yaml.Node {
		if v, _ := get(mc, key); truthy(v) {
			return v
		}
		return def
	}
	opening := nullNode()
	if v, k := get(mc, "opening_statement"); k != nil {
		opening = v
	}
	return newObj().
		set("opening_statement", opening).
		set("suggested_questions", kept("suggested_questions", seqNode())).
		set("suggested_questions_after_answer", kept("suggested_questions_after_answer", enabledObj(false))).
		set("speech_to_text", kept("speech_to_text", enabledObj(false))).
		set("text_to_speech", kept("text_to_speech", enabledObj(false))).
		set("retriever_resource", kept("retriever_resource", enabledObj(true))).
		set("annotation_reply", enabledObj(false)).
		set("more_like_this", kept("more_like_this", enabledObj(false))).
		set("sensitive_word_avoidance", kept("sensitive_word_avoidance", defaultSensitiveWordAvoidance())).
		set("file_upload", kept("file_upload", defaultFileUpload()))
}

// legacy derives a legacy Agent (agent-chat) app from model_config.
func (p *parser) legacy(root *yaml.Node) (*derived, error) {
	mc, mcKey := get(root, "model_config")
	if !truthy(mc) || !isMap(mc) {
		return nil, p.fail(or(mcKey, root), "app.mode agent-chat needs a model_config mapping (Dify refuses the import: \"Missing model_config for chat/agent-chat/completion app\")")
	}
	for _, k := range []string{"agent", "agent_packages", "workflow"} {
		if _, key := get(root, k); key != nil {
			p.warn(key, "%s is not read for app.mode agent-chat; ignored", k)
		}
	}
	p.unknownKeys(mc, "model_config", modelConfigKeys, "not an AppModelConfig field; Dify ignores it")
	if _, k := get(mc, "pre_prompt"); k == nil {
		p.warn(mc, "model_config has no pre_prompt: Dify's import reads model_config[\"pre_prompt\"] and fails without it")
	}
	for _, key := range switchKeys {
		if v, k := get(mc, key); truthy(v) && !isMap(v) {
			return nil, p.fail(k, "model_config.%s must be a mapping such as {enabled: true}", key)
		}
	}
	if v, k := get(mc, "suggested_questions"); truthy(v) {
		if err := p.stringList(v, k, "model_config.suggested_questions"); err != nil {
			return nil, err
		}
	}
	if v, k := get(mc, "annotation_reply"); isMap(v) {
		if on, _ := get(v, "enabled"); truthy(on) {
			p.warn(k, "model_config.annotation_reply is not imported by Dify (it is the app's annotation setting, not part of model_config): /parameters reports annotation_reply {\"enabled\": false} until annotation replies are enabled (POST /apps/annotation-reply/enable)")
		}
	}
	form := seqNode()
	if v, k := get(mc, "user_input_form"); truthy(v) {
		if err := p.checkForm(v, k); err != nil {
			return nil, err
		}
		form = v
	}
	return &derived{features: modelConfigFeatures(mc), form: form, toolIcons: p.legacyToolIcons(mc)}, nil
}

// legacyToolIcons is AppService.get_app_meta for an app with a model config
// (api/services/app_service.py): one entry per configured tool in the
// current tool format (four keys or more) of provider type builtin or api.
// Dify answers an icon URL on its console API for a builtin tool and the
// provider's stored icon for an api tool; neither exists for a mock, so
// every entry is the icon Dify itself falls back to when it cannot find a
// provider (docs/mock/dsl.md).
func (p *parser) legacyToolIcons(mc *yaml.Node) obj {
	icons := newObj()
	am, _ := get(mc, "agent_mode")
	tools, _ := get(am, "tools")
	if !isSeq(tools) {
		return icons
	}
	for _, t := range tools.Content {
		if !isMap(t) || len(t.Content)/2 < 4 {
			continue
		}
		ptype, _ := get(t, "provider_type")
		name, _ := get(t, "tool_name")
		switch pyStr(ptype) {
		case "builtin", "api":
			icons.set(pyStr(name), fallbackToolIcon())
		}
	}
	return icons
}

// fallbackToolIcon is get_app_meta's icon for a tool whose provider it
// cannot load.
func fallbackToolIcon() *yaml.Node {
	return newObj().set("background", strNode("#252525")).set("content", strNode("\U0001F601")).n
}

// stringList checks that v is a list of strings.
func (p *parser) stringList(v, key *yaml.Node, path string) error {
	if !isSeq(v) {
		return p.fail(or(key, v), "%s must be a list of strings", path)
	}
	for i, it := range v.Content {
		if !isStr(it) {
			return p.fail(it, "%s[%d] must be a string", path, i)
		}
	}
	return nil
}

// checkForm checks a legacy user_input_form the way the mock reads it
// (mockserver's parseForm): a list of single-key mappings, the key being the
// control type and the value a mapping with a variable name.
func (p *parser) checkForm(v, key *yaml.Node) error {
	if !isSeq(v) {
		return p.fail(or(key, v), "model_config.user_input_form must be a list of {<control type>: {variable: …, …}} items")
	}
	for i, it := range v.Content {
		where := fmt.Sprintf("model_config.user_input_form[%d]", i)
		if !isMap(it) || len(it.Content) == 0 {
			return p.fail(it, "%s must be a mapping such as {text-input: {variable: city, label: City}}", where)
		}
		for j := 0; j+1 < len(it.Content); j += 2 {
			control, body := it.Content[j], it.Content[j+1]
			if !isMap(body) {
				return p.fail(body, "%s.%s must be a mapping with the variable's settings", where, keyName(control.Value))
			}
			if name, _ := get(body, "variable"); !isStr(name) || name.Value == "" {
				return p.fail(body, "%s.%s has no variable name", where, keyName(control.Value))
			}
		}
	}
	return nil
}
