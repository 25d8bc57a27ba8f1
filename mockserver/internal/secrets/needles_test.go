package secrets

import (
	"bytes"
	"io/fs"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/cassettes"
)

// withoutNeedles is Patterns with the pre-check off.
func withoutNeedles() []Pattern {
	out := append([]Pattern(nil), Patterns...)
	for i := range out {
		out[i].Needles, out[i].MayMatch = nil, nil
	}
	return out
}

// TestNeedlesNeverHideAMatch: every pattern's needles are in every match it
// makes, so redacting with the pre-check gives what redacting without it
// gives, over secret-shaped inputs (every pattern's shape, in upper and
// lower case, mixed into ordinary text) and the start of each built-in
// cassette.
func TestNeedlesNeverHideAMatch(t *testing.T) {
	shapes := []string{
		"app-Q7xk2LmN9pRt4VwY6zAb8CdE", "dataset-abcdefghijklmnopqrstuvwx1", "Bearer abcdefghijklmnop1234", "BEARER\tabcdefghijklmnop1234",
		"sk-proj-abcdefghijklmnopqrstuv", "ghp_" + strings.Repeat("a1", 18), "xoxb-1234567890-abc", "AKIAABCDEFGHIJKLMNOP", "ASIAABCDEFGHIJKLMNOP",
		"AIza" + strings.Repeat("b", 35), "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijkl",
		`"api_key": "s3cr3t"`, `"API_KEY"` + "\n:\t" + `"x"`, `"Password":"p\"q"`, `\"password\": \"hunter2\"`, `\"ACCESS_TOKEN\":\"t\"`,
		"?token=abc", "&Api-Key=abc", "token=abc&user=u", "?to\u212aen=abc", "&pa\u017f\u017fword=x", "&x_API-\u212aey=abc",
		`{"toKen" :  "x"}`, `{"a":"b","Session_Token"` + "\r\n:\f" + `"v"}`, `"paſſword":"x"`, `""password":"x"`,
		"a=b=c&passwd=1", "?proxy-authorization=Basic%20x", "q=1&set_cookie=a",
		"--b\r\nContent-Disposition: FORM-DATA; name=\"api_key\"\r\n\r\nabc123\r\n--b--\r\n",
	}
	filler := []string{"", " ", "x", "user=u&", "{", "}", `"`, "\\", "\n", "\u212a", "\u017f", "-", "_", "/v1/parameters?user=bench"}
	plain := withoutNeedles()
	check := func(in string) {
		t.Helper()
		if got, want := string(Redact([]byte(in))), string(Redact([]byte(in), plain...)); got != want {
			t.Fatalf("the needles changed the redaction of %q:\n got %q\nwant %q", in, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		check(s)
		check(strings.ToLower(s))
		check(strings.ToUpper(s))
		for range 10 {
			var b strings.Builder
			for range 4 {
				b.WriteString(filler[rng.IntN(len(filler))])
				if rng.IntN(3) == 0 {
					b.WriteString(shapes[rng.IntN(len(shapes))])
				}
			}
			b.WriteString(s)
			b.WriteString(filler[rng.IntN(len(filler))])
			check(b.String())
		}
	}
	err := fs.WalkDir(cassettes.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(cassettes.FS(), path)
		if err == nil {
			// The first 16 KiB of each: their frames, headers and
			// JSON-in-JSON (all of them made this test take 5 s
			// under -race).
			check(string(data[:min(len(data), 16<<10)]))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestContainsFold(t *testing.T) {
	for _, c := range []struct {
		data, needle string
		want         bool
	}{
		{"xxBeArErxx", "bearer", true}, {"bearer", "bearer", true}, {"beare", "bearer", false},
		{"", "a", false}, {"abc", "", true}, {"FORM-DATA;", "form-data", true}, {"form_data", "form-data", false},
	} {
		if got := containsFold([]byte(c.data), c.needle); got != c.want {
			t.Errorf("containsFold(%q, %q) = %v", c.data, c.needle, got)
		}
	}
}

// FuzzNeedlesNeverHideAMatch is TestNeedlesNeverHideAMatch over any input:
// the pre-checks (needles and MayMatch) only skip work.
func FuzzNeedlesNeverHideAMatch(f *testing.F) {
	f.Add([]byte(`{"query":"hi","api_key" : "s3cr3t","user":"u"}`))
	f.Add([]byte(`{"to\u212aen":"x", "x": "y"}`))
	f.Add([]byte("?access_token=abc&user=u"))
	f.Add([]byte(`{"tool_input":"{\"query\": \"x\", \"Api-Key\" :\"s3cr3t\"}"}`))
	plain := withoutNeedles()
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Redact(data), Redact(data, plain...); !bytes.Equal(got, want) {
			t.Fatalf("the pre-checks changed the redaction of %q:\n got %q\nwant %q", data, got, want)
		}
	})
}

func TestMayHoldCredentialField(t *testing.T) {
	for data, want := range map[string]bool{
		`{"api_key":"x"}`: true, `{"API-KEY"` + "\t : " + `"x"}`: true, `{"toKen":"x"}`: true,
		`{"query":"my api_key is x","user":"u"}`: false, `{"total_tokens":5}`: false, `"token"`: false,
		`:"token":`: true, `{"x":"token"}`: false, `:`: false, `":`: false, ``: false,
	} {
		if got := mayHoldCredentialField([]byte(data)); got != want {
			t.Errorf("mayHoldCredentialField(%q) = %v, want %v", data, got, want)
		}
	}
}

// Every spelling of every credential name passes the name needles: each
// form of tokenFieldNames with each separator, in lower, upper and title
// case, with k and s also written as the Kelvin sign and the long s.
func TestCredentialNameNeedlesMissNoName(t *testing.T) {
	forms := []string{"api{}key", "x{}api{}key", "access{}token", "refresh{}token", "id{}token", "auth{}token",
		"session{}token", "bearer{}token", "api{}token", "token", "secret", "client{}secret", "secret{}key",
		"aws{}secret{}access{}key", "secret{}access{}key", "aws{}secret{}key", "access{}key", "private{}key",
		"password", "passwd", "authorization", "proxy{}authorization", "cookie", "set{}cookie"}
	n := 0
	for _, f := range forms {
		for _, sep := range []string{"", "_", "-"} {
			name := strings.ReplaceAll(f, "{}", sep)
			for _, v := range []string{name, strings.ToUpper(name), strings.ToUpper(name[:1]) + name[1:],
				strings.ReplaceAll(name, "k", "\u212a"), strings.ReplaceAll(name, "s", "\u017f")} {
				if !credentialNameRE.MatchString(v) {
					t.Fatalf("%q is not a credential name: the list of forms is out of date", v)
				}
				if !matchCredentialName([]byte(v)) {
					t.Errorf("the needles miss %q", v)
				}
				n++
			}
		}
	}
	for _, v := range []string{"query", "user", "inputs", "response_mode", "conversation_id", "files", "total_tokens", "tokens"} {
		if matchCredentialName([]byte(v)) {
			t.Errorf("%q counted as a credential name", v)
		}
	}
	t.Logf("%d spellings", n)
}

// BenchmarkRedactFrames is redaction's cost per frame of a chat stream
// (hybrid mode redacts every frame it relays): tool-use's frames.
func BenchmarkRedactFrames(b *testing.B) {
	data, err := fs.ReadFile(cassettes.FS(), "tool-use.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var frames [][]byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if l := bytes.TrimSpace(line); bytes.HasPrefix(l, []byte("data: ")) {
			frames = append(frames, l)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Redact(frames[i%len(frames)])
	}
}
