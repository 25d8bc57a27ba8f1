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
// annotations, file uploads, audio-to-text) are retried only when the
// failure proves the server acted on nothing:
//   - a dial error (connection refused, DNS failure): no request byte left
//     this process;
//   - a 429 that is a refusal by construction (refusedUnprocessed): Dify
//     raises both of its 429s before it writes anything — the app's
//     concurrency cap (RateLimit.enter, AppInvokeQuotaExceededError →
//     too_many_requests) and the sandbox plan's daily limit
//     (InvokeRateLimitError → rate_limit_error) are checked at the top of
//     AppGenerateService.generate, before a conversation or message exists
//     (api/services/app_generate_service.py, api/libs/external_api.py) — and
//     a gateway that asks to come back later with Retry-After has not
//     passed the request on.
//
// Anything else — a 5xx, a 429 without either mark, a reset connection, a
// timeout waiting for the answer — may mean the server acted on it (a second
// chat message or a second file would be created), so the error is returned
// and the caller decides. Upload bodies are streamed from an io.Reader, so
// they cannot be replayed anyway once read.
type retryClass int

const (
	retryIdempotent retryClass = iota
	retryUnsentOnly
)

func (rc retryClass) retryStatus(e *APIError) bool {
	if rc != retryIdempotent {
		return refusedUnprocessed(e)
	}
	return e.Status == http.StatusTooManyRequests ||
		(e.Status >= 500 && e.Status != http.StatusNotImplemented)
}

// refusedUnprocessed reports an error answer that proves the request was
// refused before anything was written (see retryClass): a 429 with Dify's
// rate-limit codes, or a 429 with a Retry-After.
func refusedUnprocessed(e *APIError) bool {
	if e.Status != http.StatusTooManyRequests || e.Stream {
		return false
	}
	return e.RetryAfter > 0 || e.Code == "too_many_requests" || e.Code == "rate_limit_error"
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

// RetryStop says why a call stopped repeating a failed attempt.
type RetryStop int

const (
	// RetryNotAllowed: the failure is not one this call repeats on (a
	// 4xx, or for a call that creates something, an answer that does not
	// prove nothing was created; see RetryReport.CreatesOnce).
	RetryNotAllowed RetryStop = iota
	// RetryExhausted: every attempt the policy allows was made
	// (MaxAttempts 1 means retries are off).
	RetryExhausted
	// RetryNoTime: the next wait would end after the context's deadline.
	RetryNoTime
	// RetryCanceled: the context ended during a wait.
	RetryCanceled
	// RetryBodySent: the request's body is read once (an upload) and was
	// already read, so it cannot be sent again.
	RetryBodySent
)

// RetryReport is how a failed call went: attempts made, the limit, and why
// it stopped. Diagnostics use it to say what was and was not retried.
type RetryReport struct {
	Attempts    int
	MaxAttempts int
	Stop        RetryStop
	// Wait is the wait that did not fit before the deadline (RetryNoTime).
	Wait time.Duration
	// CreatesOnce is true for calls that create something (chat messages,
	// annotations, uploads, audio-to-text): they are repeated only on a
	// failure that proves nothing was created.
	CreatesOnce bool
}

// RetryError wraps the last failure of a call that reached the server, or
// tried to, with its RetryReport. Error and Unwrap are the last failure's,
// so errors.As finds an *APIError inside as before.
type RetryError struct {
	Err error
	RetryReport
}

func (e *RetryError) Error() string { return e.Err.Error() }
func (e *RetryError) Unwrap() error { return e.Err }

// RetryReportOf returns the RetryReport carried by err, if any.
func RetryReportOf(err error) (RetryReport, bool) {
	var re *RetryError
	if errors.As(err, &re) {
		return re.RetryReport, true
	}
	return RetryReport{}, false
}

// ProvesNothingCreated reports whether err, the failure of a call that
// creates something, proves the server created nothing: the request never
// left this process (a dial error), or the server answered with an HTTP 4xx
// before acting on it (Dify validates, authenticates and rate-limits a
// request before it writes anything; a proxy's 4xx never passed it on). A
// 5xx, a timeout or a broken connection proves nothing either way: the
// server may have acted before the failure.
func ProvesNothingCreated(err error) bool {
	if apiErr, ok := AsAPIError(err); ok {
		return !apiErr.Stream && apiErr.Status >= 400 && apiErr.Status < 500
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
