// Package journal is dify-mock's request journal: a bounded ring buffer of
// the requests the mock answered, with what it chose for each (cassette,
// turn, rule, fault) and, for chat streams, every frame's planned and actual
// send time. Tests query it the way WireMock's request journal is queried
// ("the frontend sent files with the upload id"); the web console shows it.
//
// The journal never holds credentials: request headers are not kept at all
// (only the Origin), and bodies and query strings pass through the
// project's one secret-redaction rule set (secrets.Redact) before
// they are stored.
package journal

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// DefaultSize is how many requests the journal keeps when the size is not
// configured; older ones are dropped first.
const DefaultSize = 1000

// MaxFrames bounds the frames kept per entry; more are counted, not kept.
const MaxFrames = 5000

// DefaultBytes bounds the bytes the whole journal holds: every entry's
// request line, body, fields, frame list and frame data (kept so that an
// entry can be saved as a cassette). Past it the oldest entries are dropped,
// as past the entry count; a frame that would not fit even then keeps its
// timing but not its bytes.
const DefaultBytes = 64 << 20

// MaxEntryStream bounds the stream bytes kept for one entry.
const MaxEntryStream = 1 << 20

// Per-entry caps on what a client sends in the request line and headers
// (the rest is cut, and Entry.Truncated names the field): the redaction of
// a request costs at most this much work, whatever its size.
const (
	MaxPath   = 2 << 10
	MaxQuery  = 4 << 10
	MaxOrigin = 512
	MaxID     = 256 // user and conversation_id
)

// entryOverhead is the estimated cost of an entry besides its strings
// (struct, times, slices); frameOverhead the same for one frame.
const (
	entryOverhead = 1024 // with user and conversation_id at MaxID each
	frameOverhead = 96
)

// Frame is one SSE frame sent in a chat stream.
type Frame struct {
	// Index is the frame's position in the recorded turn, -1 for a frame the
	// mock made up (a fault's error, a stop's message_end, …).
	Index int    `json:"index"`
	Event string `json:"event"`
	// PlannedMS is when the frame was due, ActualMS when it was written,
	// both in milliseconds from the start of the stream.
	PlannedMS float64 `json:"planned_ms"`
	ActualMS  float64 `json:"actual_ms"`
	// Data is the frame's bytes as sent (omitted from listings; absent when
	// the stream budget was spent).
	Data string `json:"data,omitempty"`

	// rendered says Data is the entry's source's frame Index, rendered when
	// the entry is read with its data (Record.RenderedFrame).
	rendered bool
}

// FrameSource renders a recorded frame's bytes again, as they were written.
// A replay's frames are a pure function of its bound turn (replay.Bound), so
// for them the journal keeps the turn, once per entry, instead of a copy of
// every frame: at 10,000 streams those copies were the journal's whole byte
// bound and a fifth of the mock's CPU for a replayed turn.
//
// A source is compared with the entry's (an entry renders from one source),
// so its dynamic type must be comparable: a pointer.
type FrameSource interface {
	Render(dst []byte, index int) []byte
	// Size estimates the bytes the source holds for this entry alone (what
	// it shares with the running mock, such as a compiled cassette, is not
	// counted): the journal charges it once, as the entry's cost.
	Size() int64
}

// Upload describes a file part of a multipart request. Its contents are
// not kept.
type Upload struct {
	Field       string `json:"field"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type,omitempty"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
}

// Entry is one journaled request.
type Entry struct {
	ID     int64     `json:"id"`
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Query  string    `json:"query,omitempty"`
	Origin string    `json:"origin,omitempty"`
	// App is the name of the app the request's API key reached ("" = none:
	// a key no app owns; docs/mock/apps.md).
	App string `json:"app,omitempty"`
	// User and Conversation are the end user and conversation the request
	// named (body, query or path), when it named them.
	User         string `json:"user,omitempty"`
	Conversation string `json:"conversation_id,omitempty"`
	// Body is the JSON request body (redacted); BodyText is any other
	// textual body. BodyTruncated says the body was longer than kept.
	Body          json.RawMessage   `json:"body,omitempty"`
	BodyText      string            `json:"body_text,omitempty"`
	BodyTruncated bool              `json:"body_truncated,omitempty"`
	BodySize      int64             `json:"body_size"`
	Fields        map[string]string `json:"fields,omitempty"` // multipart text fields (redacted)
	Uploads       []Upload          `json:"uploads,omitempty"`

	Status     int     `json:"status"`
	DurationMS float64 `json:"duration_ms"`
	Done       bool    `json:"done"`

	// What the mock chose.
	Cassette string `json:"cassette,omitempty"`
	Turn     *int   `json:"turn,omitempty"`
	// Annotation is the id of the annotation whose answer played (docs/api
	// §29), in place of a cassette turn.
	Annotation string   `json:"annotation,omitempty"`
	Rule       string   `json:"rule,omitempty"`
	Fault      string   `json:"fault,omitempty"`
	Speed      *float64 `json:"speed,omitempty"`
	// Outcome is how a stream ended (completed, faulted, stopped, …).
	Outcome string `json:"outcome,omitempty"`
	// Match is how the turn was chosen (header, conversation, exact,
	// similar, default, upstream, fallback; docs/mock/hybrid.md) and Score
	// the similarity of the picked query for "similar".
	Match string   `json:"match,omitempty"`
	Score *float64 `json:"score,omitempty"`
	// Upstream is hybrid mode's part: "live" for a turn the upstream
	// answered, "fallback: REASON" when a recorded turn answered instead.
	// Saved says a live turn was saved as Cassette's Turn; NotSaved why not.
	// Normalised says how the upstream's bytes were cleaned before they
	// were relayed and saved (docs/mock/hybrid.md), "" when they came clean.
	Upstream   string `json:"upstream,omitempty"`
	Saved      bool   `json:"saved,omitempty"`
	NotSaved   string `json:"not_saved,omitempty"`
	Normalised string `json:"normalised,omitempty"`

	// Truncated names the fields that were longer than the journal keeps
	// ("path", "query", "origin", "user", "conversation_id", "body",
	// "fields"); what is kept is their start.
	Truncated []string `json:"truncated,omitempty"`

	Frames        []Frame `json:"frames,omitempty"`
	FrameCount    int     `json:"frame_count"`
	FramesDropped int     `json:"frames_dropped,omitempty"`
	// StreamDataDropped says some frames' bytes were not kept (budget).
	StreamDataDropped bool `json:"stream_data_dropped,omitempty"`
}

// Record is a live journal entry. Its methods are safe for concurrent use
// and do nothing on a nil Record, so code paths that run without a journal
// need no checks.
type Record struct {
	j      *Journal
	id     int64 // Entry.ID, set before the record is shared and never changed
	mu     sync.Mutex
	e      Entry
	start  time.Time
	stream int64       // bytes of frame data kept, copied or rendered (MaxEntryStream)
	src    FrameSource // renders the frames marked rendered
	// shared holds the bytes of the frames kept without a copy
	// (SharedFrame), by position in e.Frames (nil for the others); nil
	// until the first. Beside the list, not in Frame, so that Frame stays
	// comparable.
	shared [][]byte
	cost   int64 // bytes charged to the journal
	gone   bool  // evicted: nothing more is kept or charged
}

// Journal is the ring buffer.
type Journal struct {
	size   int
	budget int64 // bytes held across entries

	mu      sync.Mutex
	ring    []*Record // oldest first; len <= size
	nextID  int64
	held    atomic.Int64 // bytes charged by the entries in ring
	dropped atomic.Int64 // entries dropped for the byte bound

	hub hub
	now func() time.Time
}

// New returns a journal keeping the last size entries (size <= 0 means
// DefaultSize) within DefaultBytes.
func New(size int) *Journal {
	return NewBounded(size, 0)
}

// NewBounded returns a journal keeping the last size entries within bytes
// (<= 0 means DefaultSize and DefaultBytes).
func NewBounded(size int, bytes int64) *Journal {
	if size <= 0 {
		size = DefaultSize
	}
	if bytes <= 0 {
		bytes = DefaultBytes
	}
	return &Journal{size: size, budget: bytes, now: time.Now}
}

// Size is the number of entries kept.
func (j *Journal) Size() int { return j.size }

// Bytes is the byte bound.
func (j *Journal) Bytes() int64 { return j.budget }

// Held is the bytes the entries hold now (an estimate: string and body
// bytes plus a fixed overhead per entry and frame).
func (j *Journal) Held() int64 { return j.held.Load() }

// Dropped counts the entries dropped to stay within the byte bound.
func (j *Journal) Dropped() int64 { return j.dropped.Load() }

// Request is what the journal keeps of a request when it starts: the
// request line, the Origin, the end user and conversation the request names
// (query or path; a body's are added when it has been read), and the
// fields that were cut. The caller redacts them (Middleware does).
type Request struct {
	// App is the app's name (a configuration string, kept as is).
	App                         string
	Method, Path, Query, Origin string
	User, Conversation          string
	Truncated                   []string
}

// Start journals a new request and returns its live record. Path, query
// and origin are cut to MaxPath, MaxQuery and MaxOrigin bytes, user and
// conversation to MaxID. Everything is set before the entry is shared, so
// a request costs one lock here (the journal's) and none of its record's.
func (j *Journal) Start(req Request) *Record {
	rec := &Record{j: j, start: j.now()}
	e := &rec.e
	*e = Entry{Time: rec.start.UTC(), App: req.App, Truncated: req.Truncated}
	method := clip(req.Method, 32, nil, "")
	path := clip(req.Path, MaxPath, &e.Truncated, "path")
	query := clip(req.Query, MaxQuery, &e.Truncated, "query")
	origin := clip(req.Origin, MaxOrigin, &e.Truncated, "origin")
	user := clip(req.User, MaxID, &e.Truncated, "user")
	conv := clip(req.Conversation, MaxID, &e.Truncated, "conversation_id")
	// Copies, in one allocation: net/http's method, path and query are
	// slices of the request line, which an entry would otherwise keep alive
	// whole (a 700 KB line per entry).
	parts := [...]string{method, path, query, origin, user, conv}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, p := range parts {
		sb.WriteString(p)
	}
	line := sb.String()
	for i, f := range [...]*string{&e.Method, &e.Path, &e.Query, &e.Origin, &e.User, &e.Conversation} {
		*f, line = line[:len(parts[i])], line[len(parts[i]):]
	}
	rec.cost = entryOverhead + int64(n)
	j.mu.Lock()
	j.nextID++
	rec.id, e.ID = j.nextID, j.nextID
	j.ring = append(j.ring, rec)
	j.held.Add(rec.cost)
	var oldest [1]*Record // the usual eviction, without an allocation
	old := oldest[:0]
	for len(j.ring) > j.size {
		old = append(old, j.ring[0])
		j.ring[0] = nil
		j.ring = j.ring[1:]
	}
	j.mu.Unlock()
	for _, r := range old {
		j.release(r)
	}
	j.trim(rec)
	if j.hub.active() {
		j.hub.publish(Event{Type: EventRequest, ID: rec.id}, func() any { return rec.Summary() })
	}
	return rec
}

// clip cuts s to at most n bytes on a rune boundary; when it cuts, it adds
// name to *truncated.
func clip(s string, n int, truncated *[]string, name string) string {
	if len(s) <= n {
		return s
	}
	if truncated != nil {
		*truncated = append(*truncated, name)
	}
	s = s[:n]
	for len(s) > 0 && !utf8.RuneStart(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	if len(s) > 0 {
		if r, size := utf8.DecodeLastRuneInString(s); r == utf8.RuneError && size <= 1 {
			s = s[:len(s)-1]
		}
	}
	return s
}

// charge adds n bytes to r's cost and, past the byte bound, drops the
// oldest other entries. It reports false for an evicted record, which
// keeps nothing more.
func (r *Record) charge(n int64) bool {
	r.mu.Lock()
	if r.gone {
		r.mu.Unlock()
		return false
	}
	r.cost += n
	r.mu.Unlock()
	r.j.held.Add(n)
	r.j.trim(r)
	return true
}

// trim drops the oldest entries other than keep until the journal is within
// its byte bound (keep itself is never dropped here: it is being written).
func (j *Journal) trim(keep *Record) {
	if j.held.Load() <= j.budget {
		return
	}
	var old []*Record
	j.mu.Lock()
	for held := j.held.Load(); held > j.budget && len(j.ring) > 0 && j.ring[0] != keep; {
		r := j.ring[0]
		j.ring[0] = nil
		j.ring = j.ring[1:]
		old = append(old, r)
		r.mu.Lock()
		held -= r.cost
		r.mu.Unlock()
	}
	j.mu.Unlock()
	for _, r := range old {
		j.release(r)
	}
	j.dropped.Add(int64(len(old)))
}

// release gives an evicted entry's bytes back to the bound and frees its
// frame data (a live request may still hold the record).
func (j *Journal) release(r *Record) {
	r.mu.Lock()
	cost := r.cost
	r.stream, r.cost, r.gone, r.src, r.shared = 0, 0, true, nil, nil
	// The frame list goes too (FrameCount still counts): a stream runs on
	// long after its entry is dropped when more streams are live than the
	// journal keeps entries, and room made for its frames (ExpectFrames)
	// would be held until it ends: 30 MiB at 10,000 streams.
	r.e.Frames = nil
	r.mu.Unlock()
	j.held.Add(-cost)
}

// Clear removes every entry. IDs keep counting up.
func (j *Journal) Clear() {
	j.mu.Lock()
	old := j.ring
	j.ring = nil
	j.mu.Unlock()
	for _, r := range old {
		j.release(r)
	}
	j.hub.publish(Event{Type: EventCleared}, nil)
}

// records returns the entries, oldest first.
func (j *Journal) records() []*Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]*Record(nil), j.ring...)
}

// Get returns one entry with its frames (and their bytes).
func (j *Journal) Get(id int64) (Entry, bool) {
	for _, r := range j.records() {
		if r.id == id {
			return r.Snapshot(true), true
		}
	}
	return Entry{}, false
}

// Filter selects entries; zero fields match everything.
type Filter struct {
	// App matches the app's name exactly.
	App string
	// Route matches the path: a pattern whose ":name" or "*" segments match
	// any one segment, optionally preceded by a method ("POST /v1/chat-messages").
	Route        string
	User         string
	Conversation string
	// Status matches the status exactly (e.g. 429) or a class ("4xx").
	Status string
	Since  time.Time // entries at or after this time
	// AfterID keeps entries with a larger id (for polling).
	AfterID int64
	Limit   int // newest Limit entries; 0 = all
}

// List returns matching entries, oldest first, without frame bytes.
func (j *Journal) List(f Filter) []Entry {
	var out []Entry
	for _, r := range j.records() {
		e := r.Snapshot(false)
		if f.matches(&e) {
			out = append(out, e)
		}
	}
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[len(out)-f.Limit:]
	}
	return out
}

func (f *Filter) matches(e *Entry) bool {
	if f.AfterID > 0 && e.ID <= f.AfterID {
		return false
	}
	if f.Route != "" && !MatchRoute(f.Route, e.Method, e.Path) {
		return false
	}
	if f.App != "" && e.App != f.App {
		return false
	}
	if f.User != "" && e.User != f.User {
		return false
	}
	if f.Conversation != "" && !strings.EqualFold(e.Conversation, f.Conversation) {
		return false
	}
	if f.Status != "" && !matchStatus(f.Status, e.Status) {
		return false
	}
	if !f.Since.IsZero() && e.Time.Before(f.Since) {
		return false
	}
	return true
}

func matchStatus(want string, got int) bool {
	want = strings.ToLower(strings.TrimSpace(want))
	if len(want) == 3 && strings.HasSuffix(want, "xx") && want[0] >= '1' && want[0] <= '5' {
		return got/100 == int(want[0]-'0')
	}
	n := 0
	for _, c := range want {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n == got
}

// ValidStatusFilter reports whether s is a status filter List understands.
func ValidStatusFilter(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) == 3 && strings.HasSuffix(s, "xx") {
		return s[0] >= '1' && s[0] <= '5'
	}
	if len(s) != 3 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s[0] >= '1' && s[0] <= '5'
}

// MatchRoute reports whether method and path match pattern: "[METHOD ]PATH"
// where a PATH segment ":name" or "*" matches any one segment and a
// trailing "/*" matches the rest. The method is compared case-insensitively.
func MatchRoute(pattern, method, path string) bool {
	pattern = strings.TrimSpace(pattern)
	if m, p, ok := strings.Cut(pattern, " "); ok {
		if !strings.EqualFold(m, method) {
			return false
		}
		pattern = strings.TrimSpace(p)
	}
	if pattern == "" || pattern == "*" {
		return true
	}
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	for i, seg := range ps {
		if seg == "*" && i == len(ps)-1 && len(xs) >= len(ps) {
			return true
		}
		if i >= len(xs) {
			return false
		}
		if seg == "*" || strings.HasPrefix(seg, ":") {
			continue
		}
		if seg != xs[i] {
			return false
		}
	}
	return len(xs) == len(ps)
}

// ValidRoute checks a route pattern for MatchRoute.
func ValidRoute(pattern string) bool {
	pattern = strings.TrimSpace(pattern)
	if m, p, ok := strings.Cut(pattern, " "); ok {
		for _, c := range m {
			if c < 'A' || c > 'Z' && c < 'a' || c > 'z' {
				return false
			}
		}
		pattern = strings.TrimSpace(p)
	}
	return pattern == "*" || strings.HasPrefix(pattern, "/")
}

// ID is the entry's id (0 for a nil record).
func (r *Record) ID() int64 {
	if r == nil {
		return 0
	}
	return r.id
}

// Snapshot copies the entry; frame bytes only when withData is set.
func (r *Record) Snapshot(withData bool) Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.e
	if !e.Done {
		e.DurationMS = ms(r.j.now().Sub(r.start))
	}
	e.Frames = append([]Frame(nil), r.e.Frames...)
	var buf []byte
	for i := range e.Frames {
		f := &e.Frames[i]
		switch {
		case !withData:
			f.Data = ""
		case f.rendered:
			buf = r.src.Render(buf[:0], f.Index)
			f.Data = string(buf)
		case i < len(r.shared) && r.shared[i] != nil:
			f.Data = string(r.shared[i])
		}
		f.rendered = false
	}
	e.Uploads = append([]Upload(nil), r.e.Uploads...)
	if r.e.Fields != nil {
		e.Fields = make(map[string]string, len(r.e.Fields))
		for k, v := range r.e.Fields {
			e.Fields[k] = v
		}
	}
	if r.e.Turn != nil {
		t := *r.e.Turn
		e.Turn = &t
	}
	if r.e.Speed != nil {
		s := *r.e.Speed
		e.Speed = &s
	}
	return e
}

// Summary is the entry without frames, for live updates and listings.
func (r *Record) Summary() Entry {
	e := r.Snapshot(false)
	e.Frames = nil
	return e
}

// Update changes the entry under its lock (fn must not block).
func (r *Record) Update(fn func(*Entry)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	fn(&r.e)
	r.mu.Unlock()
}

// Amend is Update for a change made after the response (a live turn's
// save): the journal's subscribers (the console) are told.
func (r *Record) Amend(fn func(*Entry)) {
	if r == nil {
		return
	}
	r.Update(fn)
	r.publish(EventUpdate)
}

// Choice is what the mock chose for a chat request: a cassette turn or an
// annotation's answer, the rule it took, its fault and speed.
type Choice struct {
	Cassette   string
	Turn       *int // the cassette turn; nil for an annotation's answer
	Annotation string
	Rule       string
	Fault      string
	Speed      float64
	// Match, Score and Upstream are Entry's (docs/mock/hybrid.md).
	Match    string
	Score    *float64
	Upstream string
}

// Choice records what the mock chose for the request.
func (r *Record) Choice(c Choice) {
	r.Update(func(e *Entry) {
		e.Cassette, e.Annotation, e.Rule, e.Fault = c.Cassette, c.Annotation, c.Rule, c.Fault
		e.Match, e.Upstream = c.Match, c.Upstream
		if c.Score != nil {
			sc := *c.Score
			e.Score = &sc
		}
		if c.Turn != nil {
			t := *c.Turn
			e.Turn = &t
		}
		s := c.Speed
		e.Speed = &s
	})
	if r != nil {
		r.publish(EventUpdate)
	}
}

// Frame records a frame written at actual (time since the stream started),
// due at planned. data is copied when the budgets allow.
func (r *Record) Frame(index int, event string, planned, actual time.Duration, data []byte) {
	r.frame(index, event, planned, actual, data, nil, false)
}

// SharedFrame is Frame for bytes that nobody changes once written: the
// journal keeps data itself instead of a copy, and charges it as a copy.
// A live turn's frames are such bytes (the recorder keeps them for the
// cassette): copying each one was a tenth of what a relayed turn
// allocated.
func (r *Record) SharedFrame(index int, event string, planned, actual time.Duration, data []byte) {
	r.frame(index, event, planned, actual, data, nil, true)
}

// RenderedFrame records frame index of src, written at actual as data, due
// at planned. Its bytes are not copied: src renders them when the entry is
// read with its data, and the journal charges src's Size once per entry in
// their place. The frame's bytes still count towards MaxEntryStream, so an
// entry reads the same as if they had been copied.
func (r *Record) RenderedFrame(index int, event string, planned, actual time.Duration, data []byte, src FrameSource) {
	r.frame(index, event, planned, actual, data, src, false)
}

func (r *Record) frame(index int, event string, planned, actual time.Duration, data []byte, src FrameSource, shared bool) {
	if r == nil {
		return
	}
	f := Frame{Index: index, Event: clip(event, 64, nil, ""), PlannedMS: ms(planned), ActualMS: ms(actual)}
	r.mu.Lock()
	r.e.FrameCount++
	if len(r.e.Frames) >= MaxFrames || r.gone {
		r.e.FramesDropped++
		r.mu.Unlock()
		return
	}
	n := int64(len(data))
	keep := n > 0 && r.stream+n <= MaxEntryStream
	r.e.StreamDataDropped = r.e.StreamDataDropped || (n > 0 && !keep)
	if src != nil && r.src != nil && r.src != src {
		src = nil // one source per entry; another's frames are copied
	}
	attach := keep && src != nil && r.src == nil
	r.mu.Unlock()
	cost := frameOverhead + int64(len(f.Event))
	copied := keep && src == nil
	if copied {
		cost += n
	}
	if attach {
		cost += src.Size()
	}
	if !r.charge(cost) {
		return
	}
	if copied && r.j.held.Load() > r.j.budget {
		// Even with every older entry gone this frame's bytes do not fit:
		// keep its timing only.
		keep = false
		r.mu.Lock()
		if !r.gone {
			r.cost -= n
			r.j.held.Add(-n)
		}
		r.e.StreamDataDropped = true
		r.mu.Unlock()
	}
	r.mu.Lock()
	if r.gone {
		r.mu.Unlock()
		return
	}
	if keep {
		switch {
		case src != nil:
			r.src, f.rendered = src, true
		case shared:
			if r.shared == nil {
				r.shared = make([][]byte, len(r.e.Frames), cap(r.e.Frames))
			}
		default:
			f.Data = string(data)
		}
		r.stream += n
	}
	if r.shared != nil {
		var b []byte
		if keep && shared {
			b = data
		}
		r.shared = append(r.shared, b)
	}
	r.e.Frames = append(r.e.Frames, f)
	r.mu.Unlock()
	if r.j.hub.active() {
		f.Data, f.rendered = "", false
		r.j.hub.publish(Event{Type: EventFrame, ID: r.id}, func() any { return f })
	}
}

// ExpectFrames makes room for n frames (at most MaxFrames) before a stream
// starts, when the caller knows how many it plans to write: one allocation
// instead of the frame list doubling its way up and copying itself.
func (r *Record) ExpectFrames(n int) {
	if r == nil {
		return
	}
	n = min(n, MaxFrames)
	r.mu.Lock()
	// An evicted record keeps no frames (release).
	if !r.gone && cap(r.e.Frames)-len(r.e.Frames) < n {
		r.e.Frames = append(make([]Frame, 0, len(r.e.Frames)+n), r.e.Frames...)
	}
	r.mu.Unlock()
}

// Headers records the status of a response whose headers went out while
// the request is still in flight (Done stays false until Finish).
func (r *Record) Headers(status int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.e.Status = status
	r.mu.Unlock()
	r.publish(EventUpdate)
}

// Finish completes the entry with the response status.
func (r *Record) Finish(status int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.e.Status = status
	r.e.Done = true
	r.e.DurationMS = ms(r.j.now().Sub(r.start))
	r.mu.Unlock()
	r.publish(EventDone)
}

// publish tells the journal's subscribers, if any, of a change to the
// entry; the summary is made only for them.
func (r *Record) publish(typ string) {
	if r.j.hub.active() {
		r.j.hub.publish(Event{Type: typ, ID: r.id}, func() any { return r.Summary() })
	}
}

func ms(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// EventName returns the "event" field of an SSE data frame, "" when there
// is none. It looks only at the frame's start, where Dify puts the field.
func EventName(frame []byte) string {
	head := frame[:min(len(frame), 256)]
	if name, ok := bytes.CutPrefix(head, []byte("event:")); ok {
		if i := bytes.IndexByte(name, '\n'); i >= 0 {
			return string(bytes.TrimSpace(name[:i]))
		}
	}
	const key = `"event":`
	i := bytes.Index(head, []byte(key))
	if i < 0 {
		return ""
	}
	rest := bytes.TrimLeft(head[i+len(key):], " ")
	if len(rest) == 0 || rest[0] != '"' {
		return ""
	}
	rest = rest[1:]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}
