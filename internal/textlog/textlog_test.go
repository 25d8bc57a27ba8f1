package textlog

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// slogText is what slog.TextHandler writes for r.
func slogText(t testing.TB, r slog.Record) string {
	t.Helper()
	var b bytes.Buffer
	if err := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fastText is what Handler writes for r.
func fastText(t testing.TB, r slog.Record) string {
	t.Helper()
	var b bytes.Buffer
	if err := NewHandler(&b, slog.LevelDebug).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func logRecord(at time.Time, level slog.Level, msg string, attrs ...slog.Attr) slog.Record {
	r := slog.NewRecord(at, level, msg, 0)
	r.AddAttrs(attrs...)
	return r
}

// The access line, and every other record, reads the same as slog's.
func TestTextHandlerWritesWhatSlogWrites(t *testing.T) {
	utc := time.Date(2026, 12, 3, 22, 14, 52, 82_000_000, time.UTC)
	east := time.Date(2026, 12, 3, 22, 14, 52, 999_999_999, time.FixedZone("KST", 9*3600))
	for name, r := range map[string]slog.Record{
		"access line": logRecord(utc, slog.LevelInfo, "request", slog.String("method", "GET"), slog.String("path", "/v1/parameters"),
			slog.Int("status", 200), slog.Duration("duration", 52*time.Microsecond)),
		"a chat turn": logRecord(east, slog.LevelInfo, "request", slog.String("method", "POST"), slog.String("path", "/v1/chat-messages"),
			slog.Int("status", 200), slog.Duration("duration", 13*time.Second+912*time.Millisecond), slog.String("cassette", "tool-use"), slog.String("turn", "0")),
		"a refusal, its message quoted": logRecord(utc, slog.LevelInfo, "request", slog.String("method", "GET"), slog.String("path", "/v1/messages"),
			slog.Int("status", 400), slog.String("code", "invalid_param"), slog.String("message", "conversation_id is required")),
		"an empty path":       logRecord(utc, slog.LevelInfo, "request", slog.String("path", "")),
		"a path with a space": logRecord(utc, slog.LevelInfo, "request", slog.String("path", "/v1/a b")),
		"a path with a quote": logRecord(utc, slog.LevelInfo, "request", slog.String("path", `/v1/"x"`)),
		"a path with =":       logRecord(utc, slog.LevelInfo, "request", slog.String("path", "/v1/?a=b")),
		"unicode":             logRecord(utc, slog.LevelWarn, "request", slog.String("path", "/v1/서울")),
		"no time":             logRecord(time.Time{}, slog.LevelError, "request", slog.Int("status", -1)),
		"a message to quote":  logRecord(utc, slog.LevelInfo, "replay ended early", slog.Bool("ok", true)),
		"other kinds":         logRecord(utc, slog.LevelDebug, "x", slog.Any("err", context.Canceled), slog.Float64("f", 0.5), slog.Time("at", utc)),
		"a group":             logRecord(utc, slog.LevelInfo, "x", slog.Group("g", slog.Int("a", 1))),
		"a whole second":      logRecord(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), slog.LevelInfo, "request", slog.Int("status", 200)),
		"local time":          logRecord(time.Date(2026, 6, 30, 23, 59, 59, 999_500_000, time.FixedZone("", -(3*3600+30*60))), slog.LevelInfo, "request"),
		"level above error":   logRecord(utc, slog.LevelError+2, "request", slog.Int("status", 500)),
	} {
		if got, want := fastText(t, r), slogText(t, r); got != want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	// The access line takes the fast path (slog would not allocate less).
	r := logRecord(utc, slog.LevelInfo, "request", slog.String("method", "GET"), slog.String("path", "/v1/parameters"),
		slog.Int("status", 200), slog.Duration("duration", 52*time.Microsecond))
	if _, ok := appendPlainRecord(nil, r); !ok {
		t.Fatal("the access line is not written by the fast path")
	}
}

// Loggers derived with attributes or groups are slog's own.
func TestTextHandlerDerivedLoggersAreSlogs(t *testing.T) {
	var fast, slow bytes.Buffer
	at := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	r := logRecord(at, slog.LevelInfo, "request", slog.Int("status", 200))
	_ = NewHandler(&fast, slog.LevelInfo).WithAttrs([]slog.Attr{slog.String("app", "x")}).WithGroup("g").Handle(context.Background(), r)
	_ = slog.NewTextHandler(&slow, nil).WithAttrs([]slog.Attr{slog.String("app", "x")}).WithGroup("g").Handle(context.Background(), r)
	if fast.String() != slow.String() {
		t.Fatalf("got %q, want %q", fast.String(), slow.String())
	}
	if NewHandler(&fast, slog.LevelWarn).Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("info is enabled at level warn")
	}
}

// Whatever the strings, the output is slog's.
func FuzzTextHandlerWritesWhatSlogWrites(f *testing.F) {
	for _, s := range []string{"GET", "/v1/parameters", "", "a b", "서울", "x=y", "\x00", "\"", "tool-use", "%2F", "\\"} {
		f.Add(s, s, int64(200), int64(52000))
	}
	at := time.Date(2026, 12, 3, 22, 14, 52, 82_000_000, time.UTC)
	f.Fuzz(func(t *testing.T, msg, s string, n, d int64) {
		r := logRecord(at, slog.LevelInfo, msg, slog.String("path", s), slog.Int64("status", n), slog.Duration("duration", time.Duration(d)), slog.String(s, "v"))
		if got, want := fastText(t, r), slogText(t, r); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

// Whatever the time and its zone, the time is slog's: the stamp kept for
// a second is right for every instant in it, and for the next second, and
// for another zone in the same second.
func FuzzAppendMillisWritesWhatSlogWrites(f *testing.F) {
	f.Add(time.Date(2026, 12, 3, 22, 14, 52, 82_000_000, time.UTC).UnixNano(), int32(0), int64(999_999_999))
	f.Add(time.Date(2026, 3, 29, 0, 59, 59, 999_999_999, time.UTC).UnixNano(), int32(3600), int64(1))
	f.Add(int64(-1), int32(-12600), int64(500_000))
	f.Fuzz(func(t *testing.T, unixNano int64, offset int32, later int64) {
		zone := time.FixedZone("", int(offset%(18*3600)))
		at := time.Unix(0, unixNano).In(zone)
		for _, t2 := range []time.Time{at, at.Add(time.Duration(later % int64(2*time.Second))), at.In(time.UTC), at.Add(time.Duration(later))} {
			got := string(appendMillis(nil, t2))
			want := string(appendMillisSlow(nil, t2))
			if got != want {
				t.Fatalf("%v: got %q, want %q", t2, got, want)
			}
		}
		r := logRecord(at, slog.LevelInfo, "request")
		if got, want := fastText(t, r), slogText(t, r); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

func BenchmarkAccessLine(b *testing.B) {
	h := NewHandler(io.Discard, slog.LevelInfo)
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		r := logRecord(at, slog.LevelInfo, "request", slog.String("method", "GET"), slog.String("path", "/v1/parameters"),
			slog.Int("status", 200), slog.Duration("duration", 52*time.Microsecond))
		_ = h.Handle(context.Background(), r)
	}
}
