package secrets

import (
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
