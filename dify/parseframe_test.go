package dify

import (
	"bytes"
	"runtime"
	"testing"
)

// ParseFrame gives what a FrameReader's Next gives for the same frame,
// whether the frame takes its fast path (Dify's one "data: " line) or not.
func TestParseFrameMatchesNext(t *testing.T) {
	for _, raw := range []string{
		"data: {\"event\":\"message\"}\n\n",
		"data: \n\n",
		"data:{\"a\":1}\n\n",
		"event: ping\n\n",
		"data: a\ndata: b\n\n",
		"data: a\r\n\r\n",
		"\xef\xbb\xbfdata: x\n\n",
		": comment\ndata: y\n\n",
		"data: cut",
	} {
		want, _ := NewFrameReader(bytes.NewReader([]byte(raw))).Next()
		got := ParseFrame([]byte(raw))
		if got.Event != want.Event || !bytes.Equal(got.Data, want.Data) || (got.Data == nil) != (want.Data == nil) || !bytes.Equal(got.Raw, want.Raw) {
			t.Errorf("%q: ParseFrame %+v, Next %+v", raw, got, want)
		}
	}
}

// A ping parsed on its own costs about its size, not a stream reader's
// buffer: a recorder parses every ping of every live stream.
func TestParseFramePingIsSmall(t *testing.T) {
	raw := []byte("event: ping\n\n")
	const runs = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if f := ParseFrame(raw); f.Event != EventPing {
			t.Fatalf("ParseFrame(ping) = %+v", f)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 512 {
		t.Errorf("ParseFrame of a ping allocates %d bytes, want at most 512", per)
	}
}
