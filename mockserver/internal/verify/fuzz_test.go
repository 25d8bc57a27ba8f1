package verify

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzStreamFields feeds arbitrary bytes as a captured stream: splitting it
// into frames and merging each event type's fields must never panic, must
// never return more bytes than the body has, and must leave pings and
// nameless frames out.
func FuzzStreamFields(f *testing.F) {
	f.Add([]byte("data: {\"event\":\"agent_message\",\"answer\":\"hi\"}\n\ndata: {\"event\":\"message_end\",\"metadata\":{}}\n\n"))
	f.Add([]byte("event: ping\n\n"))
	f.Add([]byte("data: {\"event\":\"x\",\r\ndata: \"a\":[1,null,{\"b\":true}]}\r\n\r\n"))
	f.Add([]byte("data: not json\n\ndata: {\"event\":5}\n\n"))
	f.Add([]byte("data: {\"event\":\"a\"}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		ex := &exchange{respHeader: http.Header{"Content-Type": {"text/event-stream"}}, body: body,
			arrive: []arrival{{end: len(body) / 2, at: time.Millisecond}, {end: len(body), at: 2 * time.Millisecond}}}
		frames := ex.frames()
		n := 0
		for _, fr := range frames {
			n += len(fr.Raw)
			if fr.Offset < 0 || fr.Offset > 2*time.Millisecond {
				t.Fatalf("frame offset %v outside the arrivals", fr.Offset)
			}
		}
		if n > len(body) {
			t.Fatalf("frames hold %d bytes of a %d-byte body", n, len(body))
		}
		for ev, shape := range eventShapes(ex) {
			if ev == "" || ev == "ping" {
				t.Fatalf("event type %q kept", ev)
			}
			for p, k := range shape {
				if !strings.HasPrefix(p, "$") || k == "" {
					t.Fatalf("bad shape entry %q: %q", p, k)
				}
			}
		}
		_ = normalContentType(string(body))
	})
}
