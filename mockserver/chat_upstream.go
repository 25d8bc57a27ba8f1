package mockserver

// Hybrid mode's turn source (docs/mock/hybrid.md): a chat that no recorded
// turn answers is forwarded to the real Dify (record.Recorder.Forward),
// streamed to the client live with the mock's ids, stored like any turn
// and saved as a cassette turn.

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/internal/freshstack"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// liveIdleTimeout bounds the silence inside a live stream once it runs:
// Dify sends a ping every 10 s while an agent works.
const liveIdleTimeout = 2 * time.Minute

// upstreamSource is hybrid mode's turn source (steer, chat_steer.go): it
// answers, live, a chat that no recorded turn answers (docs/mock/hybrid.md
// "What answers a chat"), and a follow-up in a conversation the upstream
// answered. It leaves to the recorded turns any request that names a
// cassette (header or rule), carries a fault (which plays as documented)
// or files (the uploads are the mock's). When the upstream fails before
// its first frame it declines with plan.fallback set, and the cassette
// source answers.
func (s *appServer) upstreamSource(in *steerInput, plan *turnPlan) (bool, *apiError) {
	req := in.req
	if s.cfg.Upstream == nil || in.cassette != "" || len(req.files) > 0 || !in.faultFor("").IsZero() {
		return false, nil
	}
	lc := &liveChat{req: req, rec: journal.Of(in.w), rule: plan.rule}
	if req.convID != "" {
		c, err := s.store.Conversation(req.convID, req.endUserID)
		if err != nil { // deleted meanwhile
			return false, errConvNotFound
		}
		lc.conv, lc.followUp = c, true
		if s.upstreamFor(c.ID) == "" {
			if _, ok := in.cat.matchRecorded(req.query, c.Cassette, c.NextTurn); ok {
				return false, nil
			}
		}
	} else if _, ok := in.cat.matchRecorded(req.query, "", 0); ok {
		return false, nil
	}
	if why := s.keyRefused(in.r); why != "" {
		// Answered locally, as a failed upstream would be.
		plan.fallback = why
		s.log.Warn("upstream: answered from the recorded turns instead", "reason", why)
		return false, nil
	}
	plan.fallback = s.serveLive(in.w, in.r, lc)
	if plan.fallback == "" {
		plan.answered = true
		return true, nil
	}
	s.log.Warn("upstream: answered from the recorded turns instead", "reason", plan.fallback)
	return false, nil
}

// upstreamPolicy: the upstream key is spent only for requests addressed
// to this machine (a loopback name or an IP address: a DNS-rebound name is
// refused) and, from a browser, for pages of this machine or origins named
// with --cors-origin. With the default "--cors-origin *" any site may use
// the mock's recorded turns, as always, but not the key: the recorder's
// rule (docs/security.md).
var upstreamPolicy = netguard.Policy{IPLiterals: true}

// keyRefused says why r may not spend the upstream key, "" when it may.
func (s *appServer) keyRefused(r *http.Request) string {
	if !upstreamPolicy.AllowsHost(r.Host) {
		return "the request names another host than this machine, so the upstream key is not used for it"
	}
	if o := r.Header.Get("Origin"); o != "" && !upstreamPolicy.AllowsOrigin(o) && s.origins.Grant(o) != o {
		return "the request comes from a web page of another site; only this machine's pages and origins named with --cors-origin may use the upstream key"
	}
	return ""
}

// liveChat is one chat request to answer from the upstream.
type liveChat struct {
	req *chatRequest
	// conv is the conversation a follow-up continues (followUp true).
	conv     store.Conversation
	followUp bool
	rec      *journal.Record
	rule     string
}

// upstreamFor is the upstream conversation a mock conversation continues,
// "" for one the upstream has not answered.
func (s *appServer) upstreamFor(conv string) string {
	if conv == "" {
		return ""
	}
	up, _ := s.upstreamConvs.get(conv)
	return up
}

// serveLive answers lc from the upstream, through the chat pipeline's
// phases (chat.go) as a live turn has them:
//
//   - open, at the first whole frame (liveTurn.open): the conversation by
//     admit's one way (openConversation), the ids, the headers, the
//     journal's choice;
//   - relay (liveTurn.relay): each whole frame, cleaned by the recorder
//     (record/clean.go: line ends, UTF-8, the key redacted), with the
//     mock's ids, stored before the frame that ends the stream as a
//     replayed turn is;
//   - end (liveTurn.end): the outcome; a stream the upstream broke, or the
//     shutdown cut, ends with one error event after its last whole frame,
//     as a faulted replay ends; the turn stored; the upstream conversation
//     mapped;
//   - save, once the response has ended (liveTurn.save): the cassette
//     written, the catalog given the turn (catalog.withCassette), the
//     journal told.
//
// When the upstream fails before its first frame nothing has been written
// (no conversation created, no header sent) and the reason is returned for
// the fallback; "" means the response is complete.
func (s *appServer) serveLive(w http.ResponseWriter, r *http.Request, lc *liveChat) (fallback string) {
	taskID := replay.NewUUID()
	tk, ok := s.beginStream(taskID, lc.req.endUserID)
	if !ok {
		writeError(w, errShuttingDown)
		return ""
	}
	defer s.endStream(taskID)
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	go func() {
		select {
		case <-tk.intr.Done():
			if tk.intr.Cause() == replay.ShuttingDown {
				cancel(errLiveShutdown)
			} else {
				cancel(errLiveStopped)
			}
		case <-ctx.Done():
		}
	}()
	lt := &liveTurn{s: s, lc: lc, w: w, sink: &flushSink{w: w, rc: http.NewResponseController(w)},
		taskID: taskID, msgID: replay.NewUUID(), start: time.Now()}
	fwd, err := s.cfg.Upstream.Forward(ctx, record.ChatTurn{
		Query: lc.req.query, Inputs: lc.req.inputs, User: lc.req.user, ConversationID: s.upstreamFor(lc.conv.ID),
		FirstFrameTimeout: s.cfg.UpstreamTimeout, IdleTimeout: liveIdleTimeout, Flush: lt.sink.Flush,
	}, lt.relay)
	if err != nil {
		var ue *record.UpstreamError
		if errors.As(err, &ue) && ue.Kind == record.UpstreamStatus && (ue.Status == http.StatusUnauthorized || ue.Status == http.StatusForbidden) {
			return err.Error() + " (check --upstream-key)"
		}
		if cause := context.Cause(ctx); errors.Is(cause, errLiveShutdown) {
			writeError(w, errShuttingDown)
			return ""
		}
		if r.Context().Err() != nil {
			return "" // the client left; nobody to answer
		}
		return err.Error()
	}
	lt.end(fwd, context.Cause(ctx), r.Context().Err() != nil)
	lt.turn = nil // the recorder holds the frames for the save, and releases them
	if fwd.Pending() {
		// The response ends when this handler returns; the save comes
		// after, and Shutdown waits for it as for a stream.
		s.streams.Add(1)
		s.liveSaves.Add(1)
		go func() {
			defer s.streams.Done()
			defer s.liveSaves.Done()
			lt.save(fwd)
		}()
	}
	return ""
}

// liveTurn is one live turn as it streams (serveLive).
type liveTurn struct {
	s             *appServer
	lc            *liveChat
	w             http.ResponseWriter
	sink          *flushSink
	taskID, msgID string
	start         time.Time

	// Set at the first frame (open).
	cs      *chatStream
	ids     *liveIDs
	binding replay.Binding
	// turn is compiled from the frames written as each is written (so
	// storing it at message_end is a fold, however many live streams end
	// together); it shares their bytes with the recorder's
	// (Forwarded.Frames): the answer is held once.
	turn   *replay.LiveTurn
	stored bool
}

// open is admit for a live turn, at its first frame: the turn is the
// upstream's now.
func (lt *liveTurn) open() {
	s, lc := lt.s, lt.lc
	conv := lc.conv
	s.openConversation(lc.req, &conv, lc.followUp)
	lt.ids = newLiveIDs(conv.ID, lt.msgID, lt.taskID)
	lt.binding = replay.Binding{ConversationID: conv.ID, MessageID: lt.msgID, TaskID: lt.taskID, Now: s.store.Now()}
	lt.cs = &chatStream{conv: conv, req: lc.req, plan: &turnPlan{}, now: lt.binding.Now, rec: lc.rec}
	lt.turn = replay.NewLiveTurn(s.mode, lc.req.query)
	h := lt.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set(HeaderMatch, matchUpstream)
	h.Set(HeaderUpstream, "live")
	lt.w.WriteHeader(http.StatusOK)
	// A live turn plays at the upstream's pace: speed 1.
	lc.rec.Choice(journal.Choice{Rule: lc.rule, Fault: fault.None, Speed: 1, Match: matchUpstream, Upstream: "live"})
}

// relay writes one whole upstream frame (record.Recorder.Forward's relay).
// The frame is decoded once, for its event, its ids and the live compile;
// the ids are rewritten in place: the recorder keeps the same bytes.
func (lt *liveTurn) relay(raw []byte) error {
	if lt.ids == nil {
		lt.open()
	}
	f := lt.ids.read(raw)
	event := f.Event()
	off := time.Since(lt.start)
	lt.turn.AddRead(f, off)
	if event == dify.EventMessageEnd || event == dify.EventError {
		// Stored before the frame that ends the stream, as a replayed
		// turn is: a client acting on message_end finds the message.
		lt.store()
	}
	if _, err := lt.sink.Write(raw); err != nil {
		return err
	}
	// The recorder keeps raw unchanged from here on: the journal shares it.
	lt.lc.rec.SharedFrame(lt.turn.Len()-1, event, off, off, raw)
	return nil // the recorder flushes (record.ChatTurn.Flush)
}

// store is the store phase (chat_store.go), once: the turn as far as it
// was sent.
func (lt *liveTurn) store() {
	if lt.stored || lt.ids == nil {
		return
	}
	lt.stored = true
	// The frames already carry the mock's ids (liveIDs): kept as they are.
	b := lt.binding
	b.Keep = true
	bound := lt.turn.Bind(b)
	lt.cs.bound = bound
	freshstack.Run(func() { lt.s.storeTurn(lt.cs, &replay.Report{Result: bound.Fold(lt.turn.Len())}) }) // stack.go
	// The message is stored: the compiled turn is not held until the save.
	lt.cs.bound = nil
}

// finish ends a stream the upstream did not end, with the mock's frame
// (stored with the turn and journaled as sent), after the last whole
// frame.
func (lt *liveTurn) finish(event string, frame []byte) {
	off := time.Since(lt.start)
	if lt.turn != nil {
		lt.turn.Add(cassette.RecordedFrame{Offset: off, Raw: frame})
	}
	lt.store()
	if _, err := lt.sink.Write(frame); err == nil {
		// Index -1: a frame the mock made up (journal.Frame).
		lt.lc.rec.SharedFrame(-1, event, off, off, frame)
		_ = lt.sink.Flush()
	}
}

// end is the end phase: the outcome, the frame that ends a stream the
// upstream did not end, the store and the upstream conversation's mapping.
func (lt *liveTurn) end(fwd *record.Forwarded, cause error, clientGone bool) {
	s := lt.s
	outcome := replay.Completed.String()
	switch {
	case errors.Is(cause, errLiveStopped):
		// As Dify answers a stop: message_end, the answer as far as it
		// streamed (replay's Stopped).
		outcome = replay.Stopped.String()
		if !lt.stored {
			lt.finish(dify.EventMessageEnd, lt.binding.MessageEndFrame())
		}
	case errors.Is(cause, errLiveShutdown):
		outcome = replay.ShuttingDown.String()
		lt.finish(dify.EventError, lt.binding.ErrorFrame("internal_server_error", http.StatusInternalServerError, replay.ShutdownMessage))
	case clientGone:
		outcome = replay.Disconnected.String()
	case fwd.StreamErr != nil && !lt.stored:
		outcome = "upstream stream broke"
		s.log.Warn("upstream: the live stream broke", "frames", len(fwd.Frames), "error", fwd.StreamErr.Error())
		lt.finish(dify.EventError, lt.binding.ErrorFrame("internal_server_error", http.StatusInternalServerError,
			"dify-mock: the upstream stream broke: "+fwd.StreamErr.Error()))
	}
	lt.store() // a stream without message_end: as far as it went
	if fwd.ConversationID != "" {
		s.upstreamConvs.set(lt.cs.conv.ID, fwd.ConversationID)
	}
	if fwd.Normalised != "" {
		s.log.Info("upstream: the live turn's bytes were normalised", "how", fwd.Normalised)
	}
	lt.lc.rec.Update(func(e *journal.Entry) {
		e.Outcome, e.Upstream, e.Match, e.Rule = outcome, "live", matchUpstream, lt.lc.rule
		e.Cassette, e.Normalised = fwd.Cassette, fwd.Normalised
		if !fwd.Pending() {
			e.NotSaved = fwd.NotSaved
		}
	})
}

// save is the save phase, after the response: the recorder writes the
// cassette, the catalog takes the saved cassette without reading the
// folder, and the journal entry says what became of the turn.
func (lt *liveTurn) save(fwd *record.Forwarded) {
	s := lt.s
	s.cfg.Upstream.Save(fwd)
	if fwd.Saved {
		s.store.SetReplay(lt.cs.conv.ID, fwd.Cassette, fwd.Turn)
		if fwd.Added != nil {
			if err := s.addCassette(fwd.Added); err != nil {
				s.log.Error("upstream: the saved turn is not served (the loaded set is kept)", "cassette", fwd.Cassette, "error", err.Error())
			}
		}
	} else {
		s.log.Warn("upstream: the live turn was not saved", "cassette", fwd.Cassette, "reason", fwd.NotSaved)
	}
	lt.lc.rec.Amend(func(e *journal.Entry) {
		e.Cassette = fwd.Cassette
		if fwd.Saved {
			e.Saved = true
			t := fwd.Turn
			e.Turn = &t
		} else {
			e.NotSaved = fwd.NotSaved
		}
	})
}

var (
	errLiveStopped  = errors.New("stopped by POST /chat-messages/:task_id/stop")
	errLiveShutdown = errors.New("the mock is shutting down")
)
