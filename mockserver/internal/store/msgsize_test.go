package store

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
)

func marshalledLen(t testing.TB, v any) int64 {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(b))
}

// awkward are strings encoding/json escapes in every way it has.
var awkward = []string{"", "plain", `"quoted" \ back`, "<b>&amp;</b>", "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
	"é 日本 🙂", "\u2028\u2029", "bad \xff utf-8 \xc3", strings.Repeat("answer ", 300)}

// a message as a New Agent turn stores it: thoughts with tool labels,
// inputs of every JSON type.
func richMessage() dify.Message {
	chain, errMsg, price, cur := "chain-1", "boom <x>", "0.0012", "USD"
	labels := map[string]any{"web_search": map[string]any{"en_US": "web_search", "zh_Hans": "网页搜索"}}
	m := dify.Message{ID: "3dc542c9-5cdb-428a-85c0-53565c245a27", ConversationID: "832594a3-0ba6-4dd4-9252-46ee5f44cca4",
		Inputs: map[string]any{"city": "Lisbon", "nights": 3.0, "tiny": 1e-7, "huge": 1e21, "neg": -0.5, "ok": true, "no": false,
			"none": nil, "list": []any{1.0, "x", nil, []any{}, map[string]any{}}, "nested": map[string]any{"a<b": []any{"&"}},
			"int": 42, "int64": int64(-7)},
		Query: "What will three nights in Lisbon cost?", Answer: strings.Join(awkward, "|"),
		CreatedAt: 1764547200, Status: "normal", Error: &errMsg, MessageTokens: 120, AnswerTokens: 3400, TotalTokens: 3520,
		ProviderResponseLatency: 2.345, TotalPrice: &price, Currency: &cur}
	for i, s := range awkward {
		m.AgentThoughts = append(m.AgentThoughts, dify.AgentThoughtRecord{ID: "t" + s, ChainID: &chain, MessageID: m.ID,
			Position: i + 1, Thought: s, Tool: "web_search", ToolLabels: labels, ToolInput: `{"query": "` + s + `"}`,
			CreatedAt: 1764547200, Observation: s, Files: []string{s, "f"}})
	}
	return m
}

// messageSize counts what json.Marshal writes for a stored message.
func TestMessageSizeIsTheMarshalledLength(t *testing.T) {
	empty := dify.Message{Inputs: map[string]any{}, AgentThoughts: []dify.AgentThoughtRecord{{Files: []string{}}}}
	rating := "like"
	withRest := richMessage()
	withRest.Feedback = &dify.Feedback{Rating: rating}
	withRest.RetrieverResources = []dify.RetrieverResource{{Position: 1, Content: "<p>"}}
	withRest.MessageFiles = []dify.MessageFile{{ID: "f1", Filename: "a&b.png"}}
	withRest.ExtraContents = []json.RawMessage{json.RawMessage(` {"a": "<"} `)}
	for name, m := range map[string]dify.Message{"zero": {}, "empty collections": empty, "a New Agent turn": richMessage(), "every field": withRest} {
		if got, want := messageSize(m), marshalledLen(t, m); got != want {
			t.Errorf("%s: messageSize = %d, json.Marshal wrote %d", name, got, want)
		}
		if got, want := messageSize(m), jsonSize(m); got != want {
			t.Errorf("%s: messageSize = %d, jsonSize = %d", name, got, want)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 1.7976931348623157e308, 5e-324, 0.1, 123456789.123} {
		if got, want := floatSize(f), marshalledLen(t, f); got != want {
			t.Errorf("floatSize(%g) = %d, json.Marshal wrote %d", f, got, want)
		}
	}
}

// fill sets every field of the value v points to, recursively, to
// something other than its zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x<")
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem())
		v.Set(p)
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			v.SetBytes([]byte(`{"raw":1}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf(any("v")))
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i))
		}
	}
}

// A field added to dify.Message or dify.AgentThoughtRecord without a count
// in messageSize makes the sizes differ here.
func TestMessageSizeCountsEveryField(t *testing.T) {
	var m dify.Message
	fill(reflect.ValueOf(&m).Elem())
	if got, want := messageSize(m), marshalledLen(t, m); got != want {
		t.Fatalf("messageSize of a message with every field set = %d, json.Marshal wrote %d: a field is not counted", got, want)
	}
}

func FuzzMessageSize(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, s, 1.5)
	}
	f.Fuzz(func(t *testing.T, answer, thought string, x float64) {
		m := richMessage()
		m.Answer, m.AgentThoughts[0].Thought, m.ProviderResponseLatency = answer, thought, dify.Float(x)
		m.Inputs = map[string]any{answer: thought, thought: []any{x, answer}}
		b, err := json.Marshal(m)
		if err != nil { // NaN or an infinity: json.Marshal refuses it
			return
		}
		if got := messageSize(m); got != int64(len(b)) {
			t.Fatalf("messageSize = %d, json.Marshal wrote %d", got, len(b))
		}
	})
}

// BenchmarkMessageSize sizes a message shaped like the tool-use
// cassette's: a 1 KB answer, four thoughts with tool labels.
func BenchmarkMessageSize(b *testing.B) {
	labels := map[string]any{"web_search": map[string]any{"en_US": "web_search", "zh_Hans": "web_search"}}
	m := dify.Message{ID: "3dc542c9-5cdb-428a-85c0-53565c245a27", ConversationID: "832594a3-0ba6-4dd4-9252-46ee5f44cca4",
		Inputs: map[string]any{}, Query: "What will three nights in Lisbon cost for two?", Answer: strings.Repeat("Lisbon is lovely. ", 60),
		CreatedAt: 1764547200, Status: "normal", MessageTokens: 120, AnswerTokens: 340, TotalTokens: 460, ProviderResponseLatency: 2.345}
	for i := range 4 {
		m.AgentThoughts = append(m.AgentThoughts, dify.AgentThoughtRecord{ID: "4fbc39dc-4da5-4bca-8d6d-c067b464248d", MessageID: m.ID,
			Position: i + 1, Thought: "I need current hotel prices for three nights.", Tool: "web_search", ToolLabels: labels,
			ToolInput: `{"query": "Lisbon hotel prices December"}`, CreatedAt: 1764547200, Observation: strings.Repeat("result ", 40), Files: []string{}})
	}
	b.Run("messageSize", func(b *testing.B) {
		for b.Loop() {
			messageSize(m)
		}
	})
	b.Run("jsonSize", func(b *testing.B) {
		for b.Loop() {
			jsonSize(m)
		}
	})
}
