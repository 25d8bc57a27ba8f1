package store

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/difyops/terraform-provider-dify/dify"
)

// messageSize is jsonSize(m), the size a stored message counts for,
// counted field by field instead of by encoding it. Why: a chat turn's
// message is sized at the end of every stream, and encoding/json's
// reflection over its agent thoughts and their tool labels (maps, encoded
// with sorted keys) was a quarter of the mock's own CPU per chat turn
// (BenchmarkChatRequest), spent at the moment a cohort of streams ends
// together (bench/results.md, "Issue 21, tenth round"). It counts exactly
// what json.Marshal writes (TestMessageSizeIsTheMarshalledLength, a fuzz
// target, and a test that fills every field, so a field added to
// dify.Message or dify.AgentThoughtRecord without a count here fails);
// fields a New Agent turn rarely has (files, feedback, citations, extra
// contents) are left to jsonSize.
func messageSize(m dify.Message) int64 {
	n := int64(len(`{}`)) + 19 // 20 fields, 19 commas
	n += fieldSize("id") + stringSize(m.ID)
	n += fieldSize("conversation_id") + stringSize(m.ConversationID)
	n += fieldSize("parent_message_id") + stringPtrSize(m.ParentMessageID)
	n += fieldSize("inputs") + mapSize(m.Inputs)
	n += fieldSize("query") + stringSize(m.Query)
	n += fieldSize("answer") + stringSize(m.Answer)
	n += fieldSize("feedback") + orNull(m.Feedback == nil, m.Feedback)
	n += fieldSize("retriever_resources") + orNull(m.RetrieverResources == nil, m.RetrieverResources)
	n += fieldSize("agent_thoughts") + arraySize(m.AgentThoughts, thoughtSize)
	n += fieldSize("message_files") + orNull(m.MessageFiles == nil, m.MessageFiles)
	n += fieldSize("created_at") + intSize(m.CreatedAt)
	n += fieldSize("status") + stringSize(m.Status)
	n += fieldSize("error") + stringPtrSize(m.Error)
	n += fieldSize("message_tokens") + intSize(m.MessageTokens)
	n += fieldSize("answer_tokens") + intSize(m.AnswerTokens)
	n += fieldSize("total_tokens") + intSize(m.TotalTokens)
	n += fieldSize("provider_response_latency") + pyFloatSize(m.ProviderResponseLatency)
	n += fieldSize("total_price") + stringPtrSize(m.TotalPrice)
	n += fieldSize("currency") + stringPtrSize(m.Currency)
	n += fieldSize("extra_contents") + orNull(m.ExtraContents == nil, m.ExtraContents)
	return n
}

// thoughtSize is jsonSize(*t).
func thoughtSize(t *dify.AgentThoughtRecord) int64 {
	n := int64(len(`{}`)) + 10 // 11 fields
	n += fieldSize("id") + stringSize(t.ID)
	n += fieldSize("chain_id") + stringPtrSize(t.ChainID)
	n += fieldSize("message_id") + stringSize(t.MessageID)
	n += fieldSize("position") + intSize(int64(t.Position))
	n += fieldSize("thought") + stringSize(t.Thought)
	n += fieldSize("tool") + stringSize(t.Tool)
	n += fieldSize("tool_labels") + mapSize(t.ToolLabels)
	n += fieldSize("tool_input") + stringSize(t.ToolInput)
	n += fieldSize("created_at") + intSize(t.CreatedAt)
	n += fieldSize("observation") + stringSize(t.Observation)
	n += fieldSize("files") + arraySize(t.Files, func(f *string) int64 { return stringSize(*f) })
	return n
}

// nullSize is the size of JSON's null (a nil pointer, slice or map).
const nullSize = int64(len("null"))

// fieldSize is the size of `"name":` for a key that needs no escaping.
func fieldSize(name string) int64 { return int64(len(name)) + 3 }

// orNull is the size of null when null is set, else jsonSize(v).
func orNull(null bool, v any) int64 {
	if null {
		return nullSize
	}
	return jsonSize(v)
}

func stringPtrSize(s *string) int64 {
	if s == nil {
		return nullSize
	}
	return stringSize(*s)
}

// stringSize is the size of s as encoding/json writes it: quoted, with
// <, > and & escaped for HTML (\u003c), control characters as \n, \r,
// \t, \b, \f or \u00XX, invalid UTF-8 as \ufffd, and U+2028 and U+2029
// escaped.
func stringSize(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			n += int64(asciiSize[b])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6 // \ufffd, \u2028, \u2029
		} else {
			n += int64(size)
		}
		i += size
	}
	return n
}

// asciiSize is the encoded size of each ASCII byte in a JSON string.
var asciiSize = func() (t [utf8.RuneSelf]uint8) {
	for b := range t {
		switch {
		case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f':
			t[b] = 2
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			t[b] = 6
		default:
			t[b] = 1
		}
	}
	return t
}()

func intSize(v int64) int64 {
	var buf [24]byte
	return int64(len(strconv.AppendInt(buf[:0], v, 10)))
}

// floatSize is a float64 as encoding/json writes it: the shortest form,
// in exponent form below 1e-6 and from 1e21, with a two-digit negative
// exponent shortened (1e-07 is written 1e-7). NaN and infinities, which
// it refuses, count 0.
func floatSize(f float64) int64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			return int64(n - 1)
		}
	}
	return int64(len(b))
}

// pyFloatSize is a dify.Float as its MarshalJSON writes it (Python's
// float repr); NaN and infinities, which it refuses, count 0.
func pyFloatSize(f dify.Float) int64 {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return 0
	}
	return int64(len(dify.PythonFloat(float64(f))))
}

// anySize is jsonSize(v) for the values JSON decodes to (maps, slices,
// strings, float64s, bools, nil) and the few Go values a cassette or a
// request puts beside them; anything else is left to jsonSize.
func anySize(v any) int64 {
	switch v := v.(type) {
	case nil:
		return nullSize
	case string:
		return stringSize(v)
	case bool:
		if v {
			return int64(len("true"))
		}
		return int64(len("false"))
	case float64:
		return floatSize(v)
	case int:
		return intSize(int64(v))
	case int64:
		return intSize(v)
	case map[string]any:
		return mapSize(v)
	case []any:
		return arraySize(v, func(e *any) int64 { return anySize(*e) })
	}
	return jsonSize(v)
}

// arraySize is jsonSize(s), with size the size of one element: null for a
// nil slice.
func arraySize[T any](s []T, size func(*T) int64) int64 {
	if s == nil {
		return nullSize
	}
	n := int64(len(`[]`)) + int64(max(len(s)-1, 0))
	for i := range s {
		n += size(&s[i])
	}
	return n
}

// mapSize is jsonSize(m): null for a nil map; the keys are written sorted,
// which does not change the size.
func mapSize(m map[string]any) int64 {
	if m == nil {
		return nullSize
	}
	n := int64(len(`{}`)) + int64(max(len(m)-1, 0))
	for k, v := range m {
		n += stringSize(k) + 1 + anySize(v)
	}
	return n
}
