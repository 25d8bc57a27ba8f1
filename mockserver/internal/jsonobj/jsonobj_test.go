package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// frame has the kinds of fields the live lane decodes: plain strings,
// optional strings, numbers and nested values.
type frame struct {
	Event          string         `json:"event"`
	ConversationID string         `json:"conversation_id"`
	Answer         *string        `json:"answer"`
	Position       int            `json:"position"`
	CreatedAt      int64          `json:"created_at"`
	Labels         map[string]any `json:"tool_labels"`
	Files          []string       `json:"message_files"`
	Files2         []string       `json:"files"`
	Metadata       *struct {
		Usage *struct {
			Total int `json:"total_tokens"`
		} `json:"usage"`
	} `json:"metadata"`
}

var frameFields = NewFields("event", "conversation_id", "answer", "position", "created_at", "tool_labels", "message_files", "files", "metadata")

func (f *frame) decode(data []byte) (bool, error) {
	return frameFields.Decode(data, []any{&f.Event, &f.ConversationID, &f.Answer, &f.Position, &f.CreatedAt, &f.Labels, &f.Files, &f.Files2, &f.Metadata})
}

// valid is the scanner's answer to json.Valid: one value with optional
// white space around it. Decode validates member values with it, so
// holding it to json.Valid on any input tests the scanner beyond objects.
func valid(data []byte) bool {
	s := scanner{data: data}
	s.space()
	if !s.value(0) {
		return false
	}
	s.space()
	return s.i == len(data)
}

// decodeBoth decodes data with json.Unmarshal and with Decode (and
// json.Unmarshal where Decode leaves it), and fails t where they differ.
func decodeBoth(t *testing.T, data []byte) (got frame, handled bool, err error) {
	t.Helper()
	var want frame
	wantErr := json.Unmarshal(data, &want)
	handled, err = got.decode(data)
	if !handled {
		err = json.Unmarshal(data, &got)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v, encoding/json %+v", data, got, want)
	}
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, encoding/json's %v", data, err, wantErr)
	}
	var syntax *json.SyntaxError
	if errors.As(wantErr, &syntax) != errors.Is(err, ErrSyntax) && handled {
		t.Fatalf("%q: error %v, encoding/json's %v", data, err, wantErr)
	}
	if valid(data) != json.Valid(data) {
		t.Fatalf("%q: valid %v, json.Valid %v", data, valid(data), json.Valid(data))
	}
	return got, handled, err
}

var seeds = []string{
	`{"event":"agent_message","conversation_id":"c1","answer":"Hi","position":1,"created_at":1764471600}`,
	`{"event":"agent_thought","tool_labels":{"search":{"en_US":"Search"}},"message_files":[],"answer":null}`,
	`{"tool_labels":{},"message_files":[],"files":null}`,
	`{"tool_labels":{"a":1},"tool_labels":{},"message_files":["x"],"message_files":[]}`,
	`{"tool_labels":{ },"message_files":[ ],"files":[]}`,
	`{"event":"message_end","metadata":{"usage":{"total_tokens":57,"currency":"USD"}},"files":null}`,
	`  {"event" : "a\nb", "answer":"line\nbreak \u4e2d"}  `,
	`{"event":"\u0061","conversation_id":"x"}`,
	`{"EVENT":"upper","event":"lower"}`,
	`{"Event":"only folded"}`,
	`{"conver` + "\u017f" + `ation_id":"long s folds to s"}`,
	`{"event":"first","event":"last"}`,
	`{"event":5,"conversation_id":"kept"}`,
	`{"position":"3","event":"type error"}`,
	`{"position":1.5}`,
	`{"created_at":-0.5e+10}`,
	`{"event":null}`,
	`{"ev\u0065nt":"escaped key"}`,
	`{"event":"` + "\xff\xfe" + `"}`,
	`{"event":"é ü 中"}`,
	`{}`, `[]`, `null`, `"s"`, `5`, ``, `{`, `{"event"}`, `{"event":"x",}`, `{"event":"x"} x`,
	`{"a":[1,2,{"b":[true,false,null]}],"event":"after nesting"}`,
	`{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":tru}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":"\u12G4"}`,
	`{"a":[1,]}`, `{"a":{"b"}}`, `{"a":{"b":1,}}`, `{"a":[}`, `{"a":{]}`, `{,}`, `{"a":1 "b":2}`,
}

func TestDecodeAsEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		decodeBoth(t, []byte(s))
	}
}

func TestDecodeCommonFrameWithoutEncodingJSON(t *testing.T) {
	got, handled, err := decodeBoth(t, []byte(seeds[0]))
	if !handled || err != nil || got.Event != "agent_message" || *got.Answer != "Hi" || got.Position != 1 {
		t.Fatalf("handled %v, err %v, %+v", handled, err, got)
	}
	// Left to encoding/json: keys it would match case-insensitively, or
	// written with escapes.
	for _, s := range []string{`{"Event":"x"}`, `{"ev\u0065nt":"x"}`, `[1]`} {
		if _, handled, _ := decodeBoth(t, []byte(s)); handled {
			t.Errorf("%s: handled, want it left to encoding/json", s)
		}
	}
}

func TestDecodeDepthAsEncodingJSON(t *testing.T) {
	for _, depth := range []int{63, 64, 65, 129, maxDepth - 1, maxDepth, maxDepth + 1} {
		// The object is one level; depth-1 arrays inside it.
		data := `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `,"event":"deep"}`
		decodeBoth(t, []byte(data))
		mixed := `{"a":` + strings.Repeat(`{"b":[`, (depth-1)/2) + strings.Repeat(`]}`, (depth-1)/2) + `,"event":"deep"}`
		decodeBoth(t, []byte(mixed))
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeBoth(t, data)
	})
}

func BenchmarkDecode(b *testing.B) {
	data := []byte(`{"event": "agent_message", "conversation_id": "c1c1c1c1-0000-4000-8000-000000000001", "message_id": "a1a1a1a1-0000-4000-8000-000000000002", "created_at": 1764471600, "task_id": "b1b1b1b1-0000-4000-8000-000000000003", "id": "a1a1a1a1-0000-4000-8000-000000000002", "answer": "The weather in Berlin is "}`)
	b.Run("jsonobj", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var f frame
			if _, err := f.decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var f frame
			if err := json.Unmarshal(data, &f); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzUnquote: a string literal decodes as json.Unmarshal decodes it.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\t\"q\" \\ \/ \b\f\r"`, `"\u4e2d\u6587"`, `"\ud83d\ude00 pair"`, `"\ud83d lone"`,
		`"\ude00\ud83d reversed"`, `"\ud83d\u0041 broken pair"`, `"\ud83d\ud83d\ude00"`, "\"\xff\xfe bad utf-8 \xe4\xb8\"", `"\x"`, "\"\x01\"",
		`"unterminated`, `"a" `, ` "a"`, `"\u00"`, `"é"`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		if len(lit) == 0 || lit[0] != '"' {
			return // Unquote's callers hand it what starts as a literal
		}
		var want string
		wantErr := json.Unmarshal(lit, &want)
		got, ok := Unquote(lit)
		// A literal followed by white space is valid JSON; Unquote wants
		// the literal alone.
		if trailing := len(bytes.TrimRight(lit, " \t\r\n")) != len(lit); trailing && ok {
			t.Fatalf("%q: accepted with white space after it", lit)
		} else if trailing {
			return
		}
		if ok != (wantErr == nil) || got != want {
			t.Fatalf("%q: %q %v, encoding/json %q %v", lit, got, ok, want, wantErr)
		}
	})
}
