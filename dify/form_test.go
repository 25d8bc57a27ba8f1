package dify

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// parametersExample is the docs/api §14 shape with a text input, a select and the
// third-party `file` item quoted there, the newer file_upload keys and an
// unknown top-level key.
var parametersExample = []byte(`{
 "opening_statement": "Hi!",
 "suggested_questions": ["What can you do?"],
 "suggested_questions_after_answer": {"enabled": true},
 "speech_to_text": {"enabled": false},
 "text_to_speech": {"enabled": false, "voice": "alloy", "language": "en-US", "autoPlay": "disabled"},
 "retriever_resource": {"enabled": false},
 "annotation_reply": {"enabled": false},
 "more_like_this": {"enabled": false},
 "user_input_form": [
  {"text-input": {"label": "City", "variable": "city", "required": true, "max_length": 48, "default": ""}},
  {"select": {"label": "Units", "variable": "units", "required": false, "options": ["metric", "imperial"], "default": "metric"}},
  {"file":{"allowed_file_extensions":[],"allowed_file_types":["document"],"allowed_file_upload_methods":["local_file","remote_url"],"label":"Document to translate","max_length":5,"options":[],"required":true,"type":"file","variable":"text"}}
 ],
 "sensitive_word_avoidance": {"enabled": false, "type": "", "configs": []},
 "file_upload": {"image": {"enabled": true, "number_limits": 3, "detail": "high", "transfer_methods": ["remote_url", "local_file"]},
                 "enabled": true, "allowed_file_types": ["image", "document"], "allowed_file_extensions": [".PNG"],
                 "allowed_file_upload_methods": ["local_file"], "number_limits": 5},
 "system_parameters": {"image_file_size_limit": 10, "video_file_size_limit": 100, "audio_file_size_limit": 50, "file_size_limit": 15, "workflow_file_upload_limit": 10},
 "a_future_key": {"x": 1}
}`)

func TestAppParametersDecode(t *testing.T) {
	var p AppParameters
	if err := json.Unmarshal(parametersExample, &p); err != nil {
		t.Fatal(err)
	}
	if *p.OpeningStatement != "Hi!" || !p.SuggestedQuestionsAfterAnswer.Enabled || p.TextToSpeech.AutoPlay != "disabled" {
		t.Errorf("features = %+v", p)
	}
	max48, max5 := 48, 5
	want := []UserInputFormItem{
		{Control: ControlTextInput, Label: "City", Variable: "city", Required: true, MaxLength: &max48},
		{Control: ControlSelect, Label: "Units", Variable: "units", Options: []string{"metric", "imperial"}, Default: "metric"},
		{Control: ControlFile, Label: "Document to translate", Variable: "text", Required: true, MaxLength: &max5, Type: "file",
			Options: []string{}, AllowedFileExtensions: []string{}, AllowedFileTypes: []string{"document"},
			AllowedFileUploadMethods: []string{"local_file", "remote_url"}},
	}
	if !reflect.DeepEqual(p.UserInputForm, want) {
		t.Errorf("user_input_form =\n%+v\nwant\n%+v", p.UserInputForm, want)
	}
	fu := p.FileUpload
	if !fu.Image.Enabled || fu.Image.NumberLimits != 3 || !*fu.Enabled || *fu.NumberLimits != 5 ||
		!reflect.DeepEqual(fu.AllowedFileExtensions, []string{".PNG"}) || !fu.AnyEnabled() {
		t.Errorf("file_upload = %+v", fu)
	}
	if p.SystemParameters.WorkflowFileUploadLimit != 10 {
		t.Errorf("system_parameters = %+v", p.SystemParameters)
	}
}

func TestFileUploadSettingsLegacyShape(t *testing.T) {
	var fu FileUploadSettings
	if err := json.Unmarshal([]byte(`{"image":{"enabled":false,"number_limits":3,"detail":"high","transfer_methods":["remote_url","local_file"]}}`), &fu); err != nil {
		t.Fatal(err)
	}
	if fu.Image == nil || fu.Image.Enabled || fu.Enabled != nil || fu.NumberLimits != nil || fu.AnyEnabled() {
		t.Errorf("legacy shape = %+v", fu)
	}
	fu.Image.Enabled = true
	if !fu.AnyEnabled() {
		t.Error("legacy image switch not honoured")
	}
	// Re-encoding the legacy shape adds none of the newer keys.
	var keys map[string]any
	if err := json.Unmarshal(mustMarshal(t, fu), &keys); err != nil || len(keys) != 1 || keys["image"] == nil {
		t.Errorf("re-encoded legacy shape has keys %v", keys)
	}
}

func TestUserInputFormItemLenient(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     UserInputFormItem
	}{
		{"number default and string booleans", `{"number":{"label":"N","variable":"n","required":"true","default":5,"max_length":"10"}}`,
			UserInputFormItem{Control: ControlNumber, Label: "N", Variable: "n", Required: true, Default: "5", MaxLength: ptr(10)}},
		{"checkbox bool default", `{"checkbox":{"label":"C","variable":"c","default":true,"hide":1}}`,
			UserInputFormItem{Control: ControlCheckbox, Label: "C", Variable: "c", Default: "true", Hide: true}},
		{"flat item", `{"type":"paragraph","label":"P","variable":"p"}`,
			UserInputFormItem{Control: ControlParagraph, Type: "paragraph", Label: "P", Variable: "p"}},
		{"unknown control", `{"rich-text":{"label":"R","variable":"r"}}`,
			UserInputFormItem{Control: "rich-text", Label: "R", Variable: "r"}},
		{"several keys, known control wins", `{"zzz":{"a":1},"select":{"label":"S","variable":"s"},"note":"x"}`,
			UserInputFormItem{Control: ControlSelect, Label: "S", Variable: "s"}},
		{"null fields", `{"text-input":{"label":null,"variable":"v","options":null,"max_length":null}}`,
			UserInputFormItem{Control: ControlTextInput, Variable: "v"}},
		{"null item", `null`, UserInputFormItem{}},
		{"empty object", `{}`, UserInputFormItem{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got UserInputFormItem
			if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	var got UserInputFormItem
	if err := json.Unmarshal([]byte(`["not an object"]`), &got); err == nil {
		t.Error("an array item decoded without error")
	}
}

func TestUserInputFormItemRoundTrip(t *testing.T) {
	in := `{"select":{"label":"Units","variable":"units","required":true,"default":"metric","options":["metric","imperial"],"placeholder":"pick one","hint":{"x":1}}}`
	var item UserInputFormItem
	if err := json.Unmarshal([]byte(in), &item); err != nil {
		t.Fatal(err)
	}
	if string(item.Extra["placeholder"]) != `"pick one"` || len(item.Extra) != 2 {
		t.Errorf("extra = %v", item.Extra)
	}
	out, err := json.Marshal(item)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal([]byte(in), &a)
	_ = json.Unmarshal(out, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip changed the item:\n in %s\nout %s", in, out)
	}

	// Control falls back to Type; neither is an error.
	out, err = json.Marshal(UserInputFormItem{Type: "paragraph", Variable: "p"})
	if err != nil || !strings.HasPrefix(string(out), `{"paragraph":{`) {
		t.Errorf("fallback to Type: %s %v", out, err)
	}
	if _, err := json.Marshal(UserInputFormItem{Variable: "p"}); err == nil {
		t.Error("item without control marshalled")
	}
	// A pointer marshals the same way (value receiver).
	p := &item
	out2, _ := json.Marshal(p)
	if string(out2) != string(mustMarshal(t, item)) {
		t.Errorf("pointer marshal differs: %s", out2)
	}
}

func TestUsageLenientPrices(t *testing.T) {
	var u Usage
	if err := json.Unmarshal([]byte(`{"prompt_tokens":3,"prompt_price":0.0012890,"total_price":"0.5","currency":"USD","latency":1.5,"time_to_first_token":null}`), &u); err != nil {
		t.Fatal(err)
	}
	if u.PromptTokens != 3 || u.PromptPrice != "0.0012890" || u.TotalPrice != "0.5" || u.Latency != 1.5 || u.TimeToFirstToken != nil {
		t.Errorf("usage = %+v", u)
	}
	// Encoding stays the wire shape (prices as strings).
	b, _ := json.Marshal(u)
	if !strings.Contains(string(b), `"prompt_price":"0.0012890"`) {
		t.Errorf("marshal = %s", b)
	}
}

// Unknown fields never break decoding (docs/api §21).
func TestUnknownFieldsIgnored(t *testing.T) {
	for name, target := range map[string]any{
		`{"id":"c","brand_new":{"deep":[1,2]},"name":"n"}`:                                &Conversation{},
		`{"limit":1,"has_more":false,"data":[],"cursor":"x"}`:                             &ConversationPage{},
		`{"id":"f","name":"a.png","size":1,"created_at":1,"source_url":"s","shiny":true}`: &FileUploadResult{},
		`{"text":"hi","lang":"en"}`:                                                       &AudioText{},
		`{"tool_icons":{},"more":1}`:                                                      &AppMeta{},
	} {
		if err := json.Unmarshal([]byte(name), target); err != nil {
			t.Errorf("%T: %v", target, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
