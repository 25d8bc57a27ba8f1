package secrets

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// TestRedactStringMemo: a string with a secret is redacted every time and
// never remembered; clean strings are remembered up to the bound.
func TestRedactStringMemo(t *testing.T) {
	const key = "app-Q7xk2LmN9pRt4VwY6zAb8CdE"
	for range 3 {
		if got := RedactString("/v1/x/" + key); strings.Contains(got, key) {
			t.Fatalf("RedactString kept the key: %q", got)
		}
	}
	count := 0
	cleanMemo.Range(func(k, _ any) bool {
		if strings.Contains(k.(string), key) {
			t.Errorf("the memo holds a string with a secret: %q", k)
		}
		count++
		return true
	})
	for i := range 3 * memoEntries {
		s := fmt.Sprintf("/v1/parameters?user=u%d", i)
		if got := RedactString(s); got != s {
			t.Fatalf("RedactString(%q) = %q", s, got)
		}
	}
	count = 0
	cleanMemo.Range(func(_, _ any) bool { count++; return true })
	if count > memoEntries {
		t.Errorf("the memo holds %d strings, bound %d", count, memoEntries)
	}
	if got := RedactString("?token=abc"); got != "?token="+Redacted {
		t.Errorf("RedactString(?token=abc) = %q", got)
	}
}

// TestRedactStringCopies: the result of RedactString never points into its
// argument (a slice of a large request line).
func TestRedactStringCopies(t *testing.T) {
	line := strings.Repeat("x", 1<<20) + "/v1/parameters?user=copy-check"
	s := line[1<<20:]
	for range 2 { // a miss, then a memo hit
		if got := RedactString(s); got != s || unsafe.StringData(got) == unsafe.StringData(s) {
			t.Fatalf("RedactString returned %q sharing its argument's memory", got)
		}
	}
}
