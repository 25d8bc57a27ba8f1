package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// textHandler is slog.TextHandler, with the access line written without
// it: at the default level serve logs a line per request, and slog's text
// handler was 7–9 % of the server's CPU in `make bench`'s GET
// /v1/parameters loop (bench/results.md, "Issue 21, thirteenth round"). It
// writes what TextHandler would, byte for byte, for a record whose
// attributes are plain strings, integers and durations that need no
// quoting (TestTextHandlerWritesWhatSlogWrites), and hands every other
// record to the TextHandler it wraps. Each record is one Write, as
// batchWriter wants.
type textHandler struct {
	slow *slog.TextHandler
	w    io.Writer
}

func newTextHandler(w io.Writer, level slog.Leveler) *textHandler {
	return &textHandler{slow: slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}), w: w}
}

func (h *textHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.slow.Enabled(ctx, l) }

// WithAttrs and WithGroup give slog's handler: only the server's own
// records (no attributes or groups added before) take the fast path.
func (h *textHandler) WithAttrs(as []slog.Attr) slog.Handler { return h.slow.WithAttrs(as) }
func (h *textHandler) WithGroup(name string) slog.Handler    { return h.slow.WithGroup(name) }

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

func (h *textHandler) Handle(ctx context.Context, r slog.Record) error {
	bp := lineBufs.Get().(*[]byte)
	defer lineBufs.Put(bp)
	line, ok := appendPlainRecord((*bp)[:0], r)
	*bp = line[:0]
	if !ok {
		return h.slow.Handle(ctx, r)
	}
	_, err := h.w.Write(line)
	return err
}

// appendPlainRecord appends r as TextHandler writes it, or reports false
// for a record it leaves to TextHandler.
func appendPlainRecord(b []byte, r slog.Record) ([]byte, bool) {
	if r.PC != 0 || !plain(r.Message) {
		return b, false
	}
	if !r.Time.IsZero() {
		b = append(b, "time="...)
		b = appendMillis(b, r.Time)
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = append(b, r.Level.String()...)
	b = append(b, " msg="...)
	b = append(b, r.Message...)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		if !plain(a.Key) {
			ok = false
			return false
		}
		b = append(b, ' ')
		b = append(b, a.Key...)
		b = append(b, '=')
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			if !plain(v.String()) {
				ok = false
				return false
			}
			b = append(b, v.String()...)
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindDuration:
			b = append(b, v.Duration().String()...)
		default:
			ok = false
			return false
		}
		return true
	})
	if !ok {
		return b, false
	}
	return append(b, '\n'), true
}

// plain reports whether TextHandler writes s as it is: not empty, and only
// letters, digits and -._/:@+~,% (it quotes spaces, '=', quotes and
// anything unprintable; these never need it).
func plain(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' ||
			c == '/' || c == ':' || c == '@' || c == '+' || c == '~' || c == ',' || c == '%') {
			return false
		}
	}
	return true
}

// appendMillis is TextHandler's time: RFC 3339 with milliseconds, in the
// time's own zone. time.RFC3339Nano has the time package's fast path (a
// layout of our own is parsed on every call, which cost more than slog's
// whole line); it drops trailing zeros, so the time is cut to the
// millisecond plus 0.1 ms, which always prints four digits, and the fourth
// is removed.
func appendMillis(b []byte, t time.Time) []byte {
	const fraction = len("2006-01-02T15:04:05.000")
	start := len(b)
	b = t.Truncate(time.Millisecond).Add(time.Millisecond/10).AppendFormat(b, time.RFC3339Nano)
	return append(b[:start+fraction], b[start+fraction+1:]...)
}
