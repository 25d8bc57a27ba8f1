package record

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
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
