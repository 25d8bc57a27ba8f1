// Package jsonobj decodes the members of a JSON object that a caller names,
// as encoding/json decodes them into a struct, without encoding/json's
// validation and reflection for the values a Dify frame is made of:
// strings, integers and empty containers.
//
// The live lane (hybrid mode) reads a few fields of every frame it relays,
// and encoding/json's validation, reflection and copies were a quarter of
// the mock's CPU per relayed frame (bench/history.md, "Performance round
// five"). Here the object is validated by a scanner of its own, those
// values are decoded directly, and every other value of a named member
// goes through encoding/json on its own bytes, so the result is what
// json.Unmarshal into the struct gives, field by field (FuzzDecode and
// FuzzUnquote hold the two together).
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Fields names the members a caller decodes, as a struct's json tags name
// its fields. Make one per struct type, once (NewFields), and decode with
// it for every object.
type Fields struct {
	names []string
	exact map[string]int
	// folded holds the names as encoding/json matches a key to a field
	// when no name is equal to it: ASCII letters upper-cased (keys beyond
	// ASCII are compared with bytes.EqualFold, as encoding/json does).
	folded map[string]bool
}

// NewFields names the members to decode, in the order Decode's into
// gives their destinations.
func NewFields(names ...string) *Fields {
	fs := &Fields{names: names, exact: map[string]int{}, folded: map[string]bool{}}
	for i, n := range names {
		fs.exact[n] = i
		fs.folded[string(upperASCII(nil, []byte(n)))] = true
	}
	return fs
}

// Names are the names, in NewFields' order.
func (fs *Fields) Names() []string { return append([]string(nil), fs.names...) }

// upperASCII appends b with ASCII letters upper-cased to dst.
func upperASCII(dst, b []byte) []byte {
	for _, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// foldsToName reports whether key, equal to no name, would still be
// matched to one by encoding/json (case-insensitively, bytes.EqualFold).
func (fs *Fields) foldsToName(key []byte) bool {
	var buf [64]byte
	if len(key) <= len(buf) && !hasNonASCII(key) {
		return fs.folded[string(upperASCII(buf[:0], key))]
	}
	for _, n := range fs.names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// ErrSyntax is Decode's answer for data that is not valid JSON, as
// json.Unmarshal answers a *json.SyntaxError: nothing was decoded.
var ErrSyntax = errors.New("jsonobj: invalid JSON")

// maxDepth is encoding/json's nesting bound: deeper data is a syntax error
// there.
const maxDepth = 10000

// Decode decodes data into into (one pointer per name, in NewFields'
// order) as json.Unmarshal decodes data into a struct with those fields. A
// *string or **string takes a string value (Unquote), a *int or *int64 a
// plain integer, a *map[string]any or *[]string an empty container, without
// encoding/json; any other value of a named member goes through
// json.Unmarshal from the member's bytes.
//
// handled is false when Decode leaves data to encoding/json (not an object,
// or a key written with escapes or matching a field only
// case-insensitively): nothing was written, and the caller unmarshals data
// itself. When handled is true, err is ErrSyntax (nothing written) or the
// first error encoding/json gave a member's value (a type mismatch: the
// member is left as it was and the others are decoded, as json.Unmarshal
// does).
func (fs *Fields) Decode(data []byte, into []any) (handled bool, err error) {
	s := scanner{data: data}
	s.space()
	if s.peek() != '{' {
		return false, nil
	}
	// One validating pass finds the named members; nothing is written
	// until the whole object is known to be valid. An escaped key, or one
	// that only folds to a field's name, leaves the object to
	// encoding/json.
	var (
		store [32]member
		found = store[:0]
	)
	s.i++
	s.space()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			if s.peek() != '"' {
				return true, ErrSyntax
			}
			ks := s.i
			escaped, ok := s.validStr()
			if !ok {
				return true, ErrSyntax
			}
			key := data[ks+1 : s.i-1]
			s.space()
			if s.peek() != ':' {
				return true, ErrSyntax
			}
			s.i++
			s.space()
			start := s.i
			if !s.value(1) {
				return true, ErrSyntax
			}
			if escaped {
				return false, nil
			}
			if i, ok := fs.exact[string(key)]; ok {
				found = append(found, member{field: i, start: start, end: s.i})
			} else if fs.foldsToName(key) {
				return false, nil
			}
			s.space()
			if s.peek() == '}' {
				s.i++
				break
			}
			if s.peek() != ',' {
				return true, ErrSyntax
			}
			s.i++
			s.space()
		}
	}
	s.space()
	if s.i != len(data) {
		return true, ErrSyntax
	}
	for _, m := range found {
		if e := decodeValue(data[m.start:m.end], into[m.field]); e != nil && err == nil {
			err = e
		}
	}
	return true, err
}

// decodeValue decodes the valid JSON value v into into as json.Unmarshal
// does: strings, plain integers and empty containers directly, anything
// else through it.
func decodeValue(v []byte, into any) error {
	switch p := into.(type) {
	case *string:
		if str, ok := Unquote(v); ok {
			*p = str
			return nil
		}
	case **string:
		if str, ok := Unquote(v); ok {
			if *p == nil {
				*p = new(string)
			}
			**p = str
			return nil
		}
	case *int:
		if n, ok := plainInt(v); ok {
			*p = int(n)
			return nil
		}
	case *int64:
		if n, ok := plainInt(v); ok {
			*p = n
			return nil
		}
	// Empty containers, as a Dify frame has them (tool_labels,
	// message_files): encoding/json makes a nil map or slice an empty one
	// and keeps a map's entries.
	case *map[string]any:
		if string(v) == "{}" {
			if *p == nil {
				*p = map[string]any{}
			}
			return nil
		}
	case *[]string:
		if string(v) == "[]" {
			if *p == nil {
				*p = []string{}
			} else {
				*p = (*p)[:0]
			}
			return nil
		}
	}
	return json.Unmarshal(v, into)
}

// plainInt is the valid JSON number v when it is an integer that fits an
// int (on the platforms where int has 64 bits, an int64 too); json.Unmarshal
// answers the others.
func plainInt(v []byte) (int64, bool) {
	if bytes.ContainsAny(v, ".eE") {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, strconv.IntSize)
	return n, err == nil
}

// member is a named member's field and its value's bounds.
type member struct{ field, start, end int }

// scanner walks JSON without recursion: a frame's goroutine keeps a small
// stack, and a deep document must not grow it.
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) peek() byte {
	if s.i < len(s.data) {
		return s.data[s.i]
	}
	return 0
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value skips the value at s.i, nested in depth containers, and reports
// whether it is valid. Containers are tracked in a bit stack (1 = object),
// one word until 64 levels.
func (s *scanner) value(depth int) bool {
	var (
		low  uint64   // the first 64 levels
		high []uint64 // the levels beyond, when there are any
	)
	level := 0 // open containers of this value
	isObject := func() bool {
		l := level - 1
		if l < 64 {
			return low&(1<<l) != 0
		}
		l -= 64
		return high[l/64]&(1<<(l%64)) != 0
	}
	push := func(object bool) bool {
		if depth+level+1 > maxDepth {
			return false
		}
		l := level
		level++
		var bit uint64
		if object {
			bit = 1
		}
		if l < 64 {
			low = low&^(1<<l) | bit<<l
			return true
		}
		l -= 64
		for len(high) <= l/64 {
			high = append(high, 0)
		}
		high[l/64] = high[l/64]&^(1<<(l%64)) | bit<<(l%64)
		return true
	}
	// key reads an object member's key and its colon.
	key := func() bool {
		s.space()
		if s.peek() != '"' {
			return false
		}
		if _, ok := s.validStr(); !ok {
			return false
		}
		s.space()
		if s.peek() != ':' {
			return false
		}
		s.i++
		return true
	}
	for {
		// A value starts here.
		s.space()
		switch c := s.peek(); {
		case c == '{':
			if !push(true) {
				return false
			}
			s.i++
			s.space()
			if s.peek() == '}' {
				s.i++
				level--
				break
			}
			if !key() {
				return false
			}
			continue
		case c == '[':
			if !push(false) {
				return false
			}
			s.i++
			s.space()
			if s.peek() == ']' {
				s.i++
				level--
				break
			}
			continue
		case c == '"':
			if _, ok := s.validStr(); !ok {
				return false
			}
		case c == 't':
			if !s.literal("true") {
				return false
			}
		case c == 'f':
			if !s.literal("false") {
				return false
			}
		case c == 'n':
			if !s.literal("null") {
				return false
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if !s.number() {
				return false
			}
		default:
			return false
		}
		// A value ended: close what it ends, or go on to the next one.
		for {
			if level == 0 {
				return true
			}
			s.space()
			c := s.peek()
			if c == ',' {
				s.i++
				if isObject() && !key() {
					return false
				}
				break
			}
			if (isObject() && c == '}') || (!isObject() && c == ']') {
				s.i++
				level--
				continue
			}
			return false
		}
	}
}

// validStr passes over the string at s.i and reports whether it has
// escapes and whether it is a valid JSON string: no control characters,
// only JSON's escapes. Bytes beyond ASCII are not checked, as
// encoding/json does not.
func (s *scanner) validStr() (escaped, ok bool) {
	d := s.data
	i := s.i + 1
	for i < len(d) {
		c := d[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		i++
		switch c {
		case '"':
			s.i = i
			return escaped, true
		case '\\':
			escaped = true
			if i >= len(d) {
				return escaped, false
			}
			e := d[i]
			i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 0; k < 4; k++ {
					if i >= len(d) || !isHex(d[i]) {
						return escaped, false
					}
					i++
				}
			default:
				return escaped, false
			}
		default: // a control character
			return escaped, false
		}
	}
	return escaped, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.data[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// number passes over a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.peek() == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits passes over one or more digits.
func (s *scanner) digits() bool {
	from := s.i
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		s.i++
	}
	return s.i > from
}

// Unquote decodes the JSON string literal lit (quotes included, nothing
// around them) as json.Unmarshal decodes it into a string: escapes
// resolved, a lone or broken surrogate and each invalid UTF-8 byte as
// U+FFFD. ok is false where json.Unmarshal fails: lit is not one valid
// string literal.
func Unquote(lit []byte) (string, bool) {
	s := scanner{data: lit}
	if s.peek() != '"' {
		return "", false
	}
	escaped, ok := s.validStr()
	if !ok || s.i != len(lit) {
		return "", false
	}
	in := lit[1 : len(lit)-1]
	if !escaped && (!hasNonASCII(in) || utf8.Valid(in)) {
		return string(in), true
	}
	return unescape(in), true
}

// unescape is the text of a valid string literal's contents.
func unescape(in []byte) string {
	out := make([]byte, 0, len(in)+8)
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c == '\\':
			e := in[i+1]
			i += 2
			switch e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(in[i:])
				i += 4
				if utf16.IsSurrogate(r) {
					// A pair is two escapes; anything else leaves the first
					// half alone, and the next escape is read on its own.
					if i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' {
						if pair := utf16.DecodeRune(r, hex4(in[i+2:])); pair != utf8.RuneError {
							out = utf8.AppendRune(out, pair)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default: // '"', '\\', '/'
				out = append(out, e)
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(in[i:])
			out = utf8.AppendRune(out, r)
			i += n
		}
	}
	return string(out)
}

// hex4 is the value of the four hex digits b starts with (validStr saw
// them).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
