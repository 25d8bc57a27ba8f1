package dify

import (
	"encoding/json"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// How Dify converts the values of a turn's `inputs` for the app's form
// (BaseAppGenerator._validate_inputs in api/core/app/apps/base_app_generator.py),
// written once for the mock, which stores inputs as Dify does, and for the
// provider, which compares configured inputs with what Dify stored.

var (
	pyIntRE   = regexp.MustCompile(`^[+-]?[0-9](_?[0-9])*$`)
	pyFloatRE = regexp.MustCompile(`^[+-]?(([0-9](_?[0-9])*)?\.([0-9](_?[0-9])*)?)([eE][+-]?[0-9](_?[0-9])*)?$`)
)

// FormNumber is the `number` branch of _validate_inputs: numbers stay numbers
// (booleans too: Python's bool is an int), a blank string is null, and a
// string becomes float(value) when it contains "." and int(value) otherwise,
// with Python's literal rules (surrounding whitespace and digit underscores
// allowed; "1e5", "inf" and hexadecimal refused). The result is a json.Number
// spelled as Python's json would print it (5, 5.0, 1e+16). ok is false when
// Dify would answer "must be a valid number" (or fail otherwise: lists and
// objects, which Dify meets with a TypeError).
func FormNumber(v any) (any, bool) {
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
	return json.Number(PythonFloat(f)), true
}

// FormCheckbox is the `checkbox` branch of _validate_inputs: the usual
// spellings of yes and no, and 1 and 0, become booleans; anything else is
// kept as given.
func FormCheckbox(v any) any {
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

// PythonFloat is Python's float repr: shortest round-trip digits, scientific
// outside 1e-4 ≤ |f| < 1e16, and always a ".0" on integral values.
func PythonFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. 1e+20, 1.5e-05
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		digits := strings.TrimLeft(exp[1:], "0")
		if len(digits) < 2 {
			digits = strings.Repeat("0", 2-len(digits)) + digits
		}
		return mant + "e" + string(sign) + digits
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// Float is a number Dify keeps as a Python float (an sa.Float column, a
// float model field) and writes with Python's json, which is the float's
// repr: 0.0 and 2.0 keep their ".0", 1e-05 is scientific (PythonFloat).
// It decodes like a float64.
type Float float64

// MarshalJSON writes f as Python's json.dumps writes a float. NaN and the
// infinities are refused, as encoding/json refuses them (Python would
// write NaN, which is not JSON).
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(v, 'g', -1, 64)}
	}
	return []byte(PythonFloat(v)), nil
}
