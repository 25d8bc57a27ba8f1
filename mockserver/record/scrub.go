package record

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
)

// RuleSeparator splits a redaction rule into pattern and replacement.
const RuleSeparator = " => "

// Rule is a user redaction rule: every match of Pattern in a captured body,
// URL or header value is replaced by Replacement (regexp.Expand syntax: $1,
// ${name}). Rules run after the built-in scrubbing.
type Rule struct {
	Pattern     *regexp.Regexp
	Replacement string
	// custom is true when the rule names its own replacement. Only rules
	// without one are enforced at save time: a custom replacement may
	// match its own pattern (an e-mail replaced by a fake e-mail).
	custom bool
}

// ParseRule reads "REGEX" or "REGEX => REPLACEMENT" (split at the last
// " => "). Without a replacement, matches become "[REDACTED]".
func ParseRule(s string) (Rule, error) {
	pat, repl, custom := s, secrets.Redacted, false
	if i := strings.LastIndex(s, RuleSeparator); i >= 0 {
		pat, repl, custom = s[:i], s[i+len(RuleSeparator):], true
	}
	if pat == "" {
		return Rule{}, fmt.Errorf("redaction rule %q: empty pattern", s)
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return Rule{}, fmt.Errorf("redaction rule %q: %v", s, err)
	}
	if re.MatchString("") {
		return Rule{}, fmt.Errorf("redaction rule %q: the pattern matches the empty string", s)
	}
	return Rule{Pattern: re, Replacement: repl, custom: custom}, nil
}

// LoadRuleFile reads one rule per line; blank lines and lines starting with
// '#' are ignored.
func LoadRuleFile(path string) ([]Rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("redaction file: %w", err)
	}
	var rules []Rule
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		r, err := ParseRule(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("redaction file %s: %w", path, err)
	}
	return rules, nil
}

var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Proxy-Connection": true,
}

func isHopByHop(canonical string) bool { return hopByHop[canonical] }

// scrubber is the single place captured data passes through on its way to a
// cassette.
type scrubber struct {
	key   []byte
	rules []Rule
	// enforced are the patterns the save-time check looks for besides the
	// built-in ones.
	enforced []secrets.Pattern
}

// minLiteralKey is the shortest upstream key searched for literally; a
// shorter one would match ordinary text (Dify's keys have 28 characters, and
// the built-in patterns cover them anyway).
const minLiteralKey = 8

func newScrubber(key string, rules []Rule) *scrubber {
	s := &scrubber{rules: rules}
	if len(key) >= minLiteralKey {
		s.key = []byte(key)
		s.enforced = append(s.enforced, secrets.Pattern{
			Name:   "the upstream API key",
			Regexp: regexp.MustCompile(`(?i)` + regexp.QuoteMeta(key)),
		})
	}
	for _, r := range rules {
		if !r.custom {
			s.enforced = append(s.enforced, secrets.Pattern{Name: "redaction rule " + r.Pattern.String(), Regexp: r.Pattern})
		}
	}
	return s
}

// bytes returns a scrubbed copy of b: the literal upstream key, then the
// built-in patterns, then the user's rules.
func (s *scrubber) bytes(b []byte) []byte {
	out := b
	if len(s.key) > 0 {
		out = bytes.ReplaceAll(out, s.key, []byte(secrets.Redacted))
	}
	out = secrets.Redact(out)
	for _, r := range s.rules {
		out = r.Pattern.ReplaceAll(out, []byte(r.Replacement))
	}
	if len(b) > 0 && len(out) > 0 && &out[0] == &b[0] {
		out = append([]byte(nil), out...) // never alias the caller's buffer
	}
	return out
}

func (s *scrubber) string(v string) string { return string(s.bytes([]byte(v))) }

// scrubbed is b scrubbed as bytes does it, but b itself when it holds
// nothing to scrub: a relayed frame, which holds no secret, is not copied.
func (s *scrubber) scrubbed(b []byte) []byte {
	if len(s.rules) > 0 || (len(s.key) > 0 && bytes.Contains(b, s.key)) {
		return s.bytes(b)
	}
	return secrets.Redact(b) // b itself when nothing matched
}

// header returns h without credential, hop-by-hop, length and X-Dify-Mock-*
// headers, with the remaining values scrubbed. A header whose name carries
// a secret is dropped as well.
func (s *scrubber) header(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		ck := http.CanonicalHeaderKey(k)
		if secrets.IsCredentialHeader(ck) || isHopByHop(ck) || ck == "Content-Length" || strings.HasPrefix(ck, cassette.HeaderPrefix) {
			continue
		}
		if s.string(ck) != ck {
			continue
		}
		for _, v := range vs {
			out[ck] = append(out[ck], s.string(v))
		}
	}
	return out
}

// url scrubs a recorded URL: credentials, token-like query parameters and
// anything the text rules find.
func (s *scrubber) url(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		u.User = nil
		raw = u.String()
	}
	return s.string(raw)
}

// interaction returns a scrubbed deep copy of in (the go-vcr recording
// transport's interactions).
func (s *scrubber) interaction(in *vcr.Interaction) *vcr.Interaction {
	return &vcr.Interaction{
		Request: vcr.Request{
			Body:    s.string(in.Request.Body),
			Form:    s.form(in.Request.Form),
			Headers: s.header(in.Request.Headers),
			URL:     s.url(in.Request.URL),
			Method:  in.Request.Method,
		},
		Response: vcr.Response{
			Body:     s.string(in.Response.Body),
			Headers:  s.header(in.Response.Headers),
			Status:   in.Response.Status,
			Code:     in.Response.Code,
			Duration: in.Response.Duration,
		},
	}
}

// exchange is the scrubbed interaction of x: every interaction the recorder
// builds itself (chat turns, uploads, captures) comes through here. Stream
// frames are scrubbed one by one (lengths are recomputed by EncodeFrames);
// a redaction that removes the blank line ending a frame is an error, since
// the frame would swallow its successor on replay.
func (s *scrubber) exchange(x cassette.Exchange) (*vcr.Interaction, error) {
	clean := cassette.Exchange{
		Method:         x.Method,
		URL:            s.url(x.URL),
		RequestHeader:  s.header(x.RequestHeader),
		RequestBody:    s.bytes(x.RequestBody),
		Form:           s.form(x.Form),
		UploadSummary:  x.UploadSummary,
		Status:         x.Status,
		ResponseHeader: s.header(x.ResponseHeader),
		HeadersAt:      x.HeadersAt,
		Body:           s.bytes(x.Body),
	}
	if len(x.Frames) > 0 {
		clean.Frames = make([]cassette.RecordedFrame, len(x.Frames))
	}
	for i, f := range x.Frames {
		raw := s.bytes(f.Raw)
		if endsFrame(f.Raw) && !endsFrame(raw) {
			return nil, fmt.Errorf("a redaction rule removed the blank line that ends frame %d", i)
		}
		clean.Frames[i] = cassette.RecordedFrame{Offset: f.Offset, Raw: raw}
	}
	return clean.Interaction(), nil
}

// form scrubs form fields; a field named like a credential loses its value.
func (s *scrubber) form(form url.Values) url.Values {
	out := url.Values{}
	for k, vs := range form {
		sk := s.string(k)
		for _, v := range vs {
			if secrets.IsCredentialName(k) {
				v = secrets.Redacted
			}
			out[sk] = append(out[sk], s.string(v))
		}
	}
	return out
}
