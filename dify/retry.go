package dify

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"time"
)

// RetryPolicy bounds automatic retries. Which calls may be retried, and on
// what, is decided per operation (see retryClass); the policy only says how
// often and how long to wait.
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts including the first.
	// 0 means the default (4); 1 or less than 0 disables retries.
	MaxAttempts int
	// BaseDelay is the backoff ceiling before the first retry; it doubles
	// per retry. 0 means the default (500ms).
	BaseDelay time.Duration
	// MaxDelay caps every wait, including one asked for by Retry-After.
	// 0 means the default (30s).
	MaxDelay time.Duration
}

// Retry defaults.
const (
	DefaultMaxAttempts = 4
	DefaultBaseDelay   = 500 * time.Millisecond
	DefaultMaxDelay    = 30 * time.Second
)

// DefaultRetryPolicy is what a Client uses without WithRetryPolicy.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: DefaultMaxAttempts, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	switch {
	case p.MaxAttempts == 0:
		p.MaxAttempts = DefaultMaxAttempts
	case p.MaxAttempts < 1:
		p.MaxAttempts = 1
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.BaseDelay > p.MaxDelay {
		p.BaseDelay = p.MaxDelay
	}
	return p
}

// wait returns how long to sleep before attempt number retry+1 (retry >= 1):
// the server's Retry-After hint when it gave one, otherwise capped
// exponential backoff with full jitter (a uniform draw from [0, ceiling]),
// which spreads clients that failed together. Both are capped by MaxDelay.
func (p RetryPolicy) wait(retry int, hint time.Duration) time.Duration {
	if hint > 0 {
		return min(hint, p.MaxDelay)
	}
	ceiling := p.BaseDelay
	for i := 1; i < retry && ceiling < p.MaxDelay; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, p.MaxDelay)
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// retryClass says what a failed attempt of an operation may be retried on.
//
// Idempotent operations (every GET, DELETE, stop, rename, text-to-audio)
// are retried on 429, on 5xx except 501 (Not Implemented will not change),
// and on transport failures. Stop and rename are POSTs but idempotent in
// effect: stopping a task twice is a no-op (docs/api §3 answers 200 even for a
// finished task) and renaming twice leaves the same name (auto_generate
// re-derives the name from the same first message, docs/api §7). Text-to-audio
// creates nothing on the server (docs/api §12). A DELETE retried after a first
// attempt that did succeed answers 404; callers deleting should treat
// IsNotFound as success, as docs/api §8 advises anyway.
//
// Operations that create something or carry a one-shot body (chat messages,
// file uploads, audio-to-text) are retried only when the failure proves the
// request never left this process: a dial error (connection refused, DNS
// failure) before any body byte was read. Anything later — a 429, a 5xx, a
// reset connection — may mean the server acted on it (a second chat message
// or a second file would be created), so the error is returned and the
// caller decides. Upload bodies are streamed from an io.Reader, so they
// could not be replayed anyway once read.
type retryClass int

const (
	retryIdempotent retryClass = iota
	retryUnsentOnly
)

func (rc retryClass) retryStatus(status int) bool {
	if rc != retryIdempotent {
		return false
	}
	return status == http.StatusTooManyRequests ||
		(status >= 500 && status != http.StatusNotImplemented)
}

func (rc retryClass) retryError(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if rc == retryIdempotent {
		return true
	}
	return isDialError(err)
}

// isDialError reports a failure to open the connection, which proves no
// request byte reached the server.
func isDialError(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// sleep waits d or until ctx ends; it reports whether the full wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
