package author_test

import (
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/author"
)

const tinyScenario = "name: tiny\nquery: tiny question\nsteps:\n  - answer: tiny answer\n"

// FuzzParseScenario: no scenario text makes the author panic, and whatever
// it accepts becomes a cassette the mock loads.
func FuzzParseScenario(f *testing.F) {
	f.Add([]byte(tinyScenario))
	f.Add([]byte("name: t\nturns:\n  - query: a\n    steps: [{thinking: x}, {tool: t, input: {a: 1}, observation: o, duration: 1s}, {answer: y}]\n  - query: b\n    error: {code: c, message: 'm {agent_run_id}'}\n"))
	f.Add([]byte("name: l\nmode: agent-chat\nquery: q\npacing: {ping_interval: 1s, batch_interval: 50ms}\nsteps: [{message_file: {}}, {answer: 'é 😀'}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		name, out, err := author.GenerateBytes("f.yaml", data, author.Options{})
		if err != nil {
			return
		}
		doc, err := cassette.Decode("f.yaml", out)
		if err != nil {
			t.Fatalf("generated cassette does not decode: %v", err)
		}
		if doc.Meta.Kind == cassette.KindChat {
			if _, err := cassette.ParseChat(name, "f.yaml", doc); err != nil {
				t.Fatalf("generated cassette does not parse: %v", err)
			}
		}
	})
}
