// Package bufpool is the one pool of byte buffers a stream borrows while
// it writes a frame (replay renders into one, rawstream frames a chunk in
// one), so that a stream holds no buffer while it waits for its next frame:
// at 10,000 concurrent streams that is a few MB instead of one buffer per
// stream. Copy borrows from it too.
package bufpool

import (
	"io"
	"sync"
)

var pool sync.Pool

// maxPooled bounds the buffers kept for reuse; a larger one (a huge
// recorded frame) is left to the garbage collector.
const maxPooled = 64 << 10

// minSize is the smallest buffer made, so that most frames fit the first
// buffer a stream borrows.
const minSize = 4 << 10

// Get returns an empty buffer with room for at least size bytes.
func Get(size int) *[]byte {
	if p, ok := pool.Get().(*[]byte); ok {
		if cap(*p) >= size {
			*p = (*p)[:0]
			return p
		}
		Put(p)
	}
	b := make([]byte, 0, max(size, minSize))
	return &b
}

// Put returns a buffer for reuse; the caller must not touch it after.
func Put(p *[]byte) {
	if cap(*p) <= maxPooled {
		pool.Put(p)
	}
}

// copySize is Copy's buffer, io.Copy's size.
const copySize = 32 << 10

// Copy is io.Copy with a borrowed buffer. io.Copy makes a 32 KiB buffer on
// every call whose writer has no ReadFrom and reader no WriteTo (a hash, a
// strings.Builder, a multipart part): for a 1 KiB upload that was most of
// the garbage the request made.
func Copy(dst io.Writer, src io.Reader) (int64, error) {
	p := Get(copySize)
	n, err := io.CopyBuffer(dst, src, (*p)[:copySize])
	Put(p)
	return n, err
}
