package mockserver

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// prepareInputs is what Dify's BaseAppGenerator._prepare_user_inputs makes
// of a turn's `inputs` (api/core/app/apps/base_app_generator.py): one key per
// variable of the app's form and no other, holding the value given, else the
// form's default, else null (_validate_inputs), with `number` values made
// numbers and NUL bytes stripped from strings (_sanitize_value). The result
// is what Dify stores as the message's inputs and, on a conversation's first
// turn, as the conversation's. Errors carry Dify's texts; which values are
// rejected is documented in docs/mock/api-coverage.md (choice 7).
func (s *Server) prepareInputs(inputs map[string]any) (map[string]any, *apiError) {
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
				return nil, invalidParam(fmt.Sprintf("%s in input form must be one of the following: %s", f.Variable, pyList(f.Options)))
			}
		} else if f.MaxLength > 0 && len([]rune(str)) > f.MaxLength {
			return nil, invalidParam(fmt.Sprintf("%s in input form must be less than %d characters", f.Variable, f.MaxLength))
		}
		return str, nil
	case "number":
		n, ok := pyNumber(v)
		if !ok {
			return nil, invalidParam(f.Variable + " in input form must be a valid number")
		}
		return n, nil
	case "checkbox":
		return pyCheckbox(v), nil
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
		if n, ok := pyNumber(f.Default); ok {
			return n
		}
	case "checkbox":
		return pyCheckbox(f.Default)
	}
	return f.Default
}

var (
	pyIntRE   = regexp.MustCompile(`^[+-]?[0-9](_?[0-9])*$`)
	pyFloatRE = regexp.MustCompile(`^[+-]?(([0-9](_?[0-9])*)?\.([0-9](_?[0-9])*)?)([eE][+-]?[0-9](_?[0-9])*)?$`)
)

// pyNumber is the `number` branch of _validate_inputs: numbers stay numbers
// (booleans too: Python's bool is an int), a blank string is null, and a
// string becomes float(value) when it contains "." and int(value) otherwise,
// with Python's literal rules (surrounding whitespace and digit underscores
// allowed; "1e5", "inf" and hexadecimal refused). The result is a json.Number
// spelled as Python's json would print it (5, 5.0, 1e+16). ok is false when
// Dify would answer "must be a valid number" (or fail otherwise: lists and
// objects, which Dify meets with a TypeError).
func pyNumber(v any) (any, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case float64: // decoded without UseNumber
		return pyJSONNumber(json.Number(strconv.FormatFloat(x, 'g', -1, 64)))
	case json.Number:
		return pyJSONNumber(x)
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return nil, true
		}
		if strings.Contains(x, ".") {
			if !pyFloatRE.MatchString(s) || !strings.ContainsAny(strings.SplitN(strings.ToLower(s), "e", 2)[0], "0123456789") {
				return nil, false
			}
			return pyFloatNumber(strings.ReplaceAll(s, "_", ""))
		}
		if !pyIntRE.MatchString(s) {
			return nil, false
		}
		return pyInt(strings.ReplaceAll(s, "_", ""))
	}
	return nil, false
}

// pyJSONNumber is a JSON number as Python's json module reads it: an int
// without fraction or exponent, else a float.
func pyJSONNumber(n json.Number) (any, bool) {
	if strings.ContainsAny(string(n), ".eE") {
		return pyFloatNumber(string(n))
	}
	return pyInt(string(n))
}

// pyMaxIntDigits is Python's default int_max_str_digits: int() of a longer
// decimal string raises ValueError ("Exceeds the limit (4300 digits) ...").
const pyMaxIntDigits = 4300

func pyInt(s string) (any, bool) {
	if len(strings.TrimLeft(s, "+-")) > pyMaxIntDigits {
		return nil, false
	}
	i, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, false
	}
	return json.Number(i.String()), true
}

func pyFloatNumber(s string) (any, bool) {
	f, err := strconv.ParseFloat(strings.ToLower(s), 64)
	if err != nil || math.IsInf(f, 0) {
		// Python gives inf, which Dify's JSON encoder cannot write
		// as JSON either; the mock refuses it.
		return nil, false
	}
	return json.Number(pyFloat(f)), true // pydantic.go: Python's repr
}

// pyCheckbox is the `checkbox` branch of _validate_inputs: the usual
// spellings of yes and no, and 1 and 0, become booleans; anything else is
// kept as given.
func pyCheckbox(v any) any {
	switch x := v.(type) {
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "1", "yes", "on":
			return true
		case "false", "0", "no", "off":
			return false
		}
	case json.Number:
		if f, err := x.Float64(); err == nil && (f == 0 || f == 1) {
			return f == 1
		}
	case float64:
		if x == 0 || x == 1 {
			return x == 1
		}
	}
	return v
}
