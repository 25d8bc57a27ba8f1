package secrets

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// FuzzNeedleScan: the one-pass scan reports a pattern exactly when one of
// its needles is in the data (containsFold, one needle at a time), and
// always reports the patterns without needles.
func FuzzNeedleScan(f *testing.F) {
	for _, s := range []string{"", "a", "APP-", "xx Bearer", "daTaSet-", `\"`, "form-DATA", "ghp_ gho_ AIza eyJ", "sk-", "s", "AKIAASIA", "xoX"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		present := builtinScan.present(data)
		for i, p := range Patterns {
			want := p.MayMatch != nil || len(p.Needles) == 0
			for _, n := range p.Needles {
				want = want || containsFold(data, n)
			}
			if got := present&(1<<i) != 0; got != want {
				t.Fatalf("%q: pattern %q present %v, its needles say %v", data, p.Name, got, want)
			}
		}
	})
}

// TestCredentialNameCacheAnswersAsTheExpression: cached or not, colliding
// or not, from many goroutines, the answer is the expression's.
func TestCredentialNameCacheAnswersAsTheExpression(t *testing.T) {
	names := []string{"api_key", "API-KEY", "tool_input", "tool_labels", "total_tokens", "token", "Token", "x_api_key",
		"password", "passwd", "pa\u017f\u017fword", "to\u212aen", "query", "user", "session_token", "set-cookie", "cookies"}
	for i := range 2000 { // more names than slots: collisions
		names = append(names, fmt.Sprintf("field_%d_token", i), fmt.Sprintf("to%dken", i))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for round := range 3 {
				for k, n := range names {
					if (k+g+round)%2 == 0 {
						continue
					}
					if got, want := matchCredentialName([]byte(n)), credentialNameRE.MatchString(n); got != want {
						t.Errorf("%q: %v, the expression %v", n, got, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// A caller's patterns may have needles of one byte, or be more than a scan
// has bits for: their matches are redacted all the same.
func TestNeedleScanTakesAnyPatterns(t *testing.T) {
	short := Pattern{Name: "short needle", Regexp: regexp.MustCompile(`[Xx][0-9]+`), Needles: []string{"x"}}
	for _, in := range []string{"a X12 b", "ends with x7", "x9"} {
		if got := string(Redact([]byte(in), short)); !strings.Contains(got, Redacted) {
			t.Errorf("one-byte needle: %q redacted to %q", in, got)
		}
	}
	var many []Pattern
	for i := range maxScanned + 6 {
		many = append(many, Pattern{Name: fmt.Sprint("p", i), Regexp: regexp.MustCompile(fmt.Sprintf(`secret%d-[0-9]+`, i)), Needles: []string{fmt.Sprintf("secret%d-", i)}})
	}
	in := fmt.Sprintf("a secret1-42 and a secret%d-43", maxScanned+3)
	if got, want := string(Redact([]byte(in), many...)), "a [REDACTED] and a [REDACTED]"; got != want {
		t.Errorf("%d patterns: %q, want %q", len(many), got, want)
	}
}
