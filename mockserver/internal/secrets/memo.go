package secrets

import (
	"sync"
	"sync/atomic"
)

// The journal redacts every request's path, query, user and origin, and
// those repeat: a client asks GET /v1/parameters?user=u all day. The memo
// remembers short strings that Redact leaves unchanged, so a repeat costs
// one map lookup instead of every pattern's pre-check. Only strings with
// nothing to redact are kept, so the memo never holds a secret; it is
// bounded (memoEntries strings of at most memoMaxLen bytes, about 1 MiB) by
// starting over when full.
const (
	memoEntries = 4096
	memoMaxLen  = 256
)

var (
	cleanMemo  sync.Map // string → the same string, a copy
	cleanCount atomic.Int32
)

// RedactString is Redact for a string with the built-in patterns. The
// result never shares memory with s, which may be a slice of a large
// request line that a kept journal entry must not hold alive.
func RedactString(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > memoMaxLen {
		return string(Redact([]byte(s)))
	}
	if kept, ok := cleanMemo.Load(s); ok {
		return kept.(string)
	}
	out := Redact([]byte(s))
	if string(out) != s {
		return string(out)
	}
	if cleanCount.Add(1) > memoEntries {
		cleanMemo.Clear()
		cleanCount.Store(1)
	}
	kept := string(out) // a copy: the key and value the memo holds
	cleanMemo.Store(kept, kept)
	return kept
}
