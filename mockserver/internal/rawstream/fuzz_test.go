package rawstream

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http/httputil"
	"testing"
)

// FuzzChunks: any sequence of writes and flushes comes out as a valid
// chunked body (Go's own chunked reader decodes it) holding exactly the
// bytes written, in order, ended by the last chunk.
func FuzzChunks(f *testing.F) {
	f.Add([]byte("data: 1\n\n"), []byte{1, 0, 2})
	f.Add([]byte{}, []byte{0})
	f.Add(bytes.Repeat([]byte("x"), 70<<10), []byte{3, 3, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte, plan []byte) {
		server, client := net.Pipe()
		got := make(chan []byte, 1)
		go func() {
			raw, _ := io.ReadAll(client)
			got <- raw
		}()
		s := Take(server, bufio.NewReader(bytes.NewReader(nil)), nil, 0)
		rest := data
		// Each plan byte: write the next n bytes (n = b mod 32, times 997 for
		// a large one), then flush when b is odd.
		for _, b := range plan {
			n := int(b % 32)
			if b >= 128 {
				n *= 997
			}
			n = min(n, len(rest))
			if _, err := s.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
			if b%2 == 1 {
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		_, _ = s.Write(rest)
		s.End(true, false)
		raw := <-got
		body, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(raw)))
		if err != nil {
			t.Fatalf("not a chunked body (%v): %q", err, raw)
		}
		if !bytes.Equal(body, data) {
			t.Fatalf("decoded %d bytes, wrote %d", len(body), len(data))
		}
		if !bytes.HasSuffix(raw, []byte(lastChunk)) {
			t.Fatalf("the body does not end with the last chunk: %q", raw[max(0, len(raw)-16):])
		}
	})
}
