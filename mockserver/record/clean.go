package record

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/difyops/terraform-provider-dify/dify"
)

// A live turn's frames (Forward) are cleaned one whole frame at a time
// before anything sees them, so that the client, the mock's history and
// journal, and the saved cassette all get the same bytes, and those bytes
// pass `dify-mock lint` (docs/mock/hybrid.md, "What is saved"):
//
//   - line ends: CR and CRLF become LF (lineEnds, below the frame reader);
//   - the frame is rewritten in the form Dify sends: an `event: NAME`
//     line when it names one, its data as `data: ` lines, a blank line.
//     Comment lines, a byte-order mark and fields other than event and
//     data (id, retry) go; so does a frame that carries no event at all
//     (a comment-only keep-alive);
//   - invalid UTF-8 becomes U+FFFD;
//   - secrets are redacted by the recorder's one scrubbing routine
//     (scrubber.bytes: the upstream key, the built-in patterns, the user's
//     rules). The frame is whole, so a key the upstream split across two
//     reads is redacted too.
//
// What cannot be normalised (a data line that is not JSON, a usage field
// of the wrong type, a stream without message_end) is left as it came;
// the save-time lint gate refuses the turn instead (Recorder.Save).

// Normalisation notes, as they appear in Forwarded.Normalised.
const (
	noteLineEnds  = "CR/CRLF line ends became LF"
	noteUTF8      = "invalid UTF-8 became U+FFFD"
	noteDropped   = "frames without an event (comments, keep-alives) were dropped"
	noteCanonical = "frames were rewritten as event:/data: lines (comments, BOM, id/retry fields dropped)"
)

// notes collects the normalisation notes of one turn, each once.
type notes []string

func (n *notes) add(note string) {
	if note != "" && !slices.Contains(*n, note) {
		*n = append(*n, note)
	}
}

func (n notes) String() string { return strings.Join(n, "; ") }

// cleanFrame is f cleaned as described above (n collects what was
// changed); nil for a frame without an event, which is dropped. A frame
// that is already clean is f.Raw itself (a FrameReader's, the caller's to
// keep), so the live lane copies no frame that needs nothing.
func (r *Recorder) cleanFrame(f dify.SSEFrame, n *notes) []byte {
	if f.Empty() {
		n.add(noteDropped)
		return nil
	}
	event, data := []byte(f.Event), f.Data
	if !utf8.Valid(event) || !utf8.Valid(data) {
		n.add(noteUTF8)
		event, data = bytes.ToValidUTF8(event, []byte("\uFFFD")), bytes.ToValidUTF8(data, []byte("\uFFFD"))
	}
	hasData := f.Data != nil
	cleanData := data
	if hasData {
		cleanData = r.scrub.scrubbed(data)
	}
	cleanEvent := r.scrub.scrubbed(event)
	if sameBytes(cleanData, f.Data) && string(cleanEvent) == f.Event && isCanonical(cleanEvent, cleanData, hasData, f.Raw) {
		return f.Raw
	}
	out := canonicalFrame(cleanEvent, cleanData, hasData)
	if !bytes.Equal(out, f.Raw) && !isCanonical(event, f.Data, hasData, f.Raw) {
		n.add(noteCanonical) // not only a redaction changed it
	}
	return out
}

// sameBytes reports whether a and b are the same bytes in memory (not
// merely equal): what a scrub left alone.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// isCanonical reports whether raw is canonicalFrame(event, data, hasData),
// without writing it.
func isCanonical(event, data []byte, hasData bool, raw []byte) bool {
	rest := raw
	take := func(p []byte) bool {
		if !bytes.HasPrefix(rest, p) {
			return false
		}
		rest = rest[len(p):]
		return true
	}
	if len(event) > 0 && !(take([]byte("event: ")) && take(event) && take([]byte("\n"))) {
		return false
	}
	if hasData {
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if !(take([]byte("data: ")) && take(line) && take([]byte("\n"))) {
				return false
			}
		}
	}
	return take([]byte("\n")) && len(rest) == 0
}

// canonicalFrame writes an SSE frame as Dify does: `event: NAME` when it
// has one, each data line as `data: LINE`, then a blank line.
func canonicalFrame(event, data []byte, hasData bool) []byte {
	out := make([]byte, 0, len(event)+len(data)+16)
	if len(event) > 0 {
		out = append(out, "event: "...)
		out = append(out, event...)
		out = append(out, '\n')
	}
	if hasData {
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			out = append(out, "data: "...)
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return append(out, '\n')
}

// lineEnds turns CR and CRLF line ends into LF as the bytes arrive: a CR
// is an LF at once and an LF right after it is dropped, so a stream that
// ends its lines with a lone CR (which the SSE format allows, and which
// dify.FrameReader does not take for a line end) is not held back until
// its next byte. JSON cannot hold a raw CR, so no data is changed.
type lineEnds struct {
	r       io.Reader
	afterCR bool
	seen    bool // a CR was rewritten
}

func (l *lineEnds) Read(p []byte) (int, error) {
	for {
		n, err := l.r.Read(p)
		w := 0
		for _, c := range p[:n] {
			switch {
			case c == '\r':
				p[w] = '\n'
				w++
				l.afterCR, l.seen = true, true
			case c == '\n' && l.afterCR:
				l.afterCR = false // the LF of a CRLF
			default:
				p[w] = c
				w++
				l.afterCR = false
			}
		}
		if w > 0 || err != nil || n == 0 {
			return w, err
		}
	}
}
