// Package secrets is the one definition of what counts as a secret in
// anything dify-mock writes down: cassettes, the request journal and log
// lines. The recorder (mockserver/record) drops and redacts with it at
// capture and checks with it before saving; the journal and the request log
// redact with it; the linter (mockserver/internal/lint) reports with it. To recognise
// a new kind of secret, add a pattern to Patterns, a name to tokenFieldNames
// or a header to credentialHeaders; every user picks it up.
package secrets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/jsonobj"
)

// Redacted is what a scrubbed secret is replaced with.
const Redacted = "[REDACTED]"

// Pattern is one kind of secret that must never reach a cassette. The
// recorder redacts matches at capture time and refuses to save a cassette in
// which one survives; the linter reports them.
type Pattern struct {
	// Name identifies the pattern in messages. Messages never quote the
	// matched text itself.
	Name string
	// Regexp finds candidates.
	Regexp *regexp.Regexp
	// Group is the submatch that holds the secret (0: the whole match). Only
	// that part is replaced, so `"password":"x"` becomes
	// `"password":"[REDACTED]"` and the JSON stays valid.
	Group int
	// Needles, when set, are strings of which every match contains at least
	// one (compared ASCII case-insensitively): data holding none of them is
	// not searched. Redaction runs on every journaled request field, and
	// most fields hold no candidate at all, so this keeps the regexps off
	// the request path (they were a fifth of the CPU of GET /parameters).
	// A needle of a (?i) pattern must not contain k or s, which (?i) also
	// matches as the Kelvin sign and the long s.
	Needles []string
	// MayMatch, when set, is a pre-check that replaces Needles: it must
	// report true for any data in which Regexp finds a match.
	MayMatch func(data []byte) bool
}

// containsFold is bytes.Contains with ASCII case folding.
func containsFold(data []byte, needle string) bool {
	if needle == "" {
		return true
	}
	lo, up := lowerASCII(needle[0]), upperASCII(needle[0])
	for i := 0; i+len(needle) <= len(data); i++ {
		if c := data[i]; (c == lo || c == up) && bytes.EqualFold(data[i:i+len(needle)], []byte(needle)) {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// tokenFieldNames are JSON/form field names whose string values are
// credentials. The list is matched as a whole name (case-insensitive), so
// usage fields such as "total_tokens" or "time_to_first_token" are not
// touched.
const tokenFieldNames = `(?:x[_-]?)?api[_-]?key|(?:access|refresh|id|auth|session|bearer|api)[_-]?token|token|` +
	`(?:client[_-]?)?secret|(?:aws[_-]?)?secret[_-]?(?:access[_-]?)?key|access[_-]?key|private[_-]?key|` +
	`password|passwd|authorization|proxy[_-]?authorization|cookie|set[_-]?cookie`

var credentialNameRE = regexp.MustCompile(`(?i)^(?:` + tokenFieldNames + `)$`)

// credentialNameNeedles: every credential name holds one of them (ASCII
// case aside). None has a k or an s, which (?i) also matches as the Kelvin
// sign and the long s, so a name spelled with those still holds one.
var credentialNameNeedles = []string{"api", "to", "ecret", "acce", "private", "pa", "auth", "coo"}

// matchCredentialName is credentialNameRE.Match behind the needles: the
// pre-checks below try every key of a body or query, and most keys
// ("query", "user", "inputs") hold none.
func matchCredentialName(name []byte) bool { return cachedCredentialName(name) }

// credentialNameUncached is matchCredentialName without the cache.
func credentialNameUncached(name []byte) bool {
	for _, n := range credentialNameNeedles {
		if containsFold(name, n) {
			return credentialNameRE.Match(name)
		}
	}
	return false
}

// IsCredentialName reports whether a JSON field, form field or query
// parameter name conventionally holds a credential ("api_key",
// "accessToken", "password", …).
func IsCredentialName(name string) bool { return credentialNameRE.MatchString(name) }

// maxParamName is more than the longest credential name, with every
// letter written as a 3-byte rune that (?i) folds to ASCII (the Kelvin sign).
const maxParamName = 96

// mayHoldCredentialParam is the query/form pattern's pre-check: some
// parameter's name (from the start, '?' or '&' to '=') is a credential
// name. Every query has a '=', so the needle "=" sent each one through the
// regexp (a tenth of the CPU of GET /parameters?user=…); the names are
// few and short.
func mayHoldCredentialParam(data []byte) bool {
	for i, c := range data {
		if c != '=' {
			continue
		}
		j := i
		for j > 0 && i-j <= maxParamName && data[j-1] != '?' && data[j-1] != '&' {
			j--
		}
		if i-j <= maxParamName && i > j && matchCredentialName(data[j:i]) {
			return true
		}
	}
	return false
}

// mayHoldCredentialField is the JSON field pattern's pre-check: some
// key ('"', a name, '"', whitespace, ':') is a credential name. Every JSON
// body has a '"', so the needle `"` sent each one through the regexp (its
// case folding and alternation made it a twelfth of a chat request's CPU);
// keys are short and few. A match of the pattern always has such a key,
// and a name never holds a '"', so the last '"' before the closing one
// opens it.
func mayHoldCredentialField(data []byte) bool {
	for i, c := range data {
		if c != ':' {
			continue
		}
		q := i - 1
		for q >= 0 && isRESpace(data[q]) {
			q--
		}
		if q < 1 || data[q] != '"' {
			continue
		}
		from := max(0, q-maxParamName-1)
		p := bytes.LastIndexByte(data[from:q], '"')
		if p >= 0 && matchCredentialName(data[from+p+1:q]) {
			return true
		}
	}
	return false
}

// isRESpace is RE2's \s: [\t\n\f\r ].
func isRESpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// credentialHeaders are headers that carry credentials (request and
// response).
var credentialHeaders = map[string]bool{
	"Authorization":       true,
	"Cookie":              true,
	"Set-Cookie":          true,
	"X-Api-Key":           true,
	"Proxy-Authorization": true,
}

// IsCredentialHeader reports whether a header (any case) carries a
// credential and so must never be stored: the fixed list above and custom
// token headers (X-Auth-Token, X-Client-Secret…). WWW-Authenticate is a
// challenge, not a credential, and Dify sends it with every 401 (docs/api §1.2).
func IsCredentialHeader(name string) bool {
	if credentialHeaders[http.CanonicalHeaderKey(name)] {
		return true
	}
	l := strings.ToLower(name)
	if l == "www-authenticate" {
		return false
	}
	for _, s := range []string{"token", "secret", "password", "api-key", "apikey", "auth", "cookie", "session"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// Patterns are the built-in patterns, shared by the recorder's scrubber
// and the save-time/lint checks.
var Patterns = []Pattern{
	// Dify API keys: "app-" (app keys) or "dataset-" followed by random
	// letters and digits (24 in current servers; docs/api §1.1; 16 or more also
	// catches the shorter keys of older servers). No word boundaries: a key
	// glued to other text (x_app-…, app-…_y) still counts.
	{Name: "Dify API key (app-…)", Regexp: regexp.MustCompile(`(?:app|dataset)-[A-Za-z0-9]{16,}`), Needles: []string{"app-", "dataset-"}},
	{Name: "bearer token", Regexp: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{16,})`), Group: 1, Needles: []string{"bearer"}},
	{Name: "OpenAI-style key (sk-…)", Regexp: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`), Needles: []string{"sk-"}},
	{Name: "GitHub token", Regexp: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}`), Needles: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
	{Name: "Slack token", Regexp: regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`), Needles: []string{"xox"}},
	{Name: "AWS access key id", Regexp: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}`), Needles: []string{"AKIA", "ASIA"}},
	{Name: "Google API key", Regexp: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), Needles: []string{"AIza"}},
	{Name: "JSON web token", Regexp: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), Needles: []string{"eyJ"}},
	// "api_key":"…" in JSON (bodies, SSE data lines).
	{Name: "token-like JSON field", Regexp: regexp.MustCompile(`(?i)"(?:` + tokenFieldNames + `)"\s*:\s*"((?:[^"\\]|\\.)*)"`), Group: 1, MayMatch: mayHoldCredentialField},
	// The same inside a JSON-encoded string (e.g. an agent_thought's
	// tool_input) or a double-quoted YAML scalar: \"api_key\": \"…\".
	{Name: "token-like JSON field (escaped)", Regexp: regexp.MustCompile(`(?i)\\"(?:` + tokenFieldNames + `)\\"\s*:\s*\\"((?:[^"\\]|\\\\)*)\\"`), Group: 1, Needles: []string{`\"`}},
	// ?api_key=… in URLs and form-urlencoded bodies. The value stops at
	// '<' and '>' too, so a URL in a Link header keeps its ">; rel=…".
	{Name: "token-like query/form parameter", Regexp: regexp.MustCompile(`(?i)(?:^|[?&])(?:` + tokenFieldNames + `)=([^&\s"'#<>]+)`), Group: 1, MayMatch: mayHoldCredentialParam},
	// A multipart text field named like a credential.
	{Name: "token-like multipart field", Regexp: regexp.MustCompile(`(?i)form-data;\s*name="(?:` + tokenFieldNames + `)"[^\r\n]*\r?\n(?:[^\r\n]+\r?\n)*\r?\n([^\r\n]*)`), Group: 1, Needles: []string{"form-data"}},
}

// Finding is one surviving secret. It carries positions, never the
// secret.
type Finding struct {
	Pattern string
	Offset  int // byte offset of the secret in the scanned data
	Line    int // 1-based
	Column  int // 1-based, in bytes
}

func (f Finding) String() string {
	return fmt.Sprintf("line %d, column %d: %s", f.Line, f.Column, f.Pattern)
}

// secretSpan returns where pattern p's secret lies in match m (submatch
// indexes as returned by FindAllSubmatchIndex), or ok=false when the secret
// part is empty or already redacted.
func secretSpan(data []byte, p Pattern, m []int) (start, end int, ok bool) {
	start, end = m[2*p.Group], m[2*p.Group+1]
	if start < 0 || end <= start {
		return 0, 0, false
	}
	if string(data[start:end]) == Redacted {
		return 0, 0, false
	}
	return start, end, true
}

// Scan reports every match of the built-in patterns and of extra in
// data, ordered by position.
func Scan(data []byte, extra ...Pattern) []Finding {
	patterns := append(append([]Pattern(nil), Patterns...), extra...)
	out := scanPatterns(data, patterns)
	// What JSON escapes hide ("\u0061pp-…" is "app-…" to every client):
	// each escaped string is scanned decoded, and what the raw scan did not
	// already see is reported at the string.
	forEachEscapedString(data, 0, func(start int, decoded string) {
		end, _ := jsonStringAt(data, start)
		for _, df := range scanEscaped(data[start:end], decoded, patterns, 1) {
			f := Finding{Pattern: df.Pattern + " (JSON-escaped)"}
			f.Offset, f.Line, f.Column = position(data, start)
			out = append(out, f)
		}
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out
}

// scanEscaped returns the findings in decoded (the text of the JSON string
// literal lit) that the raw scan of lit does not have, one level of
// JSON-in-JSON deeper each call.
func scanEscaped(lit []byte, decoded string, patterns []Pattern, depth int) []Finding {
	raw := map[string]int{}
	for _, f := range scanPatterns(lit, patterns) {
		raw[f.Pattern]++
	}
	var out []Finding
	for _, f := range scanPatterns([]byte(decoded), patterns) {
		if raw[f.Pattern] > 0 {
			raw[f.Pattern]--
			continue
		}
		out = append(out, f)
	}
	forEachEscapedString([]byte(decoded), depth, func(start int, inner string) {
		in := []byte(decoded)
		end, _ := jsonStringAt(in, start)
		out = append(out, scanEscaped(in[start:end], inner, patterns, depth+1)...)
	})
	return out
}

// position is the offset, 1-based line and byte column of data[start].
func position(data []byte, start int) (offset, line, col int) {
	line = 1 + bytes.Count(data[:start], []byte("\n"))
	col = start + 1
	if i := bytes.LastIndexByte(data[:start], '\n'); i >= 0 {
		col = start - i
	}
	return start, line, col
}

// jsonStrings calls fn with the bounds of every JSON string literal in
// data, in order: in JSON bodies, SSE data lines and double-quoted YAML
// scalars alike. A literal is what the expression "(?:[^"\\\n]|\\.)*"
// matches, leftmost first, without overlaps (FuzzJSONStrings holds it to
// that); scanned by hand, because the expression's backtracking over every
// frame hybrid mode relays was a third of the cost of redacting it.
func jsonStrings(data []byte, fn func(start, end int)) {
	for from := 0; ; {
		q := bytes.IndexByte(data[from:], '"')
		if q < 0 {
			return
		}
		start := from + q
		if end, ok := jsonStringAt(data, start); ok {
			fn(start, end)
			from = end
		} else {
			from = start + 1
		}
	}
}

// jsonStringAt is the end of the JSON string literal opening at data[start]
// (a '"'), and whether one closes there: a line end or the end of data
// first means none.
func jsonStringAt(data []byte, start int) (end int, ok bool) {
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '"':
			return i + 1, true
		case '\n':
			return 0, false
		case '\\':
			// An escape takes the next character, whatever it is but a
			// line end; a character of several bytes continues with bytes
			// none of which is special here.
			if i+1 >= len(data) || data[i+1] == '\n' {
				return 0, false
			}
			i++
		}
	}
	return 0, false
}

// maxEscapeDepth bounds how many JSON-in-JSON levels are decoded (a tool's
// input is a JSON string inside the event's JSON, which may hold another).
const maxEscapeDepth = 3

// forEachEscapedString calls fn with the start of every JSON string literal
// in data that holds a backslash escape, and its decoded text.
func forEachEscapedString(data []byte, depth int, fn func(start int, decoded string)) {
	if depth >= maxEscapeDepth || bytes.IndexByte(data, '\\') < 0 {
		return
	}
	jsonStrings(data, func(start, end int) {
		lit := data[start:end]
		if bytes.IndexByte(lit, '\\') < 0 {
			return
		}
		decoded, ok := jsonobj.Unquote(lit)
		if !ok {
			return
		}
		fn(start, decoded)
	})
}

// redactEscaped redacts inside every escaped JSON string of data: decoded,
// redacted, re-encoded. Levels of JSON-in-JSON are handled by recursion.
func redactEscaped(data []byte, patterns []Pattern, scan *needleScan, depth int) []byte {
	if depth >= maxEscapeDepth || bytes.IndexByte(data, '\\') < 0 {
		return data
	}
	var out []byte
	last := 0
	jsonStrings(data, func(start, end int) {
		lit := data[start:end]
		if bytes.IndexByte(lit, '\\') < 0 {
			return
		}
		decoded, ok := jsonobj.Unquote(lit)
		if !ok {
			return
		}
		red := redactPlain([]byte(decoded), patterns, scan)
		red = redactEscaped(red, patterns, scan, depth+1)
		if string(red) == decoded {
			return
		}
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		if e.Encode(string(red)) != nil {
			return
		}
		out = append(out, data[last:start]...)
		out = append(out, bytes.TrimSuffix(enc.Bytes(), []byte("\n"))...)
		last = end
	})
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

func scanPatterns(data []byte, patterns []Pattern) []Finding {
	var out []Finding
	for _, p := range patterns {
		for _, m := range p.Regexp.FindAllSubmatchIndex(data, -1) {
			start, _, ok := secretSpan(data, p, m)
			if !ok {
				continue
			}
			off, line, col := position(data, start)
			out = append(out, Finding{Pattern: p.Name, Offset: off, Line: line, Column: col})
		}
	}
	return out
}

// Redact replaces the secret part of every match of patterns in data
// with Redacted. With no patterns it applies Patterns. It returns data
// itself when nothing matched.
// Secrets hidden by JSON escapes are redacted too: the string is decoded,
// redacted and re-encoded.
func Redact(data []byte, patterns ...Pattern) []byte {
	scan := builtinScan
	if len(patterns) == 0 {
		patterns = Patterns
	} else {
		scan = newNeedleScan(patterns)
	}
	return redactEscaped(redactPlain(data, patterns, scan), patterns, scan, 0)
}

// redactPlain redacts every pattern's matches in data, the patterns none
// of whose needles is in data skipped (scan).
func redactPlain(data []byte, patterns []Pattern, scan *needleScan) []byte {
	present := scan.present(data)
	for i, p := range patterns {
		if !mayBePresent(present, i) || (p.MayMatch != nil && !p.MayMatch(data)) {
			continue
		}
		if out, changed := redactOne(data, p); changed {
			data = out
			present = scan.present(data)
		}
	}
	return data
}

// redactOne redacts p's matches in data, in a new slice; it reports
// whether there were any.
func redactOne(data []byte, p Pattern) ([]byte, bool) {
	matches := p.Regexp.FindAllSubmatchIndex(data, -1)
	if len(matches) == 0 {
		return data, false
	}
	var out []byte
	last := 0
	for _, m := range matches {
		start, end, ok := secretSpan(data, p, m)
		if !ok {
			continue
		}
		out = append(out, data[last:start]...)
		out = append(out, Redacted...)
		last = end
	}
	if out == nil {
		return data, false
	}
	return append(out, data[last:]...), true
}
