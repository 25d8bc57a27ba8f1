package author

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Dify's SSE payloads have a fixed key order (docs/api §1.5) and one of two
// serializer styles, so events are written through this small ordered JSON
// writer instead of encoding/json (which sorts map keys and has no
// json.dumps style).

// style is a JSON serializer style as Dify servers produced it (docs/api §1.5).
type style int

const (
	// styleCompact is orjson's output (newer servers, New Agent): no
	// whitespace, raw UTF-8.
	styleCompact style = iota
	// stylePython is Python's json.dumps with default arguments (older
	// servers, legacy agent-chat): ", " and ": " separators, every non-ASCII
	// character escaped as \uXXXX.
	stylePython
	// stylePythonUTF8 is json.dumps(..., ensure_ascii=False): Python
	// separators but raw UTF-8; legacy tool_input/observation texts use it.
	stylePythonUTF8
)

// member is one key of an ordered object.
type member struct {
	Key   string
	Value any
}

// object is a JSON object whose keys keep their order.
type object []member

// pyFloat is a float written the way Python prints floats ("1.0", "0.35").
type pyFloat float64

// encode renders v. Supported values: nil, bool, int, int64, string,
// pyFloat, object, []any, []string.
func encode(v any, s style) string {
	var b strings.Builder
	writeValue(&b, v, s)
	return b.String()
}

func writeValue(b *strings.Builder, v any, s style) {
	itemSep, keySep := ",", ":"
	if s != styleCompact {
		itemSep, keySep = ", ", ": "
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case pyFloat:
		b.WriteString(formatPyFloat(float64(x)))
	case string:
		writeString(b, x, s)
	case object:
		b.WriteByte('{')
		for i, m := range x {
			if i > 0 {
				b.WriteString(itemSep)
			}
			writeString(b, m.Key, s)
			b.WriteString(keySep)
			writeValue(b, m.Value, s)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(itemSep)
			}
			writeValue(b, e, s)
		}
		b.WriteByte(']')
	case []string:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(itemSep)
			}
			writeString(b, e, s)
		}
		b.WriteByte(']')
	default:
		panic(fmt.Sprintf("author: cannot encode %T", v))
	}
}

// formatPyFloat mirrors Python's repr for the finite floats we write.
func formatPyFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	out := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(out, ".e") {
		out += ".0"
	}
	return out
}

func writeString(b *strings.Builder, s string, st style) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				fmt.Fprintf(b, `\u%04x`, r)
			case st == stylePython && r >= 0x7f:
				// ensure_ascii: DEL and everything above ASCII, astral
				// characters as a surrogate pair, lower-case hex.
				if r > 0xffff {
					r -= 0x10000
					fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				} else {
					fmt.Fprintf(b, `\u%04x`, r)
				}
			case r == utf8.RuneError:
				b.WriteString("\ufffd")
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// nodeValue converts a YAML node into a value for encode, keeping mapping
// key order so authors control the order of keys they write.
func nodeValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0])
	case yaml.AliasNode:
		return nodeValue(n.Alias)
	case yaml.MappingNode:
		obj := object{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping keys must be plain strings", k.Line)
			}
			v, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			obj = append(obj, member{k.Value, v})
		}
		return obj, nil
	case yaml.SequenceNode:
		list := []any{}
		for _, c := range n.Content {
			v, err := nodeValue(c)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var v bool
			err := n.Decode(&v)
			return v, err
		case "!!int":
			var v int64
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return v, nil
		case "!!float":
			var v float64
			if err := n.Decode(&v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("line %d: %q is not a finite number", n.Line, n.Value)
			}
			return pyFloat(v), nil
		default:
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}
