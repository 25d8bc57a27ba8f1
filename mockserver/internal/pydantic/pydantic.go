// Package pydantic is how dify-mock reads a request the way Dify's pydantic
// 2 models do. Dify's Service API validates request bodies and query strings
// with pydantic models (e.g. ChatRequestPayload in
// api/controllers/service_api/app/completion.py) and lets the
// ValidationError reach libs/external_api.py, which answers 400
// invalid_param with message = str(ValidationError).
//
// The package holds the rules (lax-mode field types, Python's repr and
// truthiness, the error text of pydantic_core's ValidationError.__str__)
// and Model, a request model declared as a table of fields, so that a
// route's model reads like its Python declaration and one Validate collects
// the errors in field order as pydantic does.
package pydantic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/difyops/terraform-provider-dify/dify"
)

// Version is the pydantic minor version of the Dify release the
// mock follows (api/pyproject.toml pins pydantic~=2.12); it appears in the
// documentation URL of every error.
const Version = "2.12"

// Error is one pydantic line error.
type Error struct {
	Loc   string // dotted location; "" for a model-level error
	Msg   string // rendered message, e.g. "Input should be a valid string"
	Type  string // error type, e.g. "string_type"
	Input any    // the offending input, as decoded from JSON (UseNumber)
}

// Message renders str(ValidationError) for model.
func Message(model string, errs ...Error) string {
	var b strings.Builder
	if len(errs) == 1 {
		fmt.Fprintf(&b, "1 validation error for %s", model)
	} else {
		fmt.Fprintf(&b, "%d validation errors for %s", len(errs), model)
	}
	for _, e := range errs {
		b.WriteByte('\n')
		if e.Loc != "" {
			b.WriteString(e.Loc + "\n")
		}
		fmt.Fprintf(&b, "  %s [type=%s, input_value=%s, input_type=%s]", e.Msg, e.Type, truncateRepr(Repr(e.Input)), TypeName(e.Input))
		fmt.Fprintf(&b, "\n    For further information visit https://errors.pydantic.dev/%s/v/%s", Version, e.Type)
	}
	return b.String()
}

// truncateRepr shortens long reprs as pydantic_core does: the first 25 and
// last 24 characters around "...".
func truncateRepr(s string) string {
	r := []rune(s)
	if len(r) <= 50 {
		return s
	}
	return string(r[:25]) + "..." + string(r[len(r)-24:])
}

// Decode decodes raw JSON keeping number literals, so ints and
// floats stay apart as in Python's json module.
func Decode(raw json.RawMessage) any {
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
		// A string (most fields): no decoder and its read buffer, since
		// UseNumber does not change how a string decodes.
		var s string
		if json.Unmarshal(t, &s) != nil {
			return nil
		}
		return s
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	return v
}

// Dict is the dict pydantic saw: a request body or request.args.to_dict(),
// keys in request order (Python dicts keep insertion order).
type Dict struct {
	Keys []string
	Vals map[string]any
}

// Body rebuilds a JSON object body as a Dict.
func Body(data []byte) *Dict {
	d := &Dict{Vals: map[string]any{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return d
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return d
		}
		k, _ := t.(string)
		// Each value straight from this decoder (UseNumber, as Decode):
		// a decoder per field was a quarter of a chat request's garbage.
		var v any
		if err := dec.Decode(&v); err != nil {
			return d
		}
		if _, dup := d.Vals[k]; !dup {
			d.Keys = append(d.Keys, k)
		}
		d.Vals[k] = v
	}
	return d
}

func TypeName(v any) string {
	switch t := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case string:
		return "str"
	case json.Number:
		if IsInt(t) {
			return "int"
		}
		return "float"
	case float64:
		return "float"
	case int, int64:
		return "int"
	case []any:
		return "list"
	case map[string]any, *Dict:
		return "dict"
	}
	return "object"
}

func IsInt(n json.Number) bool { return !strings.ContainsAny(string(n), ".eE") }

// Repr renders a decoded JSON value as Python's repr() does.
func Repr(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case bool:
		if t {
			return "True"
		}
		return "False"
	case string:
		return StrRepr(t)
	case json.Number:
		if IsInt(t) {
			return string(t)
		}
		f, err := t.Float64()
		if err != nil {
			return string(t)
		}
		return dify.PythonFloat(f)
	case float64:
		return dify.PythonFloat(t)
	case int:
		return strconv.Itoa(t)
	case []any:
		parts := make([]string, len(t))
		for i, x := range t {
			parts[i] = Repr(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *Dict:
		parts := make([]string, len(t.Keys))
		for i, k := range t.Keys {
			parts[i] = StrRepr(k) + ": " + Repr(t.Vals[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case map[string]any:
		// Only reached for nested objects decoded without order; sorted
		// keys keep the output stable.
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = StrRepr(k) + ": " + Repr(t[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// StrRepr is Python's str repr: single quotes unless the text holds a single
// quote and no double quote; backslash escapes for the quote, backslash,
// \t \n \r and other non-printable characters.
func StrRepr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0x7f && !unicode.IsPrint(r):
			switch {
			case r <= 0xff:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// Pydantic field checks. Each returns the field's value and a *Error when
// the input does not validate; absent fields are the caller's business.

// Str validates a `str` field (strict about type: numbers are not
// strings in pydantic 2).
func Str(loc string, v any) (string, *Error) {
	s, ok := v.(string)
	if !ok {
		return "", &Error{Loc: loc, Msg: "Input should be a valid string", Type: "string_type", Input: v}
	}
	return s, nil
}

// Bool validates a `bool` field in lax mode: true/false, the ints 0
// and 1, and the strings 0/1, f/t, n/y, no/yes, off/on, false/true in any
// case (pydantic_core str_to_bool).
func Bool(loc string, v any) (bool, *Error) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case json.Number:
		if IsInt(t) {
			switch string(t) {
			case "0":
				return false, nil
			case "1":
				return true, nil
			}
		} else if f, err := t.Float64(); err == nil && (f == 0 || f == 1) {
			return f == 1, nil
		}
		return false, &Error{Loc: loc, Msg: "Input should be a valid boolean, unable to interpret input", Type: "bool_parsing", Input: v}
	case string:
		switch strings.ToLower(t) {
		case "0", "off", "f", "false", "n", "no":
			return false, nil
		case "1", "on", "t", "true", "y", "yes":
			return true, nil
		}
		return false, &Error{Loc: loc, Msg: "Input should be a valid boolean, unable to interpret input", Type: "bool_parsing", Input: v}
	}
	return false, &Error{Loc: loc, Msg: "Input should be a valid boolean", Type: "bool_type", Input: v}
}

// IntQuery validates an `int` field read from a query string (always a
// str input) with ge/le bounds; le <= 0 means no upper bound.
func IntQuery(loc, raw string, ge, le int) (int, *Error) {
	t := strings.TrimSpace(raw)
	m := intLiteral.FindStringSubmatch(t)
	if m == nil {
		if f, err := strconv.ParseFloat(t, 64); err == nil && f != math.Trunc(f) && !strings.ContainsAny(t, "eEnN") {
			return 0, &Error{Loc: loc, Msg: "Input should be a valid integer, got a number with a fractional part", Type: "int_from_float", Input: raw}
		}
		return 0, &Error{Loc: loc, Msg: "Input should be a valid integer, unable to parse string as an integer", Type: "int_parsing", Input: raw}
	}
	// Python ints are unbounded: a huge number is a bounds error, not a
	// parsing error.
	digits := strings.TrimLeft(strings.ReplaceAll(m[2], "_", ""), "0")
	n, err := strconv.Atoi(digits)
	if digits == "" {
		n, err = 0, nil
	}
	if err != nil || len(digits) > 15 {
		if le <= 0 && m[1] != "-" {
			return math.MaxInt32, nil // unbounded above; any huge page is past the end
		}
		if m[1] == "-" {
			return 0, &Error{Loc: loc, Msg: fmt.Sprintf("Input should be greater than or equal to %d", ge), Type: "greater_than_equal", Input: raw}
		}
		return 0, &Error{Loc: loc, Msg: fmt.Sprintf("Input should be less than or equal to %d", le), Type: "less_than_equal", Input: raw}
	}
	if m[1] == "-" {
		n = -n
	}
	if n < ge {
		return 0, &Error{Loc: loc, Msg: fmt.Sprintf("Input should be greater than or equal to %d", ge), Type: "greater_than_equal", Input: raw}
	}
	if le > 0 && n > le {
		return 0, &Error{Loc: loc, Msg: fmt.Sprintf("Input should be less than or equal to %d", le), Type: "less_than_equal", Input: raw}
	}
	return n, nil
}

// intLiteral is what pydantic_core accepts as an int in a string: an
// optional sign, digits (underscores between them allowed) and an optional
// fractional part of zeros ("20.0").
var intLiteral = regexp.MustCompile(`^([+-]?)([0-9](?:_?[0-9])*)(?:\.0*)?$`)

// LiteralMessage is a Literal[...] error message: "Input should be 'a', 'b' or 'c'".
func LiteralMessage(options ...string) string {
	q := make([]string, len(options))
	for i, o := range options {
		q[i] = "'" + o + "'"
	}
	if len(q) == 1 {
		return "Input should be " + q[0]
	}
	return "Input should be " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// PythonUUID parses a UUID the way Python's uuid.UUID(str) does (used by
// api/libs/helper.py uuid_value): "urn:" and "uuid:" prefixes and braces
// removed, hyphens anywhere ignored, then 32 hex digits. It returns the
// canonical lower-case form.
func PythonUUID(s string) (string, bool) {
	h := strings.ReplaceAll(s, "urn:", "")
	h = strings.ReplaceAll(h, "uuid:", "")
	h = strings.Trim(h, "{}")
	h = strings.ReplaceAll(h, "-", "")
	if len(h) != 32 {
		return "", false
	}
	for i := 0; i < 32; i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", false
		}
	}
	h = strings.ToLower(h)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}

// UUID parses a `uuid.UUID` field from a string as pydantic_core
// does (the Rust uuid crate's formats: simple, hyphenated, braced, urn),
// with that crate's error text.
func UUID(loc, s string) (string, *Error) {
	bad := func(detail string) *Error {
		return &Error{Loc: loc, Msg: "Input should be a valid UUID, " + detail, Type: "uuid_parsing", Input: s}
	}
	body := s
	switch len(s) {
	case 32, 36:
	case 38:
		if s[0] != '{' || s[37] != '}' {
			return "", bad(uuidCharError(s))
		}
		body = s[1:37]
	case 45:
		if !strings.HasPrefix(s, "urn:uuid:") {
			return "", bad(uuidCharError(s))
		}
		body = s[9:]
	default:
		return "", bad(fmt.Sprintf("invalid length: expected length 32 for simple format, found %d", len(s)))
	}
	if len(body) == 36 && (body[8] != '-' || body[13] != '-' || body[18] != '-' || body[23] != '-') {
		return "", bad(uuidCharError(s))
	}
	id, ok := PythonUUID(body)
	if !ok || (len(body) == 32 && strings.Contains(body, "-")) {
		return "", bad(uuidCharError(s))
	}
	return id, nil
}

// uuidCharError is the uuid crate's text for the first character that
// cannot be part of a UUID.
func uuidCharError(s string) string {
	for i, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '-' || r == '{' || r == '}') {
			return fmt.Sprintf("invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `%c` at %d", r, i+1)
		}
	}
	return "invalid group count: expected 5, found 1"
}
