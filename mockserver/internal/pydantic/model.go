package pydantic

import "strconv"

// A Model is a pydantic request model declared as a table of fields, in the
// order of the Python class: reviewing a route against Dify is comparing
// the two declarations. Validate reads a Dict (a body or the query string),
// collects every field's error in field order as pydantic does, and then
// runs the model validator.
type Model struct {
	Name   string
	Fields []Field
	// Check is the model's @model_validator(mode="after"): it runs when
	// every field validated and sees the values and the input.
	Check func(Values, *Dict) *Error
}

// Field is one field of a Model.
type Field struct {
	Name string
	// Rule converts and checks a present value.
	Rule Rule
	// Required fields that are absent fail with "Field required" (the
	// whole input as input_value); others take Default.
	Required bool
	Default  any
	// Optional is `T | None`: null is None (Default), not checked.
	Optional bool
	// EmptyIsAbsent treats "" as absent (query cursors: "" is no cursor).
	EmptyIsAbsent bool
}

// Rule converts a present field value as pydantic's lax mode does, or says
// why it does not validate (a list may fail at several items).
type Rule func(loc string, v any) (any, []Error)

// Values are a validated model's fields by name: the converted value of
// each present field, the Default of each absent one.
type Values map[string]any

// Str is a string field's value ("" when absent without a default).
func (v Values) Str(name string) string { s, _ := v[name].(string); return s }

// Int is an int field's value.
func (v Values) Int(name string) int { n, _ := v[name].(int); return n }

// Bool is a bool field's value.
func (v Values) Bool(name string) bool { b, _ := v[name].(bool); return b }

// Float is a float field's value.
func (v Values) Float(name string) float64 { f, _ := v[name].(float64); return f }

// Set reports whether the field holds a value other than None.
func (v Values) Set(name string) bool { return v[name] != nil }

// Validate is Model.model_validate(d): the values, or every error in field
// order (and then the model validator's, once the fields are valid).
func (m Model) Validate(d *Dict) (Values, []Error) {
	vals := Values{}
	var errs []Error
	for _, f := range m.Fields {
		raw, present := d.Vals[f.Name]
		if present && f.EmptyIsAbsent && raw == "" {
			present = false
		}
		switch {
		case !present && f.Required:
			errs = append(errs, Error{Loc: f.Name, Msg: "Field required", Type: "missing", Input: d})
		case !present, raw == nil && f.Optional:
			vals[f.Name] = f.Default
		default:
			v, e := f.Rule(f.Name, raw)
			if len(e) > 0 {
				errs = append(errs, e...)
				continue
			}
			vals[f.Name] = v
		}
	}
	if len(errs) == 0 && m.Check != nil {
		if e := m.Check(vals, d); e != nil {
			errs = append(errs, *e)
		}
	}
	return vals, errs
}

// The rules of the field types Dify's models use.
var (
	// StrRule is `str`.
	StrRule Rule = func(loc string, v any) (any, []Error) { return wrap(Str(loc, v)) }
	// BoolRule is `bool` (lax: "true", "1", 1, …).
	BoolRule Rule = func(loc string, v any) (any, []Error) { return wrap(Bool(loc, v)) }
	// FloatRule is `float` (lax).
	FloatRule Rule = func(loc string, v any) (any, []Error) { return wrap(Float(loc, v)) }
	// DictRule is `dict`: a JSON object, decoded with its numbers kept as
	// written (json.Number).
	DictRule Rule = func(loc string, v any) (any, []Error) {
		if _, ok := v.(map[string]any); !ok {
			return nil, []Error{{Loc: loc, Msg: "Input should be a valid dictionary", Type: "dict_type", Input: v}}
		}
		return v, nil
	}
	// ListOfDicts is `list[dict]`: a list error, or one error per item that
	// is not an object (loc "files.2").
	ListOfDicts Rule = func(loc string, v any) (any, []Error) {
		list, ok := v.([]any)
		if !ok {
			return nil, []Error{{Loc: loc, Msg: "Input should be a valid list", Type: "list_type", Input: v}}
		}
		var errs []Error
		for i, item := range list {
			if _, ok := item.(map[string]any); !ok {
				errs = append(errs, Error{Loc: loc + "." + strconv.Itoa(i), Msg: "Input should be a valid dictionary", Type: "dict_type", Input: item})
			}
		}
		return list, errs
	}
	// UUIDRule is `uuid.UUID`, with pydantic_core's parsing errors; the value
	// is the canonical lower-case form.
	UUIDRule Rule = func(loc string, v any) (any, []Error) {
		s, ok := v.(string)
		if !ok {
			return nil, []Error{{Loc: loc, Msg: "UUID input should be a string, bytes or UUID object", Type: "uuid_type", Input: v}}
		}
		return wrap(UUID(loc, s))
	}
	// UUIDStrOrEmpty is Dify's UUIDStrOrEmpty (api/libs/helper.py): "" or a
	// string uuid.UUID() accepts, canonicalised.
	UUIDStrOrEmpty Rule = func(loc string, v any) (any, []Error) {
		s, _ := v.(string)
		if s == "" {
			return "", nil
		}
		if id, ok := PythonUUID(s); ok {
			return id, nil
		}
		return nil, []Error{{Loc: loc, Msg: "Value error, must be a valid UUID", Type: "value_error", Input: v}}
	}
)

// IntRange is `int = Field(ge=ge, le=le)` read from a query string (le <= 0:
// no upper bound).
func IntRange(ge, le int) Rule {
	return func(loc string, v any) (any, []Error) {
		s, _ := v.(string)
		return wrap(IntQuery(loc, s, ge, le))
	}
}

// Literal is `Literal[options…]`.
func Literal(options ...string) Rule {
	return func(loc string, v any) (any, []Error) {
		if s, ok := v.(string); ok {
			for _, o := range options {
				if s == o {
					return s, nil
				}
			}
		}
		return nil, []Error{{Loc: loc, Msg: LiteralMessage(options...), Type: "literal_error", Input: v}}
	}
}

func wrap[T any](v T, e *Error) (any, []Error) {
	if e != nil {
		return nil, []Error{*e}
	}
	return v, nil
}
