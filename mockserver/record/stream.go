package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// chatBody is what the recorder reads from a POST /chat-messages body
// (docs/api §2.1); fields are loose so odd bodies still get forwarded.
type chatBody struct {
	Query          any `json:"query"`
	User           any `json:"user"`
	ConversationID any `json:"conversation_id"`
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// serveChat proxies one chat turn. The response is relayed frame by frame,
// each frame flushed as soon as it is complete, so the client sees Dify's
// real cadence; the frames and their offsets from the request start are
// kept and the turn is written once the stream ends.
func (r *Recorder) serveChat(w http.ResponseWriter, req *http.Request, p string) {
	start := time.Now()
	body, ok := readBody(w, req, maxChatBody)
	if !ok {
		return
	}
	requested, ok := requestedName(w, req)
	if !ok {
		return
	}
	var cb chatBody
	parseErr := json.Unmarshal(body, &cb)
	query, user, conv := str(cb.Query), str(cb.User), strings.TrimSpace(str(cb.ConversationID))

	base := requested
	if base == "" {
		base = slug(r.scrub.string(query))
	}
	probe := r.probeName(base)
	r.mu.Lock()
	var s *session
	switch {
	case requested != "" && r.byRequested[requested] != nil:
		s = r.byRequested[requested]
	case requested != "":
		s = r.newSessionLocked(probe, requested, user)
	case conv != "" && r.byConversation[conv] != nil:
		s = r.byConversation[conv]
	default:
		s = r.newSessionLocked(probe, "", user)
	}
	r.touchLocked(s)
	r.indexLocked(r.lastByUser, user, s)
	name := s.name
	r.mu.Unlock()

	out, err := r.outbound(req.Context(), req, p, body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	resp, err := r.transport.RoundTrip(out)
	if err != nil {
		r.upstreamFailed(w, req, err)
		return
	}
	defer resp.Body.Close()
	headersAt := time.Since(start)
	copyResponseHeader(w.Header(), resp.Header)
	w.Header().Set(cassette.NameHeader, name)
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)

	var (
		frames    []cassette.RecordedFrame
		streamErr error
		clientErr error
	)
	relay := func(raw []byte) {
		if clientErr != nil {
			return
		}
		if _, err := w.Write(raw); err != nil {
			clientErr = err
			return
		}
		if err := rc.Flush(); err != nil {
			clientErr = err
		}
	}
	if resp.StatusCode == http.StatusOK && dify.IsEventStream(resp.Header) {
		_ = rc.Flush() // the client gets the headers before the first frame
		seen := map[string]bool{}
		frames, streamErr = readFrames(resp.Body, start, func(f dify.SSEFrame) {
			relay(f.Raw)
			r.learnIDs(s, f.Data, seen)
		})
	} else {
		// A pre-stream error (docs/api §2.3) or a blocking JSON answer.
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONReply))
		if err != nil {
			streamErr = err
		}
		relay(data)
		if len(data) > 0 {
			frames = []cassette.RecordedFrame{{Offset: time.Since(start), Raw: data}}
		}
	}

	switch {
	case clientErr != nil || (streamErr != nil && req.Context().Err() != nil):
		// Only a stream cut short counts: a client that closes the
		// connection after the last byte has seen the whole turn.
		r.logf("cassette %s: turn not recorded: the client disconnected before the stream ended", r.nameOf(s))
		return
	case parseErr != nil || cb.Query == nil:
		r.logf("cassette %s: turn not recorded: the request body is not a chat request (upstream answered HTTP %d)", r.nameOf(s), resp.StatusCode)
		return
	case len(frames) == 0:
		r.logf("cassette %s: turn not recorded: HTTP %d with an empty body", r.nameOf(s), resp.StatusCode)
		return
	case streamErr != nil:
		r.logf("cassette %s: the upstream stream broke after %d frame(s) (%v); recorded as a truncated stream", r.nameOf(s), len(frames), streamErr)
	}
	r.saveTurn(s, user, query, out, body, resp, frames, headersAt)
}

// readFrames reads an event stream frame by frame, calling each with every
// frame as soon as its terminating blank line arrives, and returns the
// frames with their offsets from start. The error is what cut the stream
// short; nil when it ended cleanly.
func readFrames(body io.Reader, start time.Time, each func(dify.SSEFrame)) ([]cassette.RecordedFrame, error) {
	var frames []cassette.RecordedFrame
	fr := dify.NewFrameReader(body)
	for {
		f, err := fr.Next()
		if len(f.Raw) > 0 {
			off := time.Since(start)
			each(f)
			frames = append(frames, cassette.RecordedFrame{Offset: off, Raw: f.Raw})
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				return frames, err
			}
			return frames, nil
		}
	}
}

// saveTurn adds a chat turn (the upstream request out, the client's body,
// the answer's frames) to session s and saves the session. It reports
// whether the cassette was written.
func (r *Recorder) saveTurn(s *session, user, query string, out *http.Request, body []byte, resp *http.Response, frames []cassette.RecordedFrame, headersAt time.Duration) bool {
	_, ok := r.saveTurnGated(s, user, query, out, body, resp.StatusCode, resp.Header, frames, headersAt, nil)
	return ok
}

// saveTurnGated is saveTurn with an extra save-time gate (nil = none; see
// saveGated), returning the cassette written.
func (r *Recorder) saveTurnGated(s *session, user, query string, out *http.Request, body []byte, status int, header http.Header, frames []cassette.RecordedFrame, headersAt time.Duration, gate func(name string, data []byte) error) (*cassette.Cassette, bool) {
	in, err := r.turnInteraction(out, body, status, header, frames, headersAt)
	if err != nil {
		s.mu.Lock()
		r.refuse(s, &SaveRefusedError{Cassette: s.name, Findings: []string{err.Error()}})
		s.mu.Unlock()
		return nil, false
	}
	return r.saveGated(s, func(s *session) {
		r.mu.Lock()
		waiting := r.claimPendingLocked(user)
		r.mu.Unlock()
		s.interactions = append(s.interactions, waiting...)
		s.interactions = append(s.interactions, in)
		s.turns++
		if s.turns == 1 {
			s.firstQuery = r.scrub.string(query)
		}
	}, gate)
}

// learnIDs ties the conversation, message and task ids a stream reveals to
// its session, so follow-up turns, stop requests and other calls about them
// land in the same cassette. It runs while the stream is live (a stop
// request arrives before the turn ends). The entries last as long as the
// session is open (bound.go): a stop or a feedback call may come after
// the stream ended.
func (r *Recorder) learnIDs(s *session, data []byte, seen map[string]bool) {
	if len(data) == 0 {
		return
	}
	var f frameFields
	if json.Unmarshal(data, &f) != nil {
		return
	}
	r.indexOnce(r.byConversation, f.ConversationID, s, seen)
	r.indexOnce(r.byMessage, f.MessageID, s, seen)
	r.indexOnce(r.byTask, f.TaskID, s, seen)
}

// turnInteraction builds the scrubbed interaction of a chat turn: a 200
// answer as frames, an error answer as its body.
func (r *Recorder) turnInteraction(out *http.Request, body []byte, status int, header http.Header, frames []cassette.RecordedFrame, headersAt time.Duration) (*vcr.Interaction, error) {
	x := cassette.Exchange{
		Method: out.Method, URL: out.URL.String(), RequestHeader: out.Header, RequestBody: body,
		Status: status, ResponseHeader: header, HeadersAt: headersAt,
	}
	if status == http.StatusOK {
		x.Frames = frames
	} else {
		x.Body = frames[0].Raw
	}
	return r.scrub.exchange(x)
}

func endsFrame(raw []byte) bool {
	return bytes.HasSuffix(raw, []byte("\n\n")) || bytes.HasSuffix(raw, []byte("\n\r\n"))
}
