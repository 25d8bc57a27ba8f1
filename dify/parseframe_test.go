package dify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

// Ready is true exactly when a whole frame is already buffered: Next will
// not wait for input.
func TestFrameReaderReady(t *testing.T) {
	pr, pw := io.Pipe()
	fr := NewFrameReader(pr)
	go func() {
		// Two frames in one write, then a frame in two writes, CRLF ended.
		_, _ = pw.Write([]byte("data: {\"n\":1}\n\ndata: {\"n\":2}\n\n"))
		_, _ = pw.Write([]byte("data: {\"n\":3}\r\n"))
		_, _ = pw.Write([]byte("\r\ndata: {\"n\":4}"))
		_ = pw.Close()
	}()
	want := []bool{true, false}
	for i, ready := range want {
		f, err := fr.Next()
		if err != nil || string(f.Data) != fmt.Sprintf(`{"n":%d}`, i+1) {
			t.Fatalf("frame %d: %q %v", i+1, f.Data, err)
		}
		if fr.Ready() != ready {
			t.Errorf("after frame %d: Ready %v, want %v", i+1, !ready, ready)
		}
	}
	if f, err := fr.Next(); err != nil || string(f.Data) != `{"n":3}` {
		t.Fatalf("frame 3: %q %v", f.Data, err)
	}
	if fr.Ready() {
		t.Error("Ready with only part of frame 4 buffered")
	}
	if _, err := fr.Next(); !errors.Is(err, io.ErrUnexpectedEOF) || fr.Ready() {
		t.Errorf("the cut frame 4: %v, Ready %v", err, fr.Ready())
	}
}
