package record

import (
	"testing"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// FuzzFrameEnvelope: the envelope read on every relayed frame is what
// decodeFrame (encoding/json) reads.
func FuzzFrameEnvelope(f *testing.F) {
	set, err := cassette.LoadFS(cassettes.FS(), "built-in")
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range set.Cassettes {
		for _, tr := range c.Turns {
			for _, fr := range tr.Frames {
				f.Add(fr.Raw)
			}
		}
	}
	for _, s := range []string{
		"data: {\"event\":\"message_end\",\"conversation_id\":\"c\\u0031\"}\n\n",
		"data: {\"Event\":\"message_end\",\"CONVERSATION_ID\":\"c1\"}\n\n",
		"data: {\"event\":7,\"conversation_id\":\"kept\"}\n\n",
		"data: {\"event\":\"error\"\n\n", "data: [\"event\"]\n\n", "event: ping\n\n",
		"data: {\"event\":\"agent_message\",\n\ndata: \"conversation_id\":\"two lines\"}\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want frameEnvelope
		decodeFrame(raw, &want)
		if got := parseFrameEnvelope(raw); got != want {
			t.Fatalf("%q: envelope %+v, encoding/json's %+v", raw, got, want)
		}
	})
}
