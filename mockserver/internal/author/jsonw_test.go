package author

import (
	"encoding/json"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestEncodeStyles(t *testing.T) {
	v := object{
		{"answer", "서울 \"q\" \\ \n\t\x01 😀 é"},
		{"n", 3},
		{"f", pyFloat(10)},
		{"g", pyFloat(0.35)},
		{"null", nil},
		{"empty", object{}},
		{"list", []any{true, "a"}},
	}
	cases := map[style]string{
		// orjson: compact, raw UTF-8 (docs/api §1.5).
		styleCompact: `{"answer":"서울 \"q\" \\ \n\t\u0001 😀 é","n":3,"f":10.0,"g":0.35,"null":null,"empty":{},"list":[true,"a"]}`,
		// json.dumps: ", " and ": ", \uXXXX (lower-case, surrogate pairs) (docs/api §1.5, §19).
		stylePython:     `{"answer": "\uc11c\uc6b8 \"q\" \\ \n\t\u0001 \ud83d\ude00 \u00e9", "n": 3, "f": 10.0, "g": 0.35, "null": null, "empty": {}, "list": [true, "a"]}`,
		stylePythonUTF8: `{"answer": "서울 \"q\" \\ \n\t\u0001 😀 é", "n": 3, "f": 10.0, "g": 0.35, "null": null, "empty": {}, "list": [true, "a"]}`,
	}
	for st, want := range cases {
		got := encode(v, st)
		if got != want {
			t.Errorf("style %d:\n got %s\nwant %s", st, got, want)
		}
		var back map[string]any
		if err := json.Unmarshal([]byte(got), &back); err != nil || back["answer"] != "서울 \"q\" \\ \n\t\x01 😀 é" {
			t.Errorf("style %d does not round-trip: %v %q", st, err, back["answer"])
		}
	}
}

func TestNodeValueKeepsOrderAndTypes(t *testing.T) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("z: 1\na: [x, 2.5, true, null, '07']\nm: {k: v}\n"), &n); err != nil {
		t.Fatal(err)
	}
	v, err := nodeValue(&n)
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(v, styleCompact); got != `{"z":1,"a":["x",2.5,true,null,"07"],"m":{"k":"v"}}` {
		t.Errorf("got %s", got)
	}
}

func TestSplitBatches(t *testing.T) {
	cases := []struct {
		text string
		n    int
		want []string
	}{
		{"one two three four", 8, []string{"one two ", "three four"}},
		{"abc", 10, []string{"abc"}},
		// Unspaced scripts are cut by characters, never inside a rune.
		{"가나다라마바사아자차카타파하가나다라마바사아자차카타파하", 4, []string{"가나다라", "마바사아", "자차카타", "파하가나", "다라마바", "사아자차", "카타파하"}},
	}
	for _, c := range cases {
		got := splitBatches(c.text, c.n)
		if len(got) != len(c.want) {
			t.Errorf("%q/%d: got %q want %q", c.text, c.n, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q/%d: got %q want %q", c.text, c.n, got, c.want)
				break
			}
		}
	}
}

func TestDeriveIDIsStableUUIDv4(t *testing.T) {
	a, b := deriveID("s", "message", "0"), deriveID("s", "message", "0")
	if a != b || a == deriveID("s", "message", "1") {
		t.Errorf("ids %s %s", a, b)
	}
	if len(a) != 36 || a[14] != '4' || (a[19] != '8' && a[19] != '9' && a[19] != 'a' && a[19] != 'b') {
		t.Errorf("%s is not UUIDv4-shaped", a)
	}
}
