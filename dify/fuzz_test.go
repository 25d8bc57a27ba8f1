package dify

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzStreamReader feeds arbitrary bytes, delivered in arbitrary read
// sizes, to the SSE layers. It asserts that nothing panics or loops, that
// the frames' Raw bytes concatenate back to the input exactly, that every
// complete frame ends with a blank line, that read sizes never change the
// frames, and that ChatStream and Collect always end with io.EOF or
// ErrTruncatedStream.
func FuzzStreamReader(f *testing.F) {
	// Seeds stay small (a few frames of each test stream): the fuzzer
	// minimises every input that finds new coverage, and large seeds would
	// spend the fuzzing time there.
	seeds, _ := filepath.Glob("testdata/*.sse")
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		frames := bytes.SplitAfter(b, []byte("\n\n"))
		for i := 0; i+2 <= len(frames); i += 2 {
			pair := bytes.Join(frames[i:i+2], nil)
			f.Add(pair, uint8(i))
			if i == 0 {
				f.Add(bytes.ReplaceAll(pair, []byte("\n"), []byte("\r\n")), uint8(3))
				f.Add(pair[:len(pair)/2], uint8(1)) // cut mid-frame
			}
		}
	}
	for _, s := range []string{
		"",
		"\n",
		"\r\n\r\n",
		"event: ping\n\n",
		"event: ping\r\n\r\n",
		"data: {\"event\":\"agent_message\",\"answer\":\"a\"}\n\ndata: {\"event\":\"message_end\",\"metadata\":{}}\n\n",
		"data: line1\ndata: line2\n\n",
		": comment\n\n",
		"\ufeffdata: {}\n\n",
		"data: {\"event\":\"error\",\"status\":400,\"code\":\"x\",\"message\":\"y\"}\n\ndata: {}\n\n",
		"data: {\"event\":\"message_end\",\"metadata\":{}}",
		"data: {\"event\":\"agent_thought\",\"position\":\"x\"}\n\n",
		"data: {not json}\n\n",
		"data\n\nevent\n\nid: 1\nretry: 5\n\n",
		"data: a\rb\r\n\n\r\n",
		"event: message_end\n\n",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}

	f.Fuzz(checkStream)
}

func checkStream(t *testing.T, data []byte, chunk uint8) {
	{
		whole, werr := readAllFrames(t, bytes.NewReader(data), len(data))
		if werr != io.EOF && werr != io.ErrUnexpectedEOF {
			t.Fatalf("in-memory input ended with %v", werr)
		}
		var joined bytes.Buffer
		for i, fr := range whole {
			joined.Write(fr.Raw)
			last := i == len(whole)-1
			if !(last && werr == io.ErrUnexpectedEOF) && !endsWithBlankLine(fr.Raw) {
				t.Fatalf("frame %d Raw %q does not end with a blank line", i, fr.Raw)
			}
			ev, err := DecodeEvent(fr)
			if err == nil && ev == nil && len(bytes.TrimSpace(fr.Data)) != 0 {
				t.Fatalf("frame %q with data decoded to nothing", fr.Raw)
			}
			var fe *FrameError
			if err != nil && !errors.As(err, &fe) {
				t.Fatalf("DecodeEvent error %T is not a *FrameError", err)
			}
		}
		if !bytes.Equal(joined.Bytes(), data) {
			t.Fatalf("Raw concatenation differs from the input:\n got %q\nwant %q", joined.Bytes(), data)
		}

		// Read sizes must not matter.
		split, serr := readAllFrames(t, &chunkReader{data: bytes.Clone(data), sizes: []int{int(chunk%17) + 1, 1, int(chunk/17) + 1}}, len(data))
		if serr != werr || len(split) != len(whole) {
			t.Fatalf("chunked read: %d frames (%v), whole read: %d frames (%v)", len(split), serr, len(whole), werr)
		}
		for i := range whole {
			if whole[i].Event != split[i].Event || !bytes.Equal(whole[i].Data, split[i].Data) ||
				(whole[i].Data == nil) != (split[i].Data == nil) || !bytes.Equal(whole[i].Raw, split[i].Raw) {
				t.Fatalf("frame %d differs between read sizes: %+v vs %+v", i, whole[i], split[i])
			}
		}

		s := NewChatStream(bytes.NewReader(data))
		for n := 0; ; n++ {
			if n > len(data)+2 {
				t.Fatal("ChatStream.Next does not terminate")
			}
			_, err := s.Next()
			var fe *FrameError
			if err == nil || errors.As(err, &fe) && !errors.Is(err, ErrTruncatedStream) {
				continue
			}
			if err != io.EOF && !errors.Is(err, ErrTruncatedStream) {
				t.Fatalf("stream ended with %v", err)
			}
			break
		}
		turn, err := Collect(NewChatStream(bytes.NewReader(data)))
		if turn == nil {
			t.Fatal("Collect returned a nil Turn")
		}
		if err == nil && !turn.Completed {
			t.Fatal("Collect succeeded without message_end")
		}
	}
}

func readAllFrames(t *testing.T, r io.Reader, size int) ([]SSEFrame, error) {
	fr := NewFrameReader(r)
	var frames []SSEFrame
	for n := 0; ; n++ {
		if n > size+1 {
			t.Fatal("FrameReader.Next does not terminate")
		}
		f, err := fr.Next()
		if err != nil {
			if len(f.Raw) > 0 {
				frames = append(frames, f)
			}
			return frames, err
		}
		frames = append(frames, f)
	}
}

func endsWithBlankLine(raw []byte) bool {
	switch {
	case !bytes.HasSuffix(raw, []byte("\n")):
		return false
	case len(raw) == 1, string(raw) == "\r\n":
		return true
	case bytes.HasSuffix(raw, []byte("\n\n")), bytes.HasSuffix(raw, []byte("\n\r\n")):
		return true
	}
	// A frame whose only line is blank after a BOM.
	return string(raw) == "\ufeff\n" || string(raw) == "\ufeff\r\n"
}

// FuzzErrorBody: any error body gives an APIError whose message is bounded
// and holds no key; a web page is summarised as one.
func FuzzErrorBody(f *testing.F) {
	for _, s := range []string{
		`{"code":"not_found","message":"Conversation Not Exists.","status":404}`,
		"<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>The requested URL was not found.</p>\n",
		"<html><head><title>x</title><script>alert(1)</script></head><body>Bearer app-secret</body></html>",
		"<title>unterminated", "plain text", "",
	} {
		f.Add(s, "text/html")
		f.Add(s, "")
	}
	const key = "app-fuzz-secret-key"
	f.Fuzz(func(t *testing.T, body, ctype string) {
		e := newAPIError(404, http.Header{"Content-Type": {ctype}}, []byte(body), key)
		if len(e.Message) > maxErrorSnippet+len("…") {
			t.Fatalf("message of %d bytes", len(e.Message))
		}
		if strings.Contains(e.Message, key) {
			t.Fatalf("key in message %q", e.Message)
		}
		if _, ok := htmlSummary(ctype, []byte(body)); ok && !json.Valid([]byte(body)) && !strings.HasPrefix(e.Message, "HTML page") {
			t.Fatalf("a web page summarised as %q", e.Message)
		}
	})
}

// FuzzFrameData: a frame's Data is its data lines' values joined with
// "\n" (nil without a data line), whether it shares Raw's bytes (one data
// line) or not, and an append to it never writes into Raw.
func FuzzFrameData(f *testing.F) {
	for _, s := range []string{
		"data: {\"event\":\"ping\"}\n\n", "data: a\ndata: b\n\n", "event: x\ndata:c\r\n\r\n", "\xef\xbb\xbfdata: bom\n\n",
		"data\n\n", "data:\n\ndata: \n\n", ": c\ndata: x\nid: 1\n\n", "data: cut", "data: a\r\ndata:b\ndata:  c\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fr := NewFrameReader(bytes.NewReader(in))
		for first := true; ; first = false {
			got, err := fr.Next()
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				return
			}
			var want []byte
			lines := strings.SplitAfter(string(got.Raw), "\n")
			for i, l := range lines {
				l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
				if first && i == 0 {
					l = strings.TrimPrefix(l, "\xef\xbb\xbf")
				}
				if name, value, _ := strings.Cut(l, ":"); name == "data" && l != "" && l[0] != ':' {
					if want != nil {
						want = append(want, '\n')
					}
					want = append(want, strings.TrimPrefix(value, " ")...)
					if want == nil {
						want = []byte{}
					}
				}
			}
			if !bytes.Equal(got.Data, want) || (got.Data == nil) != (want == nil) {
				t.Fatalf("%q: Data %q, its data lines say %q", got.Raw, got.Data, want)
			}
			if cap(got.Data) != len(got.Data) {
				// An append to Data would write into Raw's bytes.
				t.Fatalf("%q: Data has room after it (cap %d, len %d)", got.Raw, cap(got.Data), len(got.Data))
			}
			if err != nil {
				return
			}
		}
	})
}
