package bufpool

import (
	"bytes"
	"crypto/sha256"
	"io"
	"testing"
)

func TestGetGivesRoomAndPutBoundsWhatIsKept(t *testing.T) {
	p := Get(10)
	if len(*p) != 0 || cap(*p) < minSize {
		t.Fatalf("Get(10): len %d cap %d, want an empty buffer of at least %d", len(*p), cap(*p), minSize)
	}
	*p = append(*p, "dirty"...)
	Put(p)
	if q := Get(100); len(*q) != 0 {
		t.Fatalf("a reused buffer came back with %d bytes in it", len(*q))
	}
	big := Get(maxPooled + 1)
	if cap(*big) < maxPooled+1 {
		t.Fatalf("Get(%d) has cap %d", maxPooled+1, cap(*big))
	}
	Put(big) // dropped, not pooled: nothing to observe but no panic
}

// onlyWriter and onlyReader hide ReadFrom and WriteTo, so io.Copy would
// make a buffer of its own for them.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// Copy copies everything, larger than its buffer too, and borrows its
// buffer instead of making one per call.
func TestCopyCopiesWithABorrowedBuffer(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80,000 bytes: more than one buffer
	h := sha256.New()
	n, err := Copy(onlyWriter{h}, onlyReader{bytes.NewReader(src)})
	if want := sha256.Sum256(src); err != nil || n != int64(len(src)) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("Copy: %d bytes, %v; digest differs: %v", n, err, !bytes.Equal(h.Sum(nil), want[:]))
	}
	if raceEnabled {
		return
	}
	small := bytes.Repeat([]byte("x"), 1024)
	r := bytes.NewReader(small)
	w, rd := &onlyWriter{io.Discard}, &onlyReader{r}
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(small)
		if _, err := Copy(w, rd); err != nil {
			t.Fatal(err)
		}
	})
	// io.Copy makes a 32 KiB buffer here on every call.
	if allocs >= 1 {
		t.Fatalf("Copy allocates %.1f times per call, want less than 1", allocs)
	}
}
