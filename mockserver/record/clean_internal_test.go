package record

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/difyops/terraform-provider-dify/dify"
)

// lineEnds turns CR and CRLF into LF however the bytes are split across
// reads (a CRLF split between two reads is one line end, not two).
func TestLineEndsAcrossReads(t *testing.T) {
	in := "data: a\r\n\r\ndata: b\r\rdata: c\n\n\r\n"
	want := "data: a\n\ndata: b\n\ndata: c\n\n\n"
	for name, r := range map[string]io.Reader{
		"whole":       strings.NewReader(in),
		"byte a time": iotest.OneByteReader(strings.NewReader(in)),
		"half":        iotest.HalfReader(strings.NewReader(in)),
	} {
		le := &lineEnds{r: r}
		got, err := io.ReadAll(le)
		if err != nil || string(got) != want || !le.seen {
			t.Errorf("%s: %q, %v (seen %v); want %q", name, got, err, le.seen, want)
		}
	}
	le := &lineEnds{r: strings.NewReader("data: x\n\n")}
	if got, _ := io.ReadAll(le); string(got) != "data: x\n\n" || le.seen {
		t.Errorf("LF-only input changed: %q (seen %v)", got, le.seen)
	}
}

// FuzzIsCanonical: isCanonical says what comparing with canonicalFrame's
// bytes says.
func FuzzIsCanonical(f *testing.F) {
	f.Add("", []byte(`{"event":"ping"}`), true, []byte("data: {\"event\":\"ping\"}\n\n"))
	f.Add("ping", []byte(nil), false, []byte("event: ping\n\n"))
	f.Add("x", []byte("a\nb"), true, []byte("event: x\ndata: a\ndata: b\n\n"))
	f.Add("", []byte("a"), true, []byte("data:a\n\n"))
	f.Fuzz(func(t *testing.T, event string, data []byte, hasData bool, raw []byte) {
		canon := canonicalFrame([]byte(event), data, hasData)
		if got, want := isCanonical([]byte(event), data, hasData, raw), bytes.Equal(canon, raw); got != want {
			t.Fatalf("isCanonical(%q, %q, %v, %q) = %v, canonicalFrame gives %q", event, data, hasData, raw, got, canon)
		}
		if !isCanonical([]byte(event), data, hasData, canon) {
			t.Fatalf("canonicalFrame(%q, %q, %v) = %q is not canonical", event, data, hasData, canon)
		}
	})
}

// A clean frame as Dify sends it is kept as read, not copied; one with a
// secret or in another shape is a new slice, and the frame read is left
// as it was.
func TestCleanFrameCopiesOnlyWhatItChanges(t *testing.T) {
	r := &Recorder{scrub: newScrubber("app-upstreamkey1234567890", nil)}
	read := func(s string) dify.SSEFrame {
		f, err := dify.NewFrameReader(strings.NewReader(s)).Next()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	clean := read("data: {\"event\":\"agent_message\",\"answer\":\"Hi\"}\n\n")
	var n notes
	if out := r.cleanFrame(clean, &n); &out[0] != &clean.Raw[0] || len(out) != len(clean.Raw) || n.String() != "" {
		t.Errorf("a clean frame was copied or noted (%q)", n.String())
	}
	for _, tc := range []struct{ in, want, note string }{
		{"data: {\"answer\":\"key app-upstreamkey1234567890\"}\n\n", "data: {\"answer\":\"key [REDACTED]\"}\n\n", ""},
		{"data: {\"answer\":\"Bearer abcdefghijklmnop1234\"}\n\n", "data: {\"answer\":\"Bearer [REDACTED]\"}\n\n", ""},
		{"data:{\"answer\":\"x\"}\n\n", "data: {\"answer\":\"x\"}\n\n", noteCanonical},
	} {
		f := read(tc.in)
		var n notes
		out := r.cleanFrame(f, &n)
		if string(out) != tc.want || n.String() != tc.note {
			t.Errorf("%q: %q (notes %q), want %q (notes %q)", tc.in, out, n.String(), tc.want, tc.note)
		}
		if string(f.Raw) != tc.in || &out[0] == &f.Raw[0] {
			t.Errorf("%q: the frame read was changed or returned: %q", tc.in, f.Raw)
		}
	}
}
