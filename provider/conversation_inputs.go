package provider

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

// Dify does not store a turn's `inputs` as sent: BaseAppGenerator.
// _prepare_user_inputs (api/core/app/apps/base_app_generator.py) keeps one key
// per variable of the app's form and no other, holding the value given, else
// the form's default, else null, with `number` values made numbers and
// `checkbox` values booleans. So what a conversation's first message reads
// back never equals an unset or partial `inputs` argument. The provider
// compares configured inputs with what Dify stored through the same rules.

// storedInputs is what Dify stores for configured inputs (the string values
// of dify_conversation.inputs) on an app with form, each value in its
// canonical text (inputText). Empty and null values are left out: neither
// reaches a model, and an optional variable left unset reads back as "" or
// null depending on how the form's default was saved.
func storedInputs(form []dify.UserInputFormItem, cfg map[string]string) map[string]string {
	out := map[string]string{}
	for _, f := range form {
		if f.Variable == "" {
			continue
		}
		v, given := cfg[f.Variable]
		var stored any
		switch {
		case given:
			stored = formValue(f, v)
		case f.Default != "":
			stored = formValue(f, f.Default)
		}
		if s, ok := inputText(stored); ok && s != "" {
			out[f.Variable] = s
		}
	}
	return out
}

// formValue is _validate_inputs for a string value.
func formValue(f dify.UserInputFormItem, v string) any {
	switch f.Control {
	case "number":
		if n, ok := dify.FormNumber(v); ok {
			return n
		}
	case "checkbox":
		return dify.FormCheckbox(v)
	}
	return strings.ReplaceAll(v, "\x00", "")
}

// inputText writes a stored input value the way the configuration spells
// it: strings as they are, numbers in their shortest decimal form ("3" for
// 3.0), booleans as "true"/"false", anything else as JSON. ok is false for
// null.
func inputText(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64), true
		}
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// inputsFromHistory turns the first message's stored inputs (docs/api §6)
// back into the dify_conversation.inputs a configuration would write to get
// them: with the app's form known, variables that hold what leaving them
// out stores (the form's default, "", null) are left out, so an import of
// a conversation created without inputs reads back as null, like the unset
// argument. Without a form (it could not be read) only nulls are left out.
// Strings come back as sent; numbers and booleans, which the form may have
// converted, in their canonical spelling.
func inputsFromHistory(in map[string]any, form []dify.UserInputFormItem) types.Map {
	byVar := map[string]dify.UserInputFormItem{}
	for _, f := range form {
		byVar[f.Variable] = f
	}
	unset := storedInputs(form, nil)
	vals := map[string]attr.Value{}
	for k, v := range in {
		s, ok := inputText(v)
		if !ok {
			continue
		}
		if f, inForm := byVar[k]; inForm && !f.Required && s == unset[k] {
			continue
		}
		vals[k] = types.StringValue(s)
	}
	if len(vals) == 0 {
		return types.MapNull(types.StringType)
	}
	return types.MapValueMust(types.StringType, vals)
}

// inputsDifference compares configured inputs with those in state (what a
// conversation was created with, or read back on import) by what Dify stores
// for each. It returns "" when they store the same, else one line per
// variable that differs.
func inputsDifference(form []dify.UserInputFormItem, cfg, state map[string]string) string {
	a, b := storedInputs(form, cfg), storedInputs(form, state)
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var lines []string
	for k := range keys {
		if a[k] == b[k] {
			continue
		}
		lines = append(lines, fmt.Sprintf("  inputs.%s: configured %s, Dify stored %s", k, quoteOrUnset(a, k), quoteOrUnset(b, k)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func quoteOrUnset(m map[string]string, k string) string {
	if v, ok := m[k]; ok {
		return strconv.Quote(v)
	}
	return "no value"
}

// notInForm lists configured variables the app's form does not have (Dify
// drops them).
func notInForm(form []dify.UserInputFormItem, cfg map[string]string) []string {
	known := map[string]bool{}
	for _, f := range form {
		known[f.Variable] = true
	}
	var out []string
	for k := range cfg {
		if !known[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
