package secrets

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// A key hidden by JSON escapes is still a key: every client decodes
// "\u0061pp-…" to "app-…". Scanning and redaction see through the escapes,
// at any JSON-in-JSON depth a tool input reaches, and re-encode valid JSON.
func TestEscapedSecretsAreFoundAndRedacted(t *testing.T) {
	const key = "app-K3yF0rT3stsOnlyZq8Wx2Vb7"
	escaped := `\u0061pp-K3yF0rT3stsOnlyZq8Wx2Vb7`
	for _, body := range []string{
		`{"answer":"your key is ` + escaped + ` ok"}`,
		`{"answer":"slash \/ then ` + `app\u002dK3yF0rT3stsOnlyZq8Wx2Vb7"}`,
		`data: {"event":"agent_thought","tool_input":"{\"q\": \"` + strings.ReplaceAll(escaped, `\`, `\\`) + `\"}"}`,
		`{"note":"sk-\u0041BCDEFGHIJKLMNOPQRSTUVWXYZ0123"}`,
	} {
		if len(Scan([]byte(body))) == 0 {
			t.Errorf("not found in %s", body)
		}
		red := Redact([]byte(body))
		if len(Scan(red)) != 0 {
			t.Errorf("still found after redaction: %s", red)
		}
		if strings.Contains(decodeAll(t, string(red)), key) || !strings.Contains(decodeAll(t, string(red)), Redacted) {
			t.Errorf("redacted body decodes to a secret or lacks %s: %s", Redacted, red)
		}
		if j := strings.TrimPrefix(string(red), "data: "); !json.Valid([]byte(j)) {
			t.Errorf("redaction broke the JSON: %s", red)
		}
	}
	// Plain text keeps its escapes when nothing secret hides there.
	plain := `{"answer":"caf\u00e9 \"quoted\""}`
	if got := string(Redact([]byte(plain))); got != plain {
		t.Errorf("changed a clean body: %s", got)
	}
}

// jsonStringRE is what jsonStrings finds, as an expression: the reference
// FuzzJSONStrings holds the hand scanner to.
var jsonStringRE = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)

// FuzzJSONStrings: jsonStrings finds what jsonStringRE finds, in any data.
func FuzzJSONStrings(f *testing.F) {
	for _, s := range []string{
		`data: {"event":"agent_thought","tool_input":"{\"q\": \"x\"}"}`,
		`"a\"b` + "\n" + `"c"`, `"\` + "\n" + `"`, `"caf\u00e9"`, `""""`, `"\\"x"`, "\"\xff\\\xff\"", `"\`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got [][]int
		jsonStrings(data, func(start, end int) { got = append(got, []int{start, end}) })
		want := jsonStringRE.FindAllIndex(data, -1)
		if len(got) != len(want) {
			t.Fatalf("%q: found %v, the expression %v", data, got, want)
		}
		for i := range got {
			if got[i][0] != want[i][0] || got[i][1] != want[i][1] {
				t.Fatalf("%q: found %v, the expression %v", data, got, want)
			}
		}
	})
}

// decodeAll unescapes JSON string literals down to three levels.
func decodeAll(t *testing.T, s string) string {
	t.Helper()
	for range 3 {
		var b strings.Builder
		last := 0
		for _, m := range jsonStringRE.FindAllStringIndex(s, -1) {
			var d string
			if json.Unmarshal([]byte(s[m[0]:m[1]]), &d) == nil {
				b.WriteString(s[last:m[0]])
				b.WriteString(d)
				last = m[1]
			}
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s
}

// A token in a Link header's URL is redacted without eating the ">;" that
// ends the URL (before, `<…&token=abc>; rel="next"` lost its ">;").
func TestLinkHeaderKeepsItsShape(t *testing.T) {
	in := `<https://api.dify.test/v1/messages?page=2&token=abcdef123456>; rel="next", <https://api.dify.test/v1/messages?page=1>; rel="prev"`
	want := `<https://api.dify.test/v1/messages?page=2&token=` + Redacted + `>; rel="next", <https://api.dify.test/v1/messages?page=1>; rel="prev"`
	if got := string(Redact([]byte(in))); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
