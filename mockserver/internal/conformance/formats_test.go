package conformance_test

import (
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/conformance"
)

// TestFormatsAt: the classes are what Python writes for each type on its
// way out (TimestampField ints, isoformat() of naive and aware datetimes,
// float reprs), and a path's classes are merged over array elements.
func TestFormatsAt(t *testing.T) {
	doc := []byte(`{"a":1768564829,"b":"2026-01-16T12:00:29.123456","c":"2026-01-16T12:00:29","d":"2026-01-16T12:00:29Z",
		"e":0.0,"f":0,"g":1768564829123,"h":"2026-01-16T12:00:29+00:00","i":"2026-01-16T12:00:29.1","l":[{"t":1768564829},{"t":"2026-01-16T12:00:29"}]}`)
	want := map[string]string{
		"$.a": conformance.FormatEpochSeconds, "$.b": conformance.FormatISONaive, "$.c": conformance.FormatISONaive,
		"$.d": conformance.FormatISOZoned, "$.e": conformance.FormatFloat, "$.f": conformance.FormatInteger,
		"$.g": conformance.FormatEpochMillis, "$.h": conformance.FormatISOZoned, "$.i": "string",
		"$.l[].t": conformance.FormatEpochSeconds + "|" + conformance.FormatISONaive,
	}
	got := conformance.FormatsAt(doc, want)
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %q, want %q", p, got[p], w)
		}
	}
	if _, ok := conformance.FormatsAt(doc, map[string]string{"$.missing": ""})["$.missing"]; ok {
		t.Error("a path without a value has a format")
	}
	// Check reports a format that differs, and Diff lists it.
	c := conformance.Case{Name: "x", Expect: conformance.Expect{Formats: map[string]string{"$.b": conformance.FormatISONaive}}}
	o := conformance.Observed{Formats: map[string]string{"$.b": conformance.FormatISOZoned}}
	if len(conformance.Check(c, o)) != 1 {
		t.Errorf("Check: %v", conformance.Check(c, o))
	}
	ds := conformance.Diff(conformance.Observed{Formats: map[string]string{"$.b": conformance.FormatISONaive}}, o)
	if len(ds) != 1 || ds[0].Aspect != "format" || ds[0].Path != "$.b" {
		t.Errorf("Diff: %+v", ds)
	}
}
