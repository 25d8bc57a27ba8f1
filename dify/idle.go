package dify

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrStreamIdle is the cause (wrapped in ErrTruncatedStream) when a chat
// stream sends nothing for longer than the client's stream idle timeout.
var ErrStreamIdle = errors.New("no data received within the stream idle timeout")

// WithStreamIdleTimeout ends a chat stream that sends no bytes for d. Dify
// sends a keep-alive ping every 10 s while a turn runs (docs/api §2.4), so a
// silence of a minute or more means the stream is dead even though the
// connection is open. Zero (the default) waits as long as the context allows.
func WithStreamIdleTimeout(d time.Duration) Option {
	return func(c *Client) { c.streamIdle = d }
}

// idleBody closes the wrapped body when no Read returns data for d, so a
// blocked Read fails instead of hanging.
type idleBody struct {
	rc    io.ReadCloser
	d     time.Duration
	timer *time.Timer

	mu    sync.Mutex
	fired bool
}

func newIdleBody(rc io.ReadCloser, d time.Duration) *idleBody {
	b := &idleBody{rc: rc, d: d}
	b.timer = time.AfterFunc(d, func() {
		b.mu.Lock()
		b.fired = true
		b.mu.Unlock()
		rc.Close()
	})
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.timer.Reset(b.d)
	}
	if err != nil {
		b.mu.Lock()
		fired := b.fired
		b.mu.Unlock()
		if fired {
			return n, fmt.Errorf("%w (%s)", ErrStreamIdle, b.d)
		}
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.rc.Close()
}
