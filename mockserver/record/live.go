package record

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/lint"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/similar"
)

// Forwarding one chat turn for dify-mock serve's hybrid mode (serve
// --upstream; docs/mock/hybrid.md). The mock keeps its own state and ids;
// the recorder sends the turn upstream with its key, hands every frame to
// the caller the moment it is complete (the caller rewrites ids and writes
// it to its client), and saves the turn into the cassette folder through
// the same session, scrubbing and save-time secret check as `record`.

// ChatTurn is one chat turn to send upstream.
type ChatTurn struct {
	// Query, Inputs and User are the client's; ConversationID is the
	// upstream conversation to continue ("" starts one).
	Query          string
	Inputs         map[string]any
	User           string
	ConversationID string
	// FirstFrameTimeout bounds the wait for the answer's headers and its
	// first frame; past it the turn fails with an UpstreamError of kind
	// UpstreamTimeout and nothing has been relayed. 0 = no bound of its own.
	FirstFrameTimeout time.Duration
	// IdleTimeout bounds the silence between two frames once the stream
	// runs (Dify pings every 10 s while an agent works); past it the stream
	// is cut and Forwarded.StreamErr says so. 0 = no bound of its own.
	IdleTimeout time.Duration
	// Flush, when set, is called after relay whenever no further whole
	// frame has arrived, so relay need not flush each frame: frames the
	// upstream sent together (an agent_thought and its agent_message) go
	// to the client together, in one write, as a plain relay passes them.
	// Each frame on its own was a write for the mock and a read for the
	// client, a third more of both than the bare relay of the live lane
	// (bench/README.md). Nil: relay flushes each frame itself.
	Flush func() error
}

// Forwarded is what became of a forwarded turn whose answer started
// streaming.
type Forwarded struct {
	// Header is the upstream's response header.
	Header http.Header
	// ConversationID is the upstream conversation the turn belongs to.
	ConversationID string
	// Frames are the upstream's whole frames, cleaned (clean.go) and as
	// relay left them, with their offsets from the request start. A frame
	// the stream cut is not among them.
	Frames []cassette.RecordedFrame
	// StreamErr is what cut the stream short (nil when it ended cleanly).
	StreamErr error
	// Cassette is the cassette the turn belongs to (also when it was not
	// saved) and Turn its index there.
	Cassette string
	Turn     int
	// Saved reports that the cassette file now holds the turn; NotSaved
	// says why not otherwise. Both are final once Save returned.
	Saved    bool
	NotSaved string
	// Normalised says how cleaning changed the upstream's bytes
	// (clean.go), "" when they came clean.
	Normalised string
	// Added is the saved cassette as written (all its turns), for the
	// caller to serve without reading the folder again; nil unless Saved.
	Added *cassette.Cassette

	pending *pendingSave // the save Save runs
}

// Kinds of UpstreamError.
const (
	UpstreamUnreachable = "unreachable" // no connection or no answer
	UpstreamTimeout     = "timeout"     // no first frame within the bound
	UpstreamStatus      = "status"      // an HTTP error status (401, 429, 5xx, …)
	UpstreamRedirect    = "redirect"    // a 3xx answer, never followed
	UpstreamNotStream   = "not-stream"  // 200 without an event stream
)

// UpstreamError is a forwarded turn that failed before any frame reached
// the caller: the caller can still answer another way.
type UpstreamError struct {
	Kind   string
	Status int    // HTTP status for UpstreamStatus and UpstreamRedirect
	Detail string // Dify's code and message, or the transport error
}

func (e *UpstreamError) Error() string {
	switch e.Kind {
	case UpstreamStatus:
		return fmt.Sprintf("the upstream answered HTTP %d: %s", e.Status, e.Detail)
	case UpstreamRedirect:
		return fmt.Sprintf("the upstream answered a redirect (HTTP %d), which is never followed", e.Status)
	case UpstreamTimeout:
		return "the upstream sent no answer in time: " + e.Detail
	case UpstreamNotStream:
		return "the upstream answered without an event stream: " + e.Detail
	}
	return "the upstream could not be reached: " + e.Detail
}

// liveBody is the chat body sent upstream (docs/api §2.1). Files are not
// forwarded: their upload ids are the mock's.
type liveBody struct {
	Query          string         `json:"query"`
	Inputs         map[string]any `json:"inputs"`
	User           string         `json:"user"`
	ResponseMode   string         `json:"response_mode"`
	ConversationID string         `json:"conversation_id,omitempty"`
}

// Forward sends t upstream and calls relay with each whole frame of the
// answer, cleaned (clean.go), as soon as it is complete; relay may rewrite
// the frame in place without changing its length. An error from relay (the
// client left) ends the upstream request, and the turn is not saved, as
// `record` does not save a turn its client abandoned. A turn to save is
// left pending: the caller runs Save once its client has the answer. It returns an *UpstreamError when the turn
// failed before the first frame (relay was never called).
//
// The turn joins the session of its upstream conversation, else starts one
// named after the query; a follow-up whose session was closed (bound.go)
// is forwarded but not saved. Config.MaxTurns bounds the turns saved; with
// Config.SkipRecordedQueries a session whose first query a chat cassette in
// the folder already answers is not saved.
func (r *Recorder) Forward(ctx context.Context, t ChatTurn, relay func(raw []byte) error) (*Forwarded, error) {
	start := time.Now()
	inputs := t.Inputs
	if inputs == nil {
		inputs = map[string]any{}
	}
	body, err := json.Marshal(liveBody{Query: t.Query, Inputs: inputs, User: t.User, ResponseMode: dify.ResponseModeStreaming, ConversationID: t.ConversationID})
	if err != nil {
		return nil, &UpstreamError{Kind: UpstreamUnreachable, Detail: err.Error()}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var watchdog *time.Timer
	if t.FirstFrameTimeout > 0 {
		watchdog = time.AfterFunc(t.FirstFrameTimeout, func() { cancel(errFirstFrame) })
	}
	out, err := r.up.NewRequest(ctx, http.MethodPost, "/chat-messages", "", bytes.NewReader(body))
	if err != nil {
		return nil, &UpstreamError{Kind: UpstreamUnreachable, Detail: err.Error()}
	}
	out.Header.Set("Content-Type", "application/json")
	out.Header.Set("Accept", "text/event-stream")
	resp, err := r.transport.RoundTrip(out)
	if err != nil {
		if errors.Is(context.Cause(ctx), errFirstFrame) {
			return nil, &UpstreamError{Kind: UpstreamTimeout, Detail: fmt.Sprintf("no answer within %s", t.FirstFrameTimeout)}
		}
		return nil, &UpstreamError{Kind: UpstreamUnreachable, Detail: r.scrub.string(err.Error())}
	}
	defer resp.Body.Close()
	headersAt := time.Since(start)
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, &UpstreamError{Kind: UpstreamRedirect, Status: resp.StatusCode}
	case resp.StatusCode != http.StatusOK:
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, &UpstreamError{Kind: UpstreamStatus, Status: resp.StatusCode, Detail: difyMessage(r.scrub.bytes(data))}
	case !dify.IsEventStream(resp.Header):
		return nil, &UpstreamError{Kind: UpstreamNotStream, Detail: "Content-Type " + r.scrub.string(resp.Header.Get("Content-Type"))}
	}

	probe := r.probeName(slug(r.scrub.string(t.Query)))
	r.mu.Lock()
	s := r.byConversation[t.ConversationID]
	// A follow-up whose session was closed (bound.go) would start a new
	// cassette out of context, as an orphan would.
	closedConversation := t.ConversationID != "" && s == nil
	openBound := r.maxOpen
	if s == nil {
		s = r.newSessionLocked(probe, "", t.User)
	}
	r.touchLocked(s)
	r.mu.Unlock()

	// The first frame decides between relaying and falling back, so it is
	// awaited under the watchdog; frames that follow only need to keep
	// coming.
	// One idle timer, reset at each frame: a timer made per frame was an
	// allocation and two timer-heap operations on every frame relayed.
	var idle *time.Timer
	frameTimer := func() {
		switch {
		case idle != nil:
			idle.Reset(t.IdleTimeout)
		case watchdog != nil || t.IdleTimeout > 0:
			if watchdog != nil {
				watchdog.Stop()
			}
			if t.IdleTimeout > 0 {
				idle = time.AfterFunc(t.IdleTimeout, func() { cancel(errIdle) })
				watchdog = idle
			} else {
				watchdog = nil
			}
		}
	}
	fwd := &Forwarded{Header: resp.Header}
	seen := map[string]bool{}
	var (
		relayErr, streamErr error
		frames              []cassette.RecordedFrame
		cleaned             notes
	)
	ended := false // a message_end or error event came: the turn is whole
	sse := &lineEnds{r: resp.Body}
	fr := dify.NewFrameReader(sse)
	// unflushed: relayed and not yet flushed (ChatTurn.Flush), until no
	// further whole frame is in hand (or force, at the stream's end).
	unflushed := false
	flush := func(force bool) {
		if !unflushed || relayErr != nil || (!force && fr.Ready()) {
			return
		}
		unflushed = false
		if relayErr = t.Flush(); relayErr != nil {
			cancel(errClientGone)
		}
	}
	for {
		f, err := fr.Next()
		if err != nil {
			// Only whole frames go on: a frame the upstream cut (a broken
			// connection, the idle bound, the answer cap) is dropped
			// whole, so the caller can end the stream with a frame of
			// its own after the last whole one.
			switch {
			case errors.Is(err, io.ErrUnexpectedEOF):
				streamErr = errCutMidFrame
			case !errors.Is(err, io.EOF):
				streamErr = err
			}
			break
		}
		frameTimer()
		raw := r.cleanFrame(f, &cleaned)
		if raw == nil {
			flush(false)
			continue
		}
		off := time.Since(start)
		ff := parseFrameEnvelope(raw)
		if fwd.ConversationID == "" {
			fwd.ConversationID = ff.ConversationID
		}
		ended = ended || ff.Event == dify.EventMessageEnd || ff.Event == dify.EventError
		// Only the conversation id: follow-ups come with it, while stop
		// requests and message calls are the mock's own, so their upstream
		// ids would never be looked up.
		r.indexOnce(r.byConversation, ff.ConversationID, s, seen)
		if relayErr == nil {
			if relayErr = relay(raw); relayErr != nil {
				cancel(errClientGone)
			}
			unflushed = t.Flush != nil
		}
		flush(false)
		// Kept as relay left it (it may rewrite ids in place): one copy
		// of the answer serves the caller's store and the save.
		frames = append(frames, cassette.RecordedFrame{Offset: off, Raw: raw})
	}
	flush(true)
	if sse.seen {
		cleaned.add(noteLineEnds)
	}
	if watchdog != nil {
		watchdog.Stop()
	}
	if cause := context.Cause(ctx); streamErr != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		streamErr = cause
	}
	if len(frames) == 0 {
		if errors.Is(streamErr, errFirstFrame) || errors.Is(context.Cause(ctx), errFirstFrame) {
			return nil, &UpstreamError{Kind: UpstreamTimeout, Detail: fmt.Sprintf("no frame within %s", t.FirstFrameTimeout)}
		}
		detail := "the stream ended before its first frame"
		if streamErr != nil {
			detail = r.scrub.string(streamErr.Error())
		}
		return nil, &UpstreamError{Kind: UpstreamUnreachable, Detail: detail}
	}
	if streamErr == nil && !ended {
		// A connection cut between frames reads as the end of the body.
		streamErr = errNoEnd
	}
	if streamErr != nil {
		streamErr = errors.New(r.scrub.string(streamErr.Error()))
	}
	fwd.Frames, fwd.StreamErr, fwd.Normalised = frames, streamErr, cleaned.String()
	r.mu.Lock()
	fwd.Cassette = s.name
	r.mu.Unlock()
	s.mu.Lock()
	fwd.Turn = s.offered
	first := s.offered == 0
	s.offered++
	s.mu.Unlock()

	switch {
	case closedConversation:
		fwd.NotSaved = fmt.Sprintf("its conversation is no longer open for recording (%d more recently used conversations are)", openBound)
	case relayErr != nil:
		fwd.NotSaved = "the client disconnected before the stream ended"
	case streamErr != nil:
		fwd.NotSaved = "the upstream stream broke: " + streamErr.Error()
	case r.maxTurns < 0:
		fwd.NotSaved = "saving is off (--max-new-turns 0)"
	case !r.takeTurn():
		fwd.NotSaved = fmt.Sprintf("this run already added %d turn(s), the --max-new-turns cap", r.maxTurns)
	}
	if fwd.NotSaved != "" {
		r.logf("cassette %s: turn %d not saved: %s", fwd.Cassette, fwd.Turn, fwd.NotSaved)
		return fwd, nil
	}
	if t.ConversationID != "" {
		// The saved turn is the stream as relayed, whose ids relay may
		// have rewritten: its request names the conversation as its
		// stream does, so that the cassette's turns hang together.
		if conv := parseFrameFields(frames[0].Raw).ConversationID; conv != "" && conv != t.ConversationID {
			body, _ = json.Marshal(liveBody{Query: t.Query, Inputs: inputs, User: t.User, ResponseMode: dify.ResponseModeStreaming, ConversationID: conv})
		}
	}
	// The save waits for Save, off the caller's response; saves keep the
	// order their streams ended in (a conversation's turns in turn order).
	p := &pendingSave{s: s, user: t.User, query: t.Query, out: out, body: body, status: resp.StatusCode, header: resp.Header, headersAt: headersAt,
		first: first, dedupe: first && r.skipRecorded, done: make(chan struct{})}
	r.mu.Lock()
	p.prev, r.saveTail = r.saveTail, p.done
	r.mu.Unlock()
	fwd.pending = p
	return fwd, nil
}

// pendingSave is a forwarded turn waiting for Save.
type pendingSave struct {
	s           *session
	user, query string
	out         *http.Request
	body        []byte
	status      int
	header      http.Header
	headersAt   time.Duration
	// first: the conversation's first turn. A later turn is saved only
	// if the first was: replayed without it, it would answer out of
	// context. Known once the saves before it have run (they run in turn
	// order), so it is decided at save time.
	first bool
	// dedupe: a new conversation, saved only if no cassette in the folder
	// has its query yet (Config.SkipRecordedQueries). The folder is read
	// at save time, off the response path.
	dedupe     bool
	prev, done chan struct{} // the save before this one; closed when this one ends
}

// Pending reports that the turn waits for Save (which releases Frames).
func (f *Forwarded) Pending() bool { return f.pending != nil }

// Save saves a forwarded turn that Forward left pending (a no-op
// otherwise), after the saves of the turns that ended before it, and
// sets Saved, NotSaved, Cassette and Added. Callers run it once the client
// has its answer: a save writes the whole cassette file.
//
// The turn is saved only if the cassette then passes `dify-mock lint`
// (mockserver/lint): what the upstream sends is cleaned frame by frame
// (clean.go), and what cleaning cannot mend is refused here, so a team's
// CI never meets a file hybrid mode wrote that lint rejects.
func (r *Recorder) Save(fwd *Forwarded) {
	p := fwd.pending
	if p == nil {
		return
	}
	fwd.pending = nil
	if p.prev != nil {
		<-p.prev
	}
	defer close(p.done)
	if r.beforeSave != nil {
		r.beforeSave(fwd.Cassette)
	}
	p.s.mu.Lock()
	orphan := !p.first && p.s.turns == 0
	p.s.mu.Unlock()
	if orphan {
		fwd.NotSaved = "the conversation's first turn was not saved"
	} else if p.dedupe {
		if file, ok := r.recordedQuery(p.query); ok {
			fwd.NotSaved = "its query is already recorded in " + file
		}
	}
	if fwd.NotSaved != "" {
		r.giveTurnBack()
		fwd.Frames = nil
		r.logf("cassette %s: turn %d not saved: %s", fwd.Cassette, fwd.Turn, fwd.NotSaved)
		return
	}
	var lintErr error
	gate := func(name string, data []byte) error {
		if probs := lint.Bytes(name+".yaml", data); len(probs) > 0 {
			lintErr = &LintRefusedError{Cassette: name, Problems: probs}
			return lintErr
		}
		return nil
	}
	// The frames are not held past the point where the interaction has
	// its own copy: a save holds an answer's frames once at any time.
	frames := fwd.Frames
	fwd.Frames = nil
	saved, ok := r.saveTurnGated(p.s, p.user, p.query, p.out, p.body, p.status, p.header, frames, p.headersAt, gate)
	r.mu.Lock()
	fwd.Cassette = p.s.name // a clash at write time may have renamed it
	r.mu.Unlock()
	if !ok {
		r.giveTurnBack()
		fwd.NotSaved = "the save was refused (see the log)"
		if lintErr != nil {
			fwd.NotSaved = lintErr.Error()
		}
		return
	}
	fwd.Saved, fwd.Added = true, saved
}

// LintRefusedError is a live turn not saved because its cassette would
// fail `dify-mock lint`; nothing was written.
type LintRefusedError struct {
	Cassette string
	Problems []lint.Problem
}

func (e *LintRefusedError) Error() string {
	const show = 3
	list := make([]string, 0, show)
	for i, p := range e.Problems {
		if i == show {
			list = append(list, fmt.Sprintf("and %d more", len(e.Problems)-show))
			break
		}
		list = append(list, p.String())
	}
	return "not saved: the cassette would fail dify-mock lint: " + strings.Join(list, "; ")
}

var (
	errFirstFrame = errors.New("no first frame in time")
	errIdle       = errors.New("the upstream stream went silent")
	errClientGone = errors.New("the client disconnected")
	errNoEnd      = errors.New("it ended without message_end")
	// errCutMidFrame is a body that ended inside a frame.
	errCutMidFrame = errors.New("the connection ended in the middle of a frame")
)

// takeTurn reserves one of the run's MaxTurns saves; false when none is
// left.
func (r *Recorder) takeTurn() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.maxTurns > 0 && r.savedTurns >= r.maxTurns {
		return false
	}
	r.savedTurns++
	return true
}

func (r *Recorder) giveTurnBack() {
	r.mu.Lock()
	r.savedTurns--
	r.mu.Unlock()
}

// SavedTurns is the number of chat turns saved so far by Forward.
func (r *Recorder) SavedTurns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.savedTurns
}

// recordedQuery finds a chat cassette in the folder with a turn whose query
// is q once normalised (SameQuery). The folder is read again each time:
// another mock may have added a cassette meanwhile.
func (r *Recorder) recordedQuery(q string) (string, bool) {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		path := filepath.Join(r.dir, e.Name())
		if st, err := e.Info(); err != nil || st.Size() > cassette.MaxFileSize {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		f, err := cassette.Decode(path, data)
		if err != nil || f.Meta.Kind != cassette.KindChat {
			continue
		}
		c, err := cassette.ParseChat(strings.TrimSuffix(e.Name(), ".yaml"), path, f)
		if err != nil {
			continue
		}
		for _, turn := range c.Turns {
			if SameQuery(turn.Request.Query, r.scrub.string(q)) {
				return e.Name(), true
			}
		}
	}
	return "", false
}

// SameQuery reports whether two queries have the same words, whatever
// their order, case, punctuation and spacing (mockserver/internal/similar scores
// them 1).
func SameQuery(a, b string) bool {
	return similar.Score(similar.Parse(a), similar.Parse(b)) >= 1
}
