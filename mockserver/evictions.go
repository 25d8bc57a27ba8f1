package mockserver

import (
	"log/slog"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// evictionSummaryEvery spaces the state bound's log lines: the first
// eviction is logged at once, later ones as one summary per interval (an
// import into a small bound evicts a million records; a line each froze
// the store and flooded the log).
const evictionSummaryEvery = 10 * time.Second

// evictionLog sums the store's eviction passes and logs them at INFO.
type evictionLog struct {
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	last    time.Time // last line written
	pending store.Eviction
	// firstApp is the app of pending's first id ("" with one app).
	firstApp string
	total    int64 // records evicted since the start
}

func newEvictionLog(log *slog.Logger) *evictionLog {
	return &evictionLog{log: log, now: time.Now}
}

// add is the store's onEvict (app names the store's app when there are
// several): it runs under the store's lock, so it only sums and, at most
// once per interval, writes one line.
func (l *evictionLog) add(app string, ev store.Eviction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total += int64(ev.Count())
	p := &l.pending
	p.Conversations += ev.Conversations
	p.Files += ev.Files
	p.EndUsers += ev.EndUsers
	p.Bytes += ev.Bytes
	p.Total, p.Max = ev.Total, ev.Max
	if len(p.IDs) == 0 && len(ev.IDs) > 0 {
		p.IDs, l.firstApp = ev.IDs[:1], app
	}
	if now := l.now(); l.last.IsZero() || now.Sub(l.last) >= evictionSummaryEvery {
		l.flushLocked(now)
	}
}

// flush writes what is pending (at shutdown).
func (l *evictionLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked(l.now())
}

func (l *evictionLog) flushLocked(now time.Time) {
	p := l.pending
	if p.Count() == 0 {
		return
	}
	first := ""
	if len(p.IDs) > 0 {
		first = p.IDs[0]
	}
	attrs := []any{"conversations", p.Conversations, "files", p.Files, "end_users", p.EndUsers, "first_id", first}
	if l.firstApp != "" {
		attrs = append(attrs, "first_app", l.firstApp)
	}
	attrs = append(attrs, "bytes", p.Bytes, "state_bytes", p.Total, "max_state_bytes", p.Max, "evicted_since_start", l.total)
	l.log.Info("state bound reached: evicted the least recently changed records", attrs...)
	l.pending, l.last, l.firstApp = store.Eviction{}, now, ""
}

// evicted is the number of records evicted since the start.
func (l *evictionLog) evicted() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}
