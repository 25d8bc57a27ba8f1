package cassette_test

import (
	"io/fs"
	"testing"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// FuzzDecodeCassette: the loader's parsing steps return errors for bad
// input, never panic; a parsed chat turn's frames always re-encode to the
// same body and frame table.
func FuzzDecodeCassette(f *testing.F) {
	// Small seeds only: the fuzzer minimizes every interesting input, which
	// is slow for the larger built-in cassettes.
	for _, n := range []string{"plain-answer.yaml", "app.yaml"} {
		data, err := fs.ReadFile(cassettes.FS(), n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("version: 1\ndify_mock: {format: 1, kind: chat, provenance: recorded}\ninteractions:\n- request: {method: POST, url: 'http://x/v1/chat-messages', body: '{\"query\":\"q\"}'}\n  response: {code: 200, body: 'data: {}\n\n', headers: {X-Dify-Mock-Frames: ['0 10']}}\n"))
	f.Add([]byte("version: 1\ndify_mock: {format: 1, kind: app, provenance: synthesized}\ninteractions: [null]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := cassette.Decode("fuzz.yaml", data)
		if err != nil {
			return
		}
		if app, err := cassette.ParseApp("app", "fuzz.yaml", doc); err == nil && app.Responses["/info"] == nil {
			t.Fatal("ParseApp accepted a description without /info")
		}
		c, err := cassette.ParseChat("fuzz", "fuzz.yaml", doc)
		if err != nil {
			return
		}
		for _, turn := range c.Turns {
			if turn.Status != 200 {
				continue
			}
			values, body := cassette.EncodeFrames(turn.Frames)
			again, err := cassette.DecodeFrames(values, body)
			if err != nil || len(again) != len(turn.Frames) {
				t.Fatalf("frames do not round-trip: %v", err)
			}
		}
	})
}
