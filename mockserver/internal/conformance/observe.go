package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Observed is what a client could see of one answer. It holds no key and no
// request headers, so it can be printed or written to a report as is.
type Observed struct {
	Case   string `json:"case"`
	Route  string `json:"route"`
	Class  string `json:"class"`
	Status int    `json:"status,omitempty"`
	// ContentType is the media type without parameters.
	ContentType string `json:"content_type,omitempty"`
	// Envelope is set when the body is Dify's error envelope
	// ({"code","message","status"}).
	Envelope *Envelope `json:"envelope,omitempty"`
	// Shape is the JSON body's shape (nil when the body is not JSON).
	Shape Shape `json:"shape,omitempty"`
	// Values holds, for the paths the case's Expect.Values names, the
	// values found there (ValuesAt).
	Values map[string]string `json:"values,omitempty"`
	// Formats holds, for the paths the case's Expect.Formats names, the
	// format classes of the values found there (FormatsAt): how a value
	// is written, never the value.
	Formats map[string]string `json:"formats,omitempty"`
	// Location is the redirect target (3xx): its path and query when it
	// stays on the server asked, the whole URL when it leads elsewhere.
	Location string `json:"location,omitempty"`
	// Events are the SSE event names in order, pings left out.
	Events []string `json:"events,omitempty"`
	// Body is the start of the raw body (at most 2 KiB), for reports.
	Body string `json:"body,omitempty"`
	// Skipped says why the case did not run (a requirement not met, a
	// fixture that could not be made, the chat-turn cap).
	Skipped string `json:"skipped,omitempty"`
	// Err is a transport failure (no answer at all).
	Err string `json:"error,omitempty"`
}

// Envelope is Dify's error body (docs/api §1.4). Message has the run's
// placeholders put back and pydantic's URL normalised.
type Envelope struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Status  int     `json:"status"`
	Params  *string `json:"params,omitempty"`
}

// Shape maps each JSON path of a body to its kind: "object", "array",
// "string", "number", "boolean" or "null". The root is "$"; object members
// are "$.name"; array elements are merged under "$.name[]". A path seen
// with several kinds (elements that differ, a nullable field) lists them
// sorted and joined with "|", e.g. "null|string".
type Shape map[string]string

// ShapeOf returns the shape of a JSON document, nil if it is not JSON.
func ShapeOf(data []byte) Shape {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	s := Shape{}
	s.add("$", v)
	return s
}

func (s Shape) add(path string, v any) {
	kind := "null"
	switch t := v.(type) {
	case map[string]any:
		kind = "object"
		for k, child := range t {
			s.add(path+"."+k, child)
		}
	case []any:
		kind = "array"
		for _, child := range t {
			s.add(path+"[]", child)
		}
	case string:
		kind = "string"
	case json.Number:
		kind = "number"
	case bool:
		kind = "boolean"
	}
	s.merge(path, kind)
}

func (s Shape) merge(path, kind string) {
	old, ok := s[path]
	if !ok {
		s[path] = kind
		return
	}
	kinds := strings.Split(old, "|")
	for _, k := range kinds {
		if k == kind {
			return
		}
	}
	kinds = append(kinds, kind)
	sort.Strings(kinds)
	s[path] = strings.Join(kinds, "|")
}

// ValuesAt returns, for each path of want (Shape notation), the distinct
// values the JSON document has there, each as compact JSON, sorted and
// joined with "|"; a path with no value is left out. Only the paths asked
// for are read, so a report holds no other content of the body.
func ValuesAt(data []byte, want map[string]string) map[string]string {
	return collectAt(data, want, func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	})
}

// Format classes (FormatOf): how Dify's framework writes a value, which
// differs by the Python type the value has on its way out.
const (
	// FormatEpochSeconds is an integer of ten digits: a datetime through
	// Flask-RESTX TimestampField or to_timestamp, int(dt.timestamp()).
	FormatEpochSeconds = "epoch-seconds"
	// FormatEpochMillis is an integer of thirteen digits.
	FormatEpochMillis = "epoch-milliseconds"
	// FormatInteger is any other integer.
	FormatInteger = "integer"
	// FormatFloat is a number written with a point or an exponent: a
	// Python float (0.0, 1e-05).
	FormatFloat = "float"
	// FormatISONaive is an ISO 8601 time without a zone, microseconds
	// only when there are any: datetime.isoformat() or pydantic's JSON
	// mode of a naive datetime (an sa.DateTime column without timezone).
	FormatISONaive = "iso8601-naive"
	// FormatISOZoned is an ISO 8601 time with Z or an offset (an aware
	// datetime).
	FormatISOZoned = "iso8601-zoned"
)

var (
	isoNaive = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?$`)
	isoZoned = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
)

// FormatOf is the format class of a decoded JSON value (numbers decoded
// as json.Number): one of the Format* constants for numbers and times,
// else the value's JSON kind ("string", "boolean", "null", "object",
// "array").
func FormatOf(v any) string {
	switch t := v.(type) {
	case json.Number:
		s := strings.TrimPrefix(string(t), "-")
		switch {
		case strings.ContainsAny(s, ".eE"):
			return FormatFloat
		case len(s) == 10:
			return FormatEpochSeconds
		case len(s) == 13:
			return FormatEpochMillis
		}
		return FormatInteger
	case string:
		switch {
		case isoNaive.MatchString(t):
			return FormatISONaive
		case isoZoned.MatchString(t):
			return FormatISOZoned
		}
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// FormatsAt returns, for each path of want, the distinct format classes
// (FormatOf) of the values there, sorted and joined with "|"; a path with
// no value is left out.
func FormatsAt(data []byte, want map[string]string) map[string]string {
	return collectAt(data, want, FormatOf)
}

// collectAt walks a JSON document and, for each path of want, collects
// the distinct results of render for the values there, sorted and joined
// with "|".
func collectAt(data []byte, want map[string]string, render func(any) string) map[string]string {
	if len(want) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	found := map[string]map[string]bool{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if _, ok := want[path]; ok {
			if found[path] == nil {
				found[path] = map[string]bool{}
			}
			found[path][render(v)] = true
		}
		switch t := v.(type) {
		case map[string]any:
			for k, child := range t {
				walk(path+"."+k, child)
			}
		case []any:
			for _, child := range t {
				walk(path+"[]", child)
			}
		}
	}
	walk("$", v)
	out := map[string]string{}
	for p, set := range found {
		vals := make([]string, 0, len(set))
		for s := range set {
			vals = append(vals, s)
		}
		sort.Strings(vals)
		out[p] = strings.Join(vals, "|")
	}
	return out
}

// Paths returns the shape's paths, sorted.
func (s Shape) Paths() []string {
	out := make([]string, 0, len(s))
	for p := range s {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// pydanticURL matches the documentation link pydantic appends to each
// validation error; its version part differs between servers.
var pydanticURL = regexp.MustCompile(`https://errors\.pydantic\.dev/[0-9]+\.[0-9]+/`)

// NormalizeMessage makes an error message comparable across servers:
// pydantic's documentation URL loses its version.
func NormalizeMessage(m string) string {
	return pydanticURL.ReplaceAllString(m, "https://errors.pydantic.dev/<version>/")
}

// Check compares an observation with a case's expectation and returns one
// line per mismatch (empty when it conforms). A skipped case conforms.
func Check(c Case, o Observed) []string {
	if o.Skipped != "" {
		return nil
	}
	if o.Err != "" {
		return []string{"no answer: " + o.Err}
	}
	e := c.Expect
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if e.Status != 0 && o.Status != e.Status {
		bad("status %d, want %d", o.Status, e.Status)
	}
	if e.ContentType != "" && o.ContentType != e.ContentType {
		bad("content type %q, want %q", o.ContentType, e.ContentType)
	}
	if e.Code != "" || e.Message != "" {
		switch {
		case o.Envelope == nil:
			bad("no error envelope, want code %q", e.Code)
		default:
			if e.Code != "" && o.Envelope.Code != e.Code {
				bad("code %q, want %q", o.Envelope.Code, e.Code)
			}
			if e.Message != "" && e.Message != "*" && o.Envelope.Message != NormalizeMessage(e.Message) {
				bad("message %q, want %q", o.Envelope.Message, NormalizeMessage(e.Message))
			}
			if o.Envelope.Status != o.Status {
				bad("envelope status %d differs from HTTP status %d", o.Envelope.Status, o.Status)
			}
		}
	}
	if e.Params != "" && (o.Envelope == nil || o.Envelope.Params == nil || *o.Envelope.Params != e.Params) {
		bad("params missing or not %q", e.Params)
	}
	for _, p := range sortedKeys(e.Fields) {
		kind, ok := o.Shape[p]
		switch {
		case !ok:
			bad("field %s missing", p)
		case e.Fields[p] != "" && kind != e.Fields[p]:
			bad("field %s is %s, want %s", p, kind, e.Fields[p])
		}
	}
	for _, p := range sortedKeys(e.Values) {
		got, ok := o.Values[p]
		switch {
		case !ok:
			bad("value at %s missing, want %s", p, e.Values[p])
		case got != e.Values[p]:
			bad("value at %s is %s, want %s", p, got, e.Values[p])
		}
	}
	for _, p := range sortedKeys(e.Formats) {
		got, ok := o.Formats[p]
		switch {
		case !ok:
			bad("format at %s missing, want %s", p, e.Formats[p])
		case got != e.Formats[p]:
			bad("format at %s is %s, want %s", p, got, e.Formats[p])
		}
	}
	for _, p := range e.Absent {
		if _, ok := o.Shape[p]; ok {
			bad("field %s present, want absent", p)
		}
	}
	if e.Location != "" && o.Location != e.Location {
		bad("location %q, want %q", o.Location, e.Location)
	}
	if e.BodyContains != "" && !strings.Contains(o.Body, e.BodyContains) {
		bad("body does not contain %q", e.BodyContains)
	}
	if e.Events != nil && strings.Join(o.Events, ",") != strings.Join(e.Events, ",") {
		bad("events %v, want %v", o.Events, e.Events)
	}
	if n := len(e.EventsEnd); n > 0 && (len(o.Events) < n || strings.Join(o.Events[len(o.Events)-n:], ",") != strings.Join(e.EventsEnd, ",")) {
		bad("events %v do not end with %v", o.Events, e.EventsEnd)
	}
	return out
}

// Difference is one way two observations of the same case differ.
type Difference struct {
	Case   string `json:"case"`
	Route  string `json:"route"`
	Class  string `json:"class"`
	Aspect string `json:"aspect"` // status, content_type, code, message, params, field, value, format, location, events
	Path   string `json:"path,omitempty"`
	A      string `json:"a"`
	B      string `json:"b"`
}

// Diff lists how two observations of one case differ in what clients see:
// status, content type, error code/message/params, JSON shape (field
// names, kinds, null vs missing), redirect target and event sequence.
// Timing and text content are never compared. Skipped sides give nothing.
func Diff(a, b Observed) []Difference {
	if a.Skipped != "" || b.Skipped != "" {
		return nil
	}
	var out []Difference
	add := func(aspect, path, x, y string) {
		if x != y {
			out = append(out, Difference{Case: a.Case, Route: a.Route, Class: a.Class, Aspect: aspect, Path: path, A: x, B: y})
		}
	}
	add("error", "", a.Err, b.Err)
	add("status", "", fmt.Sprint(a.Status), fmt.Sprint(b.Status))
	add("content_type", "", a.ContentType, b.ContentType)
	env := func(o Observed) (code, msg, params string) {
		if o.Envelope == nil {
			return "", "", ""
		}
		if o.Envelope.Params != nil {
			params = *o.Envelope.Params
		}
		return o.Envelope.Code, o.Envelope.Message, params
	}
	ac, am, ap := env(a)
	bc, bm, bp := env(b)
	add("code", "", ac, bc)
	add("message", "", am, bm)
	add("params", "", ap, bp)
	for _, d := range DiffShapes(a.Shape, b.Shape) {
		add("field", d.Path, d.A, d.B)
	}
	for _, p := range sortedKeys(a.Values) {
		if bv, ok := b.Values[p]; ok {
			add("value", p, a.Values[p], bv)
		}
	}
	for _, p := range sortedKeys(a.Formats) {
		if bf, ok := b.Formats[p]; ok {
			add("format", p, a.Formats[p], bf)
		}
	}
	add("location", "", a.Location, b.Location)
	add("events", "", strings.Join(a.Events, ","), strings.Join(b.Events, ","))
	return out
}

// ShapeDifference is one path whose kind differs between two shapes;
// "(missing)" stands for a path one side does not have.
type ShapeDifference struct{ Path, A, B string }

// DiffShapes lists the paths whose kinds differ between a and b, leaving
// out what depends on the app's data rather than on the API's layout:
//   - the elements of an array that is empty on one side (an empty array
//     matches any element shape; element shapes are compared only when
//     both sides have elements);
//   - what lies under a path one side does not have at all: the row of
//     that path says it (a missing `usage` object is one row, not one per
//     member).
func DiffShapes(a, b Shape) []ShapeDifference {
	union := Shape{}
	for p := range a {
		union[p] = ""
	}
	for p := range b {
		union[p] = ""
	}
	var out []ShapeDifference
	for _, p := range union.Paths() {
		x, xok := a[p]
		y, yok := b[p]
		if x == y || oneSidedAncestor(a, b, p) {
			continue
		}
		if xok != yok && strings.HasSuffix(p, "[]") {
			continue // the array is empty on one side
		}
		if !xok {
			x = "(missing)"
		}
		if !yok {
			y = "(missing)"
		}
		out = append(out, ShapeDifference{p, x, y})
	}
	return out
}

// oneSidedAncestor reports whether some ancestor of path p is present in
// exactly one of a and b (its own row, or an empty array, covers p).
func oneSidedAncestor(a, b Shape, p string) bool {
	for q := parentPath(p); q != ""; q = parentPath(q) {
		_, xok := a[q]
		_, yok := b[q]
		if xok != yok {
			return true
		}
	}
	return false
}

// parentPath is the path p is a member or element of ("" for the root).
func parentPath(p string) string {
	if q, ok := strings.CutSuffix(p, "[]"); ok {
		return q
	}
	if i := strings.LastIndexByte(p, '.'); i > 0 {
		return p[:i]
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
