package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logFlushDelay bounds how long a log line waits in the buffer.
const logFlushDelay = 20 * time.Millisecond

// batchWriter buffers log lines and writes them out at most logFlushDelay
// after the first unwritten one (or when 32 KiB are pending): at the
// default level serve logs a line per request, and one write(2) per line
// was a tenth of the server's CPU at 20,000 requests/s (bench/results.md).
// Close writes what is left; lines are never split or reordered.
type batchWriter struct {
	mu    sync.Mutex
	w     *bufio.Writer
	timer *time.Timer
	armed bool
}

func newBatchWriter(w io.Writer) *batchWriter {
	b := &batchWriter{w: bufio.NewWriterSize(w, 32<<10)}
	b.timer = time.AfterFunc(time.Hour, b.flush)
	b.timer.Stop()
	return b
}

// Write takes one log record (slog writes each with a single call).
func (b *batchWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w.Available() < len(p) {
		_ = b.w.Flush()
	}
	n, err := b.w.Write(p)
	if !b.armed && b.w.Buffered() > 0 {
		b.armed = true
		b.timer.Reset(logFlushDelay)
	}
	return n, err
}

func (b *batchWriter) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = false
	_ = b.w.Flush()
}

// Close flushes what is buffered.
func (b *batchWriter) Close() error {
	b.timer.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = false
	return b.w.Flush()
}
