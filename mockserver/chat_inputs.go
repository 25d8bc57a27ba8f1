package mockserver

import (
	"fmt"
	"strings"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
)

// prepareInputs is what Dify's BaseAppGenerator._prepare_user_inputs makes
// of a turn's `inputs` (api/core/app/apps/base_app_generator.py): one key per
// variable of the app's form and no other, holding the value given, else the
// form's default, else null (_validate_inputs), with `number` values made
// numbers and NUL bytes stripped from strings (_sanitize_value). The result
// is what Dify stores as the message's inputs and, on a conversation's first
// turn, as the conversation's. Errors carry Dify's texts; which values are
// rejected is documented in docs/mock/api-coverage.md (choice 7).
func (s *appServer) prepareInputs(inputs map[string]any) (map[string]any, *apiError) {
	out := make(map[string]any, len(s.form))
	for _, f := range s.form {
		v, e := f.prepareValue(inputs[f.Variable])
		if e != nil {
			return nil, e
		}
		if str, ok := v.(string); ok {
			v = strings.ReplaceAll(str, "\x00", "")
		}
		out[f.Variable] = v
	}
	return out, nil
}

// prepareValue is _validate_inputs for one form variable. v is as decoded
// with json.Number (so 5 and 5.0 stay apart, as Python's json keeps them).
func (f formField) prepareValue(v any) (any, *apiError) {
	// The mock keeps treating "" like a missing value for a required
	// variable (older releases' `not value` test); the newest tree tests
	// `value is None` only.
	if (v == nil || v == "") && f.Required {
		return nil, invalidParam(f.Variable + " is required in input form")
	}
	if v == nil {
		// Newest tree: an omitted or null value takes the form's default,
		// converted like a given value; without a default it stays null.
		if f.Default == nil {
			return nil, nil
		}
		return f.defaultValue(), nil
	}
	switch f.Control {
	case "text-input", "paragraph", "select":
		str, ok := v.(string)
		if !ok {
			return nil, invalidParam(f.Variable + " in input form must be a string")
		}
		if str == "" { // optional and empty: stored as sent
			return str, nil
		}
		if f.Control == "select" {
			found := false
			for _, o := range f.Options {
				found = found || o == str
			}
			if !found {
				return nil, invalidParam(fmt.Sprintf("%s in input form must be one of the following: %s", f.Variable, pydantic.List(f.Options)))
			}
		} else if f.MaxLength > 0 && len([]rune(str)) > f.MaxLength {
			return nil, invalidParam(fmt.Sprintf("%s in input form must be less than %d characters", f.Variable, f.MaxLength))
		}
		return str, nil
	case "number":
		n, ok := dify.FormNumber(v)
		if !ok {
			return nil, invalidParam(f.Variable + " in input form must be a valid number")
		}
		return n, nil
	case "checkbox":
		return dify.FormCheckbox(v), nil
	}
	return v, nil
}

// defaultValue is the form's default as _validate_inputs stores it. The
// default is converted (a numeric string default of a `number` variable
// becomes a number) but not checked against the options or max_length: the
// newest tree would refuse every turn of an app whose select default is not
// one of its options ("" is common), older releases stored null there, so
// the mock accepts and keeps the default.
func (f formField) defaultValue() any {
	switch f.Control {
	case "number":
		if n, ok := dify.FormNumber(f.Default); ok {
			return n
		}
	case "checkbox":
		return dify.FormCheckbox(f.Default)
	}
	return f.Default
}
