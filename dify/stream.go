package dify

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// ChatStream is a live chat reply (docs/api §2.4–2.5). Next yields its events in
// order; Close releases the connection. Next is not safe for concurrent use,
// but Close may be called from another goroutine to abort a pending Next.
type ChatStream struct {
	fr     *FrameReader
	closer io.Closer
	resp   *http.Response

	ended bool  // message_end seen: the turn is complete
	err   error // sticky result once the stream is over

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// NewChatStream reads chat events from r, for example a recorded stream. If
// r is an io.Closer, Close closes it.
func NewChatStream(r io.Reader) *ChatStream {
	s := &ChatStream{fr: NewFrameReader(r)}
	if c, ok := r.(io.Closer); ok {
		s.closer = c
	}
	return s
}

// Header returns the HTTP response headers of the stream (nil for a stream
// made by NewChatStream).
func (s *ChatStream) Header() http.Header {
	if s.resp == nil {
		return nil
	}
	return s.resp.Header
}

// StatusCode returns the HTTP status of the stream (0 for a stream made by
// NewChatStream).
func (s *ChatStream) StatusCode() int {
	if s.resp == nil {
		return 0
	}
	return s.resp.StatusCode
}

// Next returns the next event. Pings arrive as *PingEvent and events this
// package does not model as *UnknownEvent. A frame that cannot be decoded
// yields a *FrameError; the stream stays usable and the following call
// continues with the next frame.
//
// The stream ends in one of three ways:
//   - after an *ErrorEvent (Dify's in-stream failure, docs/api §2.5) has been
//     returned, Next returns io.EOF without reading further;
//   - after a *MessageEndEvent, Next keeps returning what the server still
//     sends (tts_message and tts_message_end trail message_end, docs/api §2.5)
//     and returns io.EOF when the body ends — even if it ends abruptly,
//     since the turn is complete;
//   - if the body ends (or the connection fails, or ctx is cancelled, or the
//     stream is closed) before either, Next returns an error matching
//     ErrTruncatedStream and wrapping the cause.
func (s *ChatStream) Next() (Event, error) {
	for s.err == nil {
		f, rerr := s.fr.Next()
		if errors.Is(rerr, ErrFrameTooLarge) {
			s.finish(rerr) // the frame is incomplete and must not be decoded
			break
		}
		ev, derr := DecodeEvent(f)
		if rerr != nil {
			s.finish(rerr)
			// A final frame cut before its blank line is still used when
			// it decodes: nothing was lost but the terminator.
			if derr != nil && !s.ended {
				s.err = fmt.Errorf("%w: incomplete final frame: %w", ErrTruncatedStream, derr)
			}
			if derr != nil || ev == nil {
				break
			}
		} else if derr != nil {
			return nil, derr
		}
		if ev == nil {
			continue
		}
		switch ev.(type) {
		case *ErrorEvent:
			s.err = io.EOF
		case *MessageEndEvent:
			s.ended = true
			if s.err != nil {
				s.err = io.EOF
			}
		}
		return ev, nil
	}
	return nil, s.err
}

// finish records why the stream is over.
func (s *ChatStream) finish(cause error) {
	switch {
	case s.ended:
		s.err = io.EOF
	case s.closed.Load():
		s.err = fmt.Errorf("%w: the stream was closed", ErrTruncatedStream)
	case errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrUnexpectedEOF):
		s.err = ErrTruncatedStream
	default:
		s.err = fmt.Errorf("%w: %w", ErrTruncatedStream, cause)
	}
}

// Close closes the underlying body; it is safe to call more than once and
// concurrently with Next.
func (s *ChatStream) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.closer != nil {
			s.closeErr = s.closer.Close()
		}
	})
	return s.closeErr
}
