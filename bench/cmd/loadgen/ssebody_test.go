package main

import (
	"fmt"
	"io"
	"net/http/httputil"
	"strings"
	"testing"
)

// chunked encodes body as chunks of the given sizes (the rest in one).
func chunked(body string, sizes ...int) string {
	var b strings.Builder
	for _, n := range sizes {
		n = min(n, len(body))
		if n == 0 {
			continue
		}
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	if body != "" {
		fmt.Fprintf(&b, "%x;ext=1\r\n%s\r\n", len(body), body)
	}
	b.WriteString("0\r\nTrailer: x\r\n\r\n")
	return b.String()
}

// pushAll pushes wire to a streamBody in pieces of at most step bytes.
func pushAll(wire string, step int) (sizes []int, done bool, err error) {
	b := &streamBody{frame: func(_ arrival, n int) { sizes = append(sizes, n) }}
	for len(wire) > 0 && !done && err == nil {
		n := min(step, len(wire))
		done, err = b.push([]byte(wire[:n]), readNow())
		wire = wire[n:]
	}
	return sizes, done, err
}

func TestStreamBodyFindsFramesHoweverTheReadsSplitIt(t *testing.T) {
	long := strings.Repeat("x", 10<<10)
	body := "data: {\"a\":1}\n\n\n\nevent: ping\r\n\r\ndata: " + long + "\n\n: comment\ndata: 2\n\n"
	want := fmt.Sprint([]int{len("data: {\"a\":1}\n\n"), len("event: ping\r\n\r\n"), len("data: " + long + "\n\n"), len(": comment\ndata: 2\n\n")})
	for _, wire := range []string{chunked(body), chunked(body, 1, 2, 3, 7, 100, 4000)} {
		for _, step := range []int{1, 2, 3, 5, 17, 1000, len(wire)} {
			sizes, done, err := pushAll(wire, step)
			if err != nil || !done || fmt.Sprint(sizes) != want {
				t.Fatalf("pieces of %d: frames %v, done %v, err %v; want %s, done, no error", step, sizes, done, err, want)
			}
		}
	}
}

func TestStreamBodyReportsACutFrameAndABrokenChunk(t *testing.T) {
	if _, done, err := pushAll(chunked("data: 1\n\ndata: cut"), 3); !done || err != io.ErrUnexpectedEOF {
		t.Fatalf("a body ending inside a frame: done %v, err %v; want io.ErrUnexpectedEOF", done, err)
	}
	for _, wire := range []string{"zz\r\n", "5\r\nhelloXX", "\r\n", "1234567890abcdef0\r\n"} {
		if _, _, err := pushAll(wire, 1); err != errBadChunk {
			t.Fatalf("%q: err %v, want errBadChunk", wire, err)
		}
	}
	if _, done, err := pushAll(chunked("data: 1\n\n")[:10], 4); done || err != nil {
		t.Fatalf("a body not finished yet: done %v, err %v", done, err)
	}
}

// FuzzStreamBody checks the push decoders against Go's chunked reader and
// a plain reading of the SSE frames: same frames for any body, any chunk
// sizes and any split of the wire into reads.
func FuzzStreamBody(f *testing.F) {
	f.Add("data: 1\n\nevent: ping\r\n\r\n", 3, 2)
	f.Add("\n\n\r\n: x\n\n", 1, 1)
	f.Add("data: a\r\n\r\ndata: b\n\ndata: c", 5, 7)
	f.Fuzz(func(t *testing.T, body string, chunk, step int) {
		chunk, step = 1+int(uint(chunk)%64), 1+int(uint(step)%64)
		var sizes []int
		for n := chunk; n < len(body); n += chunk {
			sizes = append(sizes, chunk)
		}
		wire := chunked(body, sizes...)
		decoded, err := io.ReadAll(httputil.NewChunkedReader(strings.NewReader(wire)))
		if err != nil || string(decoded) != body {
			t.Fatalf("the test's own encoding is wrong: %v", err)
		}
		got, done, err := pushAll(wire, step)
		want, cut := referenceFrames(body)
		if !done || (err == io.ErrUnexpectedEOF) != cut || (err != nil && err != io.ErrUnexpectedEOF) {
			t.Fatalf("done %v, err %v, want a cut frame: %v", done, err, cut)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("frames %v, want %v", got, want)
		}
	})
}

// referenceFrames reads SSE frames the plain way: split into lines, a
// blank line ("" or "\r") ends a frame that has a non-blank line.
func referenceFrames(body string) (sizes []int, cut bool) {
	size, content := 0, false
	for len(body) > 0 {
		i := strings.IndexByte(body, '\n')
		if i < 0 {
			return sizes, true
		}
		line := body[:i]
		size += i + 1
		body = body[i+1:]
		if line != "" && line != "\r" {
			content = true
			continue
		}
		if content {
			sizes = append(sizes, size)
		}
		size, content = 0, false
	}
	return sizes, content
}
