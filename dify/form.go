package dify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// knownControls orders the control types for the rare item whose object has
// several keys; the first known one wins.
var knownControls = []string{
	ControlTextInput, ControlParagraph, ControlSelect, ControlNumber, ControlFile,
	ControlFileList, ControlExternalData, ControlCheckbox, ControlJSONObject,
}

// formItemKeys are the item fields UserInputFormItem models; everything else
// is kept in Extra.
var formItemKeys = map[string]bool{
	"label": true, "variable": true, "required": true, "default": true, "max_length": true,
	"options": true, "type": true, "hide": true, "description": true, "allowed_file_types": true,
	"allowed_file_extensions": true, "allowed_file_upload_methods": true,
}

// UnmarshalJSON reads the wire shape {"<control type>": {...}} (docs/api §14).
// It is deliberately lenient so one odd item never breaks /parameters: a
// flat item carrying its control in "type" is accepted, a `default` that is
// a number or boolean becomes its JSON text, booleans and max_length also
// accept strings, and fields this package does not model land in Extra.
func (it *UserInputFormItem) UnmarshalJSON(b []byte) error {
	*it = UserInputFormItem{}
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(b, &outer); err != nil {
		return fmt.Errorf("dify: user_input_form item: %w", err)
	}
	fields := outer
	if _, flat := outer["variable"]; flat {
		it.Control = rawText(outer["type"])
	} else if control := pickControl(outer); control != "" {
		it.Control = control
		fields = nil
		if err := json.Unmarshal(outer[control], &fields); err != nil {
			return fmt.Errorf("dify: user_input_form item %q: %w", control, err)
		}
	}
	it.Label = rawText(fields["label"])
	it.Variable = rawText(fields["variable"])
	it.Required = flexBool(fields["required"])
	it.Default = rawText(fields["default"])
	it.MaxLength = flexInt(fields["max_length"])
	it.Options = flexStrings(fields["options"])
	it.Type = rawText(fields["type"])
	it.Hide = flexBool(fields["hide"])
	it.Description = rawText(fields["description"])
	it.AllowedFileTypes = flexStrings(fields["allowed_file_types"])
	it.AllowedFileExtensions = flexStrings(fields["allowed_file_extensions"])
	it.AllowedFileUploadMethods = flexStrings(fields["allowed_file_upload_methods"])
	for k, v := range fields {
		if !formItemKeys[k] {
			if it.Extra == nil {
				it.Extra = map[string]json.RawMessage{}
			}
			it.Extra[k] = v
		}
	}
	return nil
}

// pickControl returns the key of the item's control object.
func pickControl(outer map[string]json.RawMessage) string {
	var objects []string
	for k, v := range outer {
		if v = bytes.TrimSpace(v); len(v) > 0 && v[0] == '{' {
			objects = append(objects, k)
		}
	}
	if len(objects) == 1 {
		return objects[0]
	}
	for _, c := range knownControls {
		if slices.Contains(objects, c) {
			return c
		}
	}
	if len(objects) > 0 {
		return slices.Min(objects)
	}
	return ""
}

// MarshalJSON writes the wire shape {"<Control>": {...}} (docs/api §14), with
// Extra merged into the inner object. Control falls back to Type.
func (it UserInputFormItem) MarshalJSON() ([]byte, error) {
	control := it.Control
	if control == "" {
		control = it.Type
	}
	if control == "" {
		return nil, errors.New("dify: UserInputFormItem has neither Control nor Type")
	}
	type plain UserInputFormItem // without methods, so this does not recurse
	inner, err := json.Marshal(plain(it))
	if err != nil {
		return nil, err
	}
	if len(it.Extra) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(inner, &m); err != nil {
			return nil, err
		}
		for k, v := range it.Extra {
			if _, modelled := m[k]; !modelled && !formItemKeys[k] {
				m[k] = v
			}
		}
		if inner, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	return json.Marshal(map[string]json.RawMessage{control: inner})
}

func flexBool(raw json.RawMessage) bool {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b
	}
	s := strings.ToLower(rawText(raw))
	if v, err := strconv.ParseBool(s); err == nil {
		return v
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && f != 0
}

func flexInt(raw json.RawMessage) *int {
	s := rawText(raw)
	if s == "" {
		return nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= -1<<31 && f <= 1<<31-1 {
		n := int(f)
		return &n
	}
	return nil
}

func flexStrings(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return []string{rawText(raw)}
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		out = append(out, rawText(item))
	}
	return out
}

// UnmarshalJSON accepts prices as numbers as well as the decimal strings
// Dify sends (docs/api §1.5), so a server or proxy that re-encodes them cannot
// make a whole message_end undecodable.
func (u *Usage) UnmarshalJSON(b []byte) error {
	type plain Usage
	var w struct {
		plain
		PromptUnitPrice     json.RawMessage `json:"prompt_unit_price"`
		PromptPriceUnit     json.RawMessage `json:"prompt_price_unit"`
		PromptPrice         json.RawMessage `json:"prompt_price"`
		CompletionUnitPrice json.RawMessage `json:"completion_unit_price"`
		CompletionPriceUnit json.RawMessage `json:"completion_price_unit"`
		CompletionPrice     json.RawMessage `json:"completion_price"`
		TotalPrice          json.RawMessage `json:"total_price"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*u = Usage(w.plain)
	u.PromptUnitPrice = rawText(w.PromptUnitPrice)
	u.PromptPriceUnit = rawText(w.PromptPriceUnit)
	u.PromptPrice = rawText(w.PromptPrice)
	u.CompletionUnitPrice = rawText(w.CompletionUnitPrice)
	u.CompletionPriceUnit = rawText(w.CompletionPriceUnit)
	u.CompletionPrice = rawText(w.CompletionPrice)
	u.TotalPrice = rawText(w.TotalPrice)
	return nil
}

// AnyEnabled reports whether the app accepts files in chat at all, in
// either shape of file_upload (docs/api §14): the newer top-level switch or the
// legacy image switch.
func (s FileUploadSettings) AnyEnabled() bool {
	if s.Enabled != nil && *s.Enabled {
		return true
	}
	return s.Image != nil && s.Image.Enabled
}
