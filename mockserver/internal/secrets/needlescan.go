package secrets

import "sync/atomic"

// needleScan finds which patterns of a list have a needle in data, in one
// pass over it. Searching each needle on its own (a vectorised search per
// needle over a lowered copy) was a third of redacting a chat frame, which
// hybrid mode does for every frame it relays (BenchmarkRedactFrames): the
// needles' first letters are the commonest ones of English text, so each
// search stopped at most of the frame's bytes.
type needleScan struct {
	// pairs[a] has bit b set when a needle starts with the lowered bytes
	// a, b: a pass looks at a byte pair before comparing any needle.
	pairs [256][4]uint64
	// byFirst are the needles (lowered) by their lowered first byte.
	byFirst [256][]scanNeedle
	// always are the patterns that have no needles, or a MayMatch of their
	// own: present reports them every time (redactPlain runs MayMatch).
	always uint64
}

type scanNeedle struct {
	low     string
	pattern int
}

// lowerTable lowers ASCII letters; every other byte maps to itself.
var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = lowerASCII(byte(i))
	}
	return t
}()

// maxScanned is how many patterns a scan answers for (a bit each):
// patterns past it are reported every time, and so are searched by their
// expression, which finds what it would find after a needle matched.
const maxScanned = 64

// newNeedleScan is the scan for patterns.
func newNeedleScan(patterns []Pattern) *needleScan {
	ns := &needleScan{}
	for i, p := range patterns[:min(len(patterns), maxScanned)] {
		if p.MayMatch != nil || len(p.Needles) == 0 {
			ns.always |= 1 << i
			continue
		}
		for _, n := range p.Needles {
			switch len(n) {
			case 0: // in every data
				ns.always |= 1 << i
				continue
			case 1: // whatever byte follows it, or none
				a := lowerTable[n[0]]
				ns.pairs[a] = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
				ns.byFirst[a] = append(ns.byFirst[a], scanNeedle{low: string(a), pattern: i})
				continue
			}
			low := make([]byte, len(n))
			for j := range len(n) {
				low[j] = lowerTable[n[j]]
			}
			a, b := low[0], low[1]
			ns.pairs[a][b>>6] |= 1 << (b & 63)
			ns.byFirst[a] = append(ns.byFirst[a], scanNeedle{low: string(low), pattern: i})
		}
	}
	return ns
}

// present has bit i set when patterns[i] may match data: one of its
// needles is in data (ASCII case aside), or it has none to look for.
// Patterns from maxScanned on are not in it: mayBePresent says so.
func (ns *needleScan) present(data []byte) uint64 {
	found := ns.always
	for i := 0; i+1 < len(data); i++ {
		found = ns.at(data, i, lowerTable[data[i]], lowerTable[data[i+1]], found)
	}
	if n := len(data); n > 0 {
		// The last byte has no pair: 0 stands for its second byte, and a
		// needle longer than one byte fails on the data's end.
		found = ns.at(data, n-1, lowerTable[data[n-1]], 0, found)
	}
	return found
}

// at adds to found the patterns with a needle at data[i], whose first two
// bytes lowered are a, b.
func (ns *needleScan) at(data []byte, i int, a, b byte, found uint64) uint64 {
	if ns.pairs[a][b>>6]&(1<<(b&63)) == 0 {
		return found
	}
	for _, n := range ns.byFirst[a] {
		if found&(1<<n.pattern) == 0 && hasLoweredPrefix(data[i:], n.low) {
			found |= 1 << n.pattern
		}
	}
	return found
}

// mayBePresent reports whether patterns[i] may match the data present
// was taken of.
func mayBePresent(present uint64, i int) bool {
	return i >= maxScanned || present&(1<<i) != 0
}

// hasLoweredPrefix reports whether data starts with low, data's ASCII
// letters lowered.
func hasLoweredPrefix(data []byte, low string) bool {
	if len(data) < len(low) {
		return false
	}
	for j := range len(low) {
		if lowerTable[data[j]] != low[j] {
			return false
		}
	}
	return true
}

// builtinScan is the scan of Patterns, which every caller but tests uses.
var builtinScan = newNeedleScan(Patterns)

// credentialNameCache remembers matchCredentialName's answers: a pre-check
// asks it for every key of every body and frame, the keys repeat
// ("tool_input", "total_tokens" hold "to" and so went through the
// expression each time), and the answer depends on the name alone. It is
// direct-mapped, each slot swapped whole, so a reader sees a whole entry
// or none; a collision only costs a recomputation. Only names shaped like
// field names are kept (letters, '_' and '-', at most cacheableName
// bytes): the pre-check also hands it text from between two quotes that
// is no key at all, and the cache must not hold a value, which may be a
// secret.
var credentialNameCache [512]atomic.Pointer[credentialNameEntry]

// cacheableName is the longest name the cache keeps: more than the
// longest credential name.
const cacheableName = 40

type credentialNameEntry struct {
	name  string
	match bool
}

// cachedCredentialName is matchCredentialName's answer for name, from the
// cache or computed (credentialNameUncached) and kept.
func cachedCredentialName(name []byte) bool {
	if len(name) > cacheableName {
		return credentialNameUncached(name)
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-') {
			return credentialNameUncached(name)
		}
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &credentialNameCache[h%uint32(len(credentialNameCache))]
	if e := slot.Load(); e != nil && e.name == string(name) {
		return e.match
	}
	match := credentialNameUncached(name)
	slot.Store(&credentialNameEntry{name: string(name), match: match})
	return match
}
