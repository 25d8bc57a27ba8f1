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

// How a turn was chosen (HeaderMatch, the journal's match).
const (
	matchHeader       = "header"
	matchConversation = "conversation"
	matchExact        = "exact"
	matchSimilar      = "similar"
	matchDefault      = "default"
	matchUpstream     = "upstream"
	matchFallback     = "fallback"
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

// serveLive answers lc from the upstream. When the upstream fails before
// its first frame nothing has been written (no conversation created, no
// header sent) and the reason is returned for the fallback; "" means the
// response is complete.
func (s *appServer) serveLive(w http.ResponseWriter, r *http.Request, lc *liveChat) (fallback string) {
	taskID, msgID := replay.NewUUID(), replay.NewUUID()
	req := lc.req
	tk, ok := s.beginStream(taskID, req.endUserID)
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

	var (
		conv    = lc.conv
		ids     *liveIDs
		binding replay.Binding
		rc      = http.NewResponseController(w)
		sent    []cassette.RecordedFrame
		start   = time.Now()
		stored  bool
	)
	// storeOnce stores the turn as far as it was sent (chat_store.go).
	storeOnce := func() {
		if stored || ids == nil {
			return
		}
		stored = true
		bound, err := liveBound(s.mode, req.query, sent, binding)
		if err != nil {
			s.log.Warn("upstream: the live turn was not stored", "error", err.Error())
			return
		}
		cs := &chatStream{bound: bound, conv: conv, req: req, plan: &turnPlan{}, now: binding.Now}
		freshstack.Run(func() { s.storeTurn(cs, &replay.Report{Result: bound.Fold(len(sent))}) }) // stack.go
	}
	relay := func(raw []byte) error {
		if ids == nil { // the first frame: the turn is the upstream's now
			if !lc.followUp {
				conv = s.store.NewConversation(req.endUserID, req.inputs, s.introduction(req.inputs), req.autoName)
			}
			ids = newLiveIDs(conv.ID, msgID, taskID)
			binding = replay.Binding{ConversationID: conv.ID, MessageID: msgID, TaskID: taskID, Now: s.store.Now()}
			h := w.Header()
			h.Set("Content-Type", "text/event-stream; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			h.Set(HeaderMatch, matchUpstream)
			h.Set(HeaderUpstream, "live")
			w.WriteHeader(http.StatusOK)
			// A live turn plays at the upstream's pace: speed 1.
			lc.rec.Choice(journal.Choice{Rule: lc.rule, Fault: fault.None, Speed: 1, Match: matchUpstream, Upstream: "live"})
		}
		out, event := ids.rewrite(raw)
		off := time.Since(start)
		sent = append(sent, cassette.RecordedFrame{Offset: off, Raw: out})
		if event == dify.EventMessageEnd || event == dify.EventError {
			// Stored before the frame that ends the stream, as a replayed
			// turn is: a client acting on message_end finds the message.
			storeOnce()
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
		lc.rec.Frame(len(sent)-1, event, off, off, out)
		return rc.Flush()
	}
	// endLive ends a stream the upstream did not end with an error frame
	// of the mock's, stored with the turn.
	endLive := func(frame []byte) {
		sent = append(sent, cassette.RecordedFrame{Offset: time.Since(start), Raw: frame})
		storeOnce()
		if _, err := w.Write(frame); err == nil {
			_ = rc.Flush()
		}
	}
	fwd, err := s.cfg.Upstream.Forward(ctx, record.ChatTurn{
		Query: req.query, Inputs: req.inputs, User: req.user, ConversationID: s.upstreamFor(lc.conv.ID),
		FirstFrameTimeout: s.cfg.UpstreamTimeout, IdleTimeout: liveIdleTimeout,
	}, relay)
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

	outcome := replay.Completed.String()
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errLiveStopped):
		// As Dify answers a stop: message_end, the answer as far as it
		// streamed (replay's Stopped).
		outcome = replay.Stopped.String()
		if !stored {
			endLive(binding.MessageEndFrame())
		}
	case errors.Is(cause, errLiveShutdown):
		outcome = replay.ShuttingDown.String()
		endLive(binding.ErrorFrame("internal_server_error", http.StatusInternalServerError, replay.ShutdownMessage))
	case r.Context().Err() != nil:
		outcome = replay.Disconnected.String()
	case fwd.StreamErr != nil && !stored:
		outcome = "upstream stream broke"
		s.log.Warn("upstream: the live stream broke", "frames", len(sent), "error", fwd.StreamErr.Error())
		endLive(binding.ErrorFrame("internal_server_error", http.StatusInternalServerError,
			"dify-mock: the upstream stream broke: "+fwd.StreamErr.Error()))
	}

	storeOnce() // a stream without message_end: as far as it went
	if fwd.Saved {
		s.store.SetReplay(conv.ID, fwd.Cassette, fwd.Turn)
	}
	if fwd.ConversationID != "" {
		s.upstreamConvs.set(conv.ID, fwd.ConversationID)
	}
	lc.rec.Update(func(e *journal.Entry) {
		e.Outcome, e.Upstream, e.Match, e.Rule = outcome, "live", matchUpstream, lc.rule
		if fwd.Saved {
			e.Cassette, e.Saved = fwd.Cassette, true
			t := fwd.Turn
			e.Turn = &t
		} else {
			e.NotSaved = fwd.NotSaved
		}
	})
	if fwd.Saved {
		if _, err := s.ReloadCassettes(); err != nil {
			s.log.Error("upstream: the saved turn was not reloaded (the loaded set is kept)", "error", err.Error())
		}
	}
	return ""
}

var (
	errLiveStopped  = errors.New("stopped by POST /chat-messages/:task_id/stop")
	errLiveShutdown = errors.New("the mock is shutting down")
)
