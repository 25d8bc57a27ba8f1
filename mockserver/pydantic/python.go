package pydantic

import (
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// Float validates a `float` field in pydantic's lax mode: a JSON number, a
// bool (as 1.0/0.0), or a string that parses as a float (surrounding
// whitespace, inf and nan allowed).
func Float(loc string, v any) (float64, *Error) {
	switch t := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err == nil || errors.Is(err, strconv.ErrRange) {
			return f, nil // Python floats overflow to inf
		}
	case bool:
		if t {
			return 1, nil
		}
		return 0, nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(t), 64); err == nil {
			return f, nil
		}
		return 0, &Error{Loc: loc, Msg: "Input should be a valid number, unable to parse string as a number", Type: "float_parsing", Input: v}
	}
	return 0, &Error{Loc: loc, Msg: "Input should be a valid number", Type: "float_type", Input: v}
}

// Falsy is Python truthiness for a decoded JSON value: None, False, "", 0,
// [] and {} are false.
func Falsy(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case string:
		return t == ""
	case json.Number:
		f, err := t.Float64()
		return err == nil && f == 0
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

// List renders strings the way Python prints a list of them (each in
// single quotes; the form's options hold no quote).
func List(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "'" + s + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Query is request.args.to_dict() of a raw query string: each parameter's
// first value, in the order the query string names them.
func Query(rawQuery string) *Dict {
	d := &Dict{Vals: map[string]any{}}
	for _, pair := range strings.Split(rawQuery, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			continue
		}
		if _, dup := d.Vals[k]; dup {
			continue
		}
		d.Keys = append(d.Keys, k)
		d.Vals[k] = v
	}
	return d
}
