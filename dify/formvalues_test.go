package dify

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

// TestPyNumberFollowsValidateInputs encodes the `number` branch of
// BaseAppGenerator._validate_inputs (api/core/app/apps/base_app_generator.py):
// numbers are kept (Python's json keeps 5 and 5.0 apart), a blank string is
// None, a string with "." is float(value), else int(value), with Python's
// literal rules; anything else is "must be a valid number".
func TestPyNumberFollowsValidateInputs(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string // JSON of the stored value; "" = refused
	}{
		{json.Number("5"), "5"},
		{json.Number("5.0"), "5.0"},
		{json.Number("1e5"), "100000.0"},
		{json.Number("-0"), "0"},
		{json.Number("12345678901234567890123"), "12345678901234567890123"},
		{true, "true"}, // bool is an int in Python
		{"42", "42"},
		{" 42\n", "42"},
		{"+7", "7"},
		{"007", "7"},
		{"1_000", "1000"},
		{"3.", "3.0"},
		{".5", "0.5"},
		{" 4.50 ", "4.5"},
		{"1.5e3", "1500.0"},
		{"2.5E-7", "2.5e-07"},
		{"1.0e16", "1e+16"},
		{"1_0.2_5", "10.25"},
		{"", "null"},
		{"   ", "null"},
		{"1e5", ""},  // no ".": int("1e5") fails
		{"inf", ""},  // int("inf") fails
		{"0x10", ""}, // int() is base 10
		{"1__0", ""},
		{"_1", ""},
		{"1.2.3", ""},
		{".", ""},
		{"1.0e400", ""}, // Python's inf; not writable as JSON
		{strings.Repeat("9", 4300), strings.Repeat("9", 4300)},
		{strings.Repeat("9", 4301), ""}, // int(): "Exceeds the limit (4300 digits)"
		{"abc", ""},
		{[]any{}, ""},
		{map[string]any{}, ""},
	} {
		got, ok := FormNumber(c.in)
		if c.want == "" {
			if ok {
				t.Errorf("FormNumber(%#v) = %v, want refused", c.in, got)
			}
			continue
		}
		b, err := json.Marshal(got)
		if !ok || err != nil || string(b) != c.want {
			t.Errorf("FormNumber(%#v) = %s (ok %v, err %v), want %s", c.in, b, ok, err, c.want)
		}
	}
}

// TestPyCheckboxFollowsValidateInputs encodes the `checkbox` branch of
// BaseAppGenerator._validate_inputs.
func TestPyCheckboxFollowsValidateInputs(t *testing.T) {
	for _, c := range []struct {
		in   any
		want any
	}{
		{" Yes ", true}, {"on", true}, {"1", true}, {"FALSE", false}, {"off", false},
		{json.Number("1"), true}, {json.Number("0.0"), false}, {json.Number("2"), json.Number("2")},
		{"maybe", "maybe"}, {true, true},
	} {
		if got := FormCheckbox(c.in); got != c.want {
			t.Errorf("FormCheckbox(%#v) = %#v, want %#v", c.in, got, c.want)
		}
	}
}

// FuzzPyNumber: any string either is refused or becomes JSON that reads back
// as the number Go parses from the same literal (underscores and
// surrounding whitespace removed), and never panics.
func FuzzPyNumber(f *testing.F) {
	for _, s := range []string{"42", " 4.50 ", "1_000", "1e5", ".", "-0.0", "1.0e400", "9" + strings.Repeat("9", 400), "", "\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := FormNumber(s)
		if !ok || v == nil {
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("FormNumber(%q) = %#v, not JSON: %v", s, v, err)
		}
		lit := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
		if !strings.Contains(s, ".") { // int(): exact, however long
			want, okInt := new(big.Int).SetString(lit, 10)
			if got, okGot := new(big.Int).SetString(string(b), 10); !okInt || !okGot || got.Cmp(want) != 0 {
				t.Fatalf("FormNumber(%q) = %s, want the integer %v", s, b, want)
			}
			return
		}
		var back float64
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("FormNumber(%q) wrote %s: %v", s, b, err)
		}
		want, err := strconv.ParseFloat(lit, 64)
		if err != nil || back != want {
			t.Fatalf("FormNumber(%q) = %s, Go reads %v (%v)", s, b, want, err)
		}
	})
}
