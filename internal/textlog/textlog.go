// Package textlog is a slog handler that writes what slog.TextHandler
// writes, cheaper for the records a server logs on every request.
package textlog

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Handler is slog.TextHandler, with plain records written without it: at
// its default level dify-mock serve logs an access line per request, and
// slog's text handler was 7–9 % of the server's CPU in `make bench`'s GET
// /v1/parameters loop (bench/results.md, "Issue 21, thirteenth round"). It
// writes what TextHandler would, byte for byte, for a record whose
// attributes are plain strings, integers and durations that need no
// quoting (TestTextHandlerWritesWhatSlogWrites), and hands every other
// record to the TextHandler it wraps. Each record is one Write, so a
// writer that batches lines never splits one.
type Handler struct {
	slow *slog.TextHandler
	w    io.Writer
}

// NewHandler returns a Handler writing to w the records at level and above.
func NewHandler(w io.Writer, level slog.Leveler) *Handler {
	return &Handler{slow: slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}), w: w}
}

func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.slow.Enabled(ctx, l) }

// WithAttrs and WithGroup give slog's handler: only the server's own
// records (no attributes or groups added before) take the fast path.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler { return h.slow.WithAttrs(as) }
func (h *Handler) WithGroup(name string) slog.Handler    { return h.slow.WithGroup(name) }

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
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
// time's own zone. The date, the time to the second and the zone change
// once a second, so they are formatted once a second (lastSecond) and only
// the milliseconds on every line; formatting the whole time was a quarter
// of the access line's cost.
func appendMillis(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	st := lastSecond.Load()
	if st == nil || st.unix != sec || st.loc != loc {
		if st = newSecondStamp(t); st == nil {
			return appendMillisSlow(b, t)
		}
		lastSecond.Store(st)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, st.head...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, st.zone...)
}

// secondStamp is one second's time as appendMillis writes it, split
// around the milliseconds: "2006-01-02T15:04:05" and "Z07:00".
type secondStamp struct {
	unix       int64
	loc        *time.Location
	head, zone string
}

// lastSecond is the stamp of the second the last line was written in.
var lastSecond atomic.Pointer[secondStamp]

// newSecondStamp formats t's second, or returns nil for a year that does
// not have four digits (whose layout differs; appendMillisSlow writes it).
func newSecondStamp(t time.Time) *secondStamp {
	if y := t.Year(); y < 0 || y > 9999 {
		return nil
	}
	const head = len("2006-01-02T15:04:05")
	b := appendMillisSlow(make([]byte, 0, 32), t)
	return &secondStamp{unix: t.Unix(), loc: t.Location(), head: string(b[:head]), zone: string(b[head+len(".000"):])}
}

// appendMillisSlow formats the whole time as TextHandler does.
// time.RFC3339Nano has the time package's fast path (a layout of our own
// is parsed on every call); it drops trailing zeros, so the time is cut to
// the millisecond plus 0.1 ms, which always prints four digits, and the
// fourth is removed.
func appendMillisSlow(b []byte, t time.Time) []byte {
	const fraction = len("2006-01-02T15:04:05.000")
	start := len(b)
	b = t.Truncate(time.Millisecond).Add(time.Millisecond/10).AppendFormat(b, time.RFC3339Nano)
	return append(b[:start+fraction], b[start+fraction+1:]...)
}
