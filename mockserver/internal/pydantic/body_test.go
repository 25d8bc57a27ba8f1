package pydantic_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
)

// Body keeps what Python's json.loads gives a pydantic model: keys in
// first-seen order, the last value of a repeated key, int and float
// literals apart, nested values decoded alike.
func TestBodyReadsAnObjectAsPythonDoes(t *testing.T) {
	d := pydantic.Body([]byte(` {"query":"hi","n":5,"f":5.0,"user":"a","inputs":{"k":[1,2.5,"x",null,true]},"user":"b"}`))
	if want := []string{"query", "n", "f", "user", "inputs"}; !reflect.DeepEqual(d.Keys, want) {
		t.Fatalf("keys %v, want %v", d.Keys, want)
	}
	want := map[string]any{
		"query": "hi", "n": json.Number("5"), "f": json.Number("5.0"), "user": "b",
		"inputs": map[string]any{"k": []any{json.Number("1"), json.Number("2.5"), "x", nil, true}},
	}
	if !reflect.DeepEqual(d.Vals, want) {
		t.Fatalf("values %#v, want %#v", d.Vals, want)
	}
}

// A body cut short keeps the fields read before the cut; one that is not
// an object has none.
func TestBodyKeepsTheFieldsBeforeABrokenOne(t *testing.T) {
	d := pydantic.Body([]byte(`{"query":"hi","user":"u","inputs":{"k":`))
	if want := []string{"query", "user"}; !reflect.DeepEqual(d.Keys, want) {
		t.Fatalf("keys %v, want %v", d.Keys, want)
	}
	for _, body := range []string{``, `[]`, `"x"`, `{`, `{"a"`} {
		if d := pydantic.Body([]byte(body)); len(d.Keys) != 0 && body != `{"a"` {
			t.Errorf("Body(%q) keys %v, want none", body, d.Keys)
		}
	}
}

func TestDecodeKeepsNumberLiterals(t *testing.T) {
	for raw, want := range map[string]any{
		`"a\u00e9"`: "aé", ` "s" `: "s", `7`: json.Number("7"), `-1e3`: json.Number("-1e3"),
		`null`: nil, `{"a":1}`: map[string]any{"a": json.Number("1")}, `"broken`: nil, ``: nil,
	} {
		if got := pydantic.Decode(json.RawMessage(raw)); !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%q) = %#v, want %#v", raw, got, want)
		}
	}
}

// A chat request's body is read with one decoder, not one per field: the
// per-field decoders (a 512-byte read buffer each) were a quarter of a
// chat request's garbage at 10,000 streams (bench/results.md).
func TestBodyAllocatesLittle(t *testing.T) {
	body := []byte(`{"inputs":{},"query":"What is the weather in Paris?","response_mode":"streaming","conversation_id":"","user":"load-user-1","files":[],"auto_generate_name":true}`)
	allocs := testing.AllocsPerRun(100, func() { pydantic.Body(body) })
	// Measured 97 (3.2 KB) with one decoder; 141 (17.3 KB) with a
	// decoder per field.
	if allocs > 110 {
		t.Fatalf("Body allocates %.0f times per call, want at most 110", allocs)
	}
}

func BenchmarkBody(b *testing.B) {
	body := []byte(`{"inputs":{},"query":"What is the weather in Paris?","response_mode":"streaming","conversation_id":"","user":"load-user-1","files":[],"auto_generate_name":true}`)
	b.ReportAllocs()
	for b.Loop() {
		pydantic.Body(body)
	}
}
