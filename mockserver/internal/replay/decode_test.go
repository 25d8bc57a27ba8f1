package replay

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"testing"
)

// TestWireEventFieldsFollowTheStruct: the names decodeData decodes are
// wireEvent's json tags, and each points at its own field, in order.
func TestWireEventFieldsFollowTheStruct(t *testing.T) {
	var ev wireEvent
	typ := reflect.TypeFor[wireEvent]()
	names, ptrs := wireEventFields.Names(), ev.fields()
	if len(names) != typ.NumField() || len(ptrs) != typ.NumField() {
		t.Fatalf("%d names and %d pointers for %d fields", len(names), len(ptrs), typ.NumField())
	}
	v := reflect.ValueOf(&ev).Elem()
	for i := range typ.NumField() {
		if tag := typ.Field(i).Tag.Get("json"); names[i] != tag {
			t.Errorf("field %s: name %q, tag %q", typ.Field(i).Name, names[i], tag)
		}
		if reflect.ValueOf(ptrs[i]).Pointer() != v.Field(i).Addr().Pointer() {
			t.Errorf("field %s: pointer %d is another field's", typ.Field(i).Name, i)
		}
	}
}

// decodeDataWithEncodingJSON is decodeData as it was before jsonobj: the
// data lines joined, then json.Unmarshal.
func decodeDataWithEncodingJSON(raw []byte) *wireEvent {
	var data []byte
	n := 0
	for _, l := range bytes.Split(raw, []byte("\n")) {
		l = bytes.TrimSuffix(l, []byte("\r"))
		if !bytes.HasPrefix(l, []byte("data:")) {
			continue
		}
		if n > 0 {
			data = append(data, '\n')
		}
		data = append(data, bytes.TrimPrefix(l[5:], []byte(" "))...)
		n++
	}
	if n == 0 {
		return nil
	}
	var ev wireEvent
	if json.Unmarshal(data, &ev) != nil {
		return nil
	}
	return &ev
}

// FuzzDecodeData: decodeData decodes a frame as encoding/json does.
func FuzzDecodeData(f *testing.F) {
	for _, c := range builtin(f).Cassettes {
		for _, tr := range c.Turns {
			for _, fr := range tr.Frames {
				f.Add(fr.Raw)
			}
		}
	}
	for _, s := range []string{
		"data: {\"event\":\"agent_message\",\"answer\":\"a\\nb\"}\n\n",
		"data: {\"event\":\"message_end\",\"metadata\":{\"usage\":{\"total_tokens\":\"x\"}}}\n\n",
		"data: {\"Event\":\"agent_message\",\"ANSWER\":\"folded\"}\n\n",
		"data: {\"event\":\"agent_thought\",\n\ndata: \"position\":2}\n\n",
		"data:{\"event\":\"ping\"}\r\n\r\n",
		"data: {\"event\":\"error\",\"status\":400,\"code\":\"invalid_param\",\"message\":\"x\"}\n\n",
		"data: {\"event\":\"message_file\",\"id\":\"f\",\"type\":\"image\",\"belongs_to\":\"assistant\",\"url\":\"/files/x\"}\n\n",
		"data: {\"event\":\"agent_thought\",\"position\":1.5}\n\n",
		"event: ping\n\n", "data: [1]\n\n", "data: null\n\n", "data: {\n\n", "data: \n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, want := decodeData(raw), decodeDataWithEncodingJSON(raw)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decoded %+v, encoding/json %+v", raw, got, want)
		}
	})
}

// FuzzCreatedAtValues: createdAtValues finds what its expression finds.
func FuzzCreatedAtValues(f *testing.F) {
	re := regexp.MustCompile(`"created_at"\s*:\s*(-?[0-9]+)`)
	for _, s := range []string{
		`{"created_at":1764547200,"x":{"created_at": -5}}`, `"created_at" :`, `"created_at":-`, `"created_at":-x"created_at":7`,
		"\"created_at\"\t\f\r\n:\n 12", `"created_at""created_at":3`, `"created_at":0012`, `""created_at":1`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got [][2]int
		for start, end := range createdAtValues(raw) {
			got = append(got, [2]int{start, end})
		}
		var want [][2]int
		for _, m := range re.FindAllSubmatchIndex(raw, -1) {
			want = append(want, [2]int{m[2], m[3]})
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %v, the expression %v", raw, got, want)
		}
	})
}
