package mockserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/store"
)

// uuidNil is constants.UUID_NIL (api/constants/__init__.py).
const uuidNil = "00000000-0000-0000-0000-000000000000"

// Blocking-mode rejections (docs/api §2.2).
var (
	errBlockingAgent     = newError(http.StatusBadRequest, "bad_request", "Agent App only supports streaming response mode.")
	errBlockingAgentChat = invalidParam("Agent Chat App does not support blocking mode")
)

// chatRequest is a validated POST /chat-messages body (docs/api §2.1).
type chatRequest struct {
	query    string
	inputs   map[string]any
	user     string
	convID   string
	files    []dify.InputFile
	autoName bool
	rawQuery string // query as sent (before NUL bytes are stripped)
	// blocking: the request asks for (or, for agent-chat, defaults to)
	// blocking mode, which agent-chat refuses once the conversation is
	// known (its generator raises it).
	blocking bool
}

// chatModel is the pydantic model Dify validates the body with.
const chatModel = "ChatRequestPayload"

// parseChat validates the body in Dify's order
// (api/controllers/service_api/app/completion.py ChatApi.post): the JSON
// body and `user` (validate_app_token), every ChatRequestPayload field at
// once (one pydantic ValidationError listing each failing field, in the
// model's field order), then the New Agent streaming-only rule
// (_resolve_agent_app_streaming).
func (s *Server) parseChat(w http.ResponseWriter, r *http.Request) (*chatRequest, *apiError) {
	body, raw, e := readJSONRaw(w, r)
	if e != nil {
		return nil, e
	}
	req := &chatRequest{autoName: true}
	if req.user, e = body.user(true); e != nil {
		return nil, e
	}
	dict := orderedBody(raw)
	delete(dict.vals, "trace_session_id") // omit_trace_session_id_from_payload
	for i, k := range dict.keys {
		if k == "trace_session_id" {
			dict.keys = append(dict.keys[:i:i], dict.keys[i+1:]...)
			break
		}
	}
	var errs []pyErr
	fail := func(pe *pyErr) {
		if pe != nil {
			errs = append(errs, *pe)
		}
	}
	missing := func(loc string) {
		errs = append(errs, pyErr{loc: loc, msg: "Field required", typ: "missing", input: dict})
	}

	if v, ok := dict.vals["inputs"]; !ok {
		missing("inputs")
	} else if _, isDict := v.(map[string]any); !isDict {
		fail(&pyErr{loc: "inputs", msg: "Input should be a valid dictionary", typ: "dict_type", input: v})
	} else {
		// json.Number keeps 5 and 5.0 apart, as Python's json does.
		dec := json.NewDecoder(bytes.NewReader(body["inputs"]))
		dec.UseNumber()
		_ = dec.Decode(&req.inputs)
	}
	if v, ok := dict.vals["query"]; !ok {
		missing("query")
	} else {
		q, pe := pyStrField("query", v)
		fail(pe)
		req.rawQuery = q
		req.query = strings.ReplaceAll(q, "\x00", "")
	}
	if v := dict.vals["files"]; v != nil {
		list, isList := v.([]any)
		if !isList {
			fail(&pyErr{loc: "files", msg: "Input should be a valid list", typ: "list_type", input: v})
		}
		for i, item := range list {
			if _, isDict := item.(map[string]any); !isDict {
				fail(&pyErr{loc: "files." + strconv.Itoa(i), msg: "Input should be a valid dictionary", typ: "dict_type", input: item})
			}
		}
	}
	mode := ""
	if v := dict.vals["response_mode"]; v != nil {
		m, _ := v.(string)
		if m != dify.ResponseModeStreaming && m != dify.ResponseModeBlocking {
			fail(&pyErr{loc: "response_mode", msg: pyLiteral(dify.ResponseModeBlocking, dify.ResponseModeStreaming), typ: "literal_error", input: v})
		}
		mode = m
	}
	if v, ok := dict.vals["conversation_id"]; ok {
		// normalize_conversation_id: strip, blank = new conversation,
		// else helper.uuid_value (Python's uuid.UUID spellings).
		str, isStr := v.(string)
		if isStr {
			str = strings.TrimSpace(str)
		}
		if v != nil && (!isStr || str != "") {
			id, ok := pyUUID(str)
			if !isStr || !ok {
				fail(&pyErr{loc: "conversation_id", msg: "Value error, conversation_id must be a valid UUID", typ: "value_error", input: v})
			}
			req.convID = id
		}
	}
	if v, ok := dict.vals["retriever_from"]; ok {
		_, pe := pyStrField("retriever_from", v)
		fail(pe)
	}
	if v, ok := dict.vals["auto_generate_name"]; ok {
		b, pe := pyBoolField("auto_generate_name", v)
		fail(pe)
		req.autoName = b
	}
	if v := dict.vals["workflow_id"]; v != nil {
		_, pe := pyStrField("workflow_id", v)
		fail(pe)
	}
	if len(errs) > 0 {
		return nil, pydanticError(chatModel, errs...)
	}
	if raw, ok := body["files"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &req.files); err != nil {
			return nil, invalidParam("files: Input should be a valid list of file objects")
		}
	}
	// Omitted response_mode streams for New Agent and is blocking for the
	// legacy agent-chat app, which then refuses it (docs/api §2.1, §2.2).
	req.blocking = mode == dify.ResponseModeBlocking || (mode == "" && s.mode == dify.ModeAgentChat)
	if req.blocking && s.mode != dify.ModeAgentChat {
		return nil, errBlockingAgent
	}
	return req, nil
}

var fileTypes = map[string]bool{
	dify.FileTypeImage: true, dify.FileTypeDocument: true, dify.FileTypeAudio: true,
	dify.FileTypeVideo: true, dify.FileTypeCustom: true,
}

// checkFiles validates files[] (docs/api §2.1) and returns the user's message
// files for the stored message plus the upload ids in request order.
func (s *Server) checkFiles(files []dify.InputFile, ownerID string) ([]dify.MessageFile, []string, *apiError) {
	var out []dify.MessageFile
	ids := make([]string, len(files))
	user := "user"
	for i, f := range files {
		if !fileTypes[f.Type] {
			return nil, nil, invalidParam("files." + strconv.Itoa(i) + ".type: Input should be 'image', 'document', 'audio', 'video' or 'custom'")
		}
		switch f.TransferMethod {
		case dify.TransferRemoteURL:
			if strings.TrimSpace(f.URL) == "" {
				return nil, nil, invalidParam("Missing file url")
			}
			u := f.URL
			out = append(out, dify.MessageFile{
				ID: replay.NewUUID(), Filename: path.Base(strings.SplitN(u, "?", 2)[0]), Type: f.Type, URL: &u,
				TransferMethod: dify.TransferRemoteURL, BelongsTo: &user,
			})
		case dify.TransferLocalFile:
			if !validUUID(f.UploadFileID) {
				return nil, nil, invalidParam("Invalid upload file")
			}
			up, ok := s.store.File(f.UploadFileID, ownerID)
			if !ok {
				return nil, nil, invalidParam("Invalid upload file")
			}
			// No check that the declared type matches the upload's
			// extension: Dify validates types strictly only for Workflow
			// and Chatflow apps, and New Agent passes file references to
			// the agent unparsed. Clients rely on that (dify-ai-provider
			// declares every non-image attachment a "document").
			ids[i] = up.Result.ID
			u, size, upID := up.Result.SourceURL, up.Result.Size, up.Result.ID
			out = append(out, dify.MessageFile{
				ID: replay.NewUUID(), Filename: up.Result.Name, Type: f.Type, URL: &u, MimeType: up.Result.MimeType,
				Size: &size, TransferMethod: dify.TransferLocalFile, BelongsTo: &user, UploadFileID: &upID,
			})
		default:
			return nil, nil, invalidParam("files." + strconv.Itoa(i) + ".transfer_method: Input should be 'remote_url' or 'local_file'")
		}
	}
	return out, ids, nil
}

// chatMessages is POST /chat-messages (docs/api §2): validate, pick a recorded
// turn, replay it on schedule and store what was streamed.
func (s *Server) chatMessages(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var (
		req *chatRequest
		e   *apiError
	)
	// Reading and decoding the JSON body is the deepest point of a chat
	// request; on a fresh goroutine it never grows the connection
	// goroutine's stack, which then stays at 8 KiB for the whole stream
	// (stack_test.go), whatever middleware sits above the router.
	onFreshStack(func() { req, e = s.parseChat(w, r) })
	if e != nil {
		writeError(w, e)
		return
	}
	if cs := s.serveChat(w, r, req); cs != nil {
		s.playChat(w, r, cs)
	}
}

// chatStream is a chat turn ready to stream, handed from serveChat to
// playChat.
type chatStream struct {
	bound     *replay.Bound
	turn      *replay.CompiledTurn
	tk        *task
	taskID    string
	conv      store.Conversation
	msgID     string
	query     string
	inputs    map[string]any // this turn's, as _prepare_user_inputs made them
	userFiles []dify.MessageFile
	now       time.Time
	ref       turnRef
	spec      fault.Spec
	speed     float64
	rec       *journal.Record
}

// serveChat is the rest of chatMessages. It is a separate function so that
// its large frame is not on the stack while parseChat decodes JSON (the
// deepest point of a chat request): the connection's goroutine then keeps
// an 8 KiB stack instead of growing to 16 KiB, for the whole stream.
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, req *chatRequest) *chatStream {
	cat := s.cat() // one catalog for the whole request, even across a reload
	header, e := cat.headerCassette(r)
	if e != nil {
		writeError(w, e)
		return nil
	}
	speed, e := s.requestSpeed(r)
	if e != nil {
		writeError(w, e)
		return nil
	}
	rule := s.chatRule(r, req.user, req.convID, &header, &speed)
	endUser := s.store.EndUser(req.user)
	var conv store.Conversation
	// ChatApi.post looks the conversation up before generating; the
	// generator then refuses blocking mode (agent-chat), requires a query
	// and validates `inputs` against the form on every turn
	// (_prepare_user_inputs runs whether or not the conversation exists).
	if req.convID != "" {
		if _, err := s.store.Conversation(req.convID, endUser.ID); err != nil {
			writeError(w, errConvNotFound)
			return nil
		}
	}
	if req.blocking {
		writeError(w, errBlockingAgentChat)
		return nil
	}
	// The generators' own checks: New Agent refuses a blank query
	// (agent_app/app_generator.py: `not query.strip()`); the legacy
	// agent-chat generator only an empty one, before stripping NUL bytes.
	if (s.mode == dify.ModeAgentChat && req.rawQuery == "") || (s.mode != dify.ModeAgentChat && strings.TrimSpace(req.query) == "") {
		writeError(w, invalidParam("query is required"))
		return nil
	}
	inputs, e := s.prepareInputs(req.inputs)
	if e != nil {
		writeError(w, e)
		return nil
	}
	req.inputs = inputs // stored as Dify stores them, not as sent
	userFiles, uploadIDs, e := s.checkFiles(req.files, endUser.ID)
	if e != nil {
		writeError(w, e)
		return nil
	}
	if s.isClosed() {
		writeError(w, errShuttingDown)
		return nil
	}
	if s.answerFromAnnotation(w, r, req, endUser.ID, userFiles, speed) {
		return nil
	}

	var (
		ref  turnRef
		spec fault.Spec
	)
	if req.convID != "" {
		var err error
		conv, err = s.store.ClaimTurn(req.convID, endUser.ID, func(c string, next int) (string, int) {
			ref = cat.selectTurn(header, req.query, c, next)
			spec = s.chatFault(r, ref.cassette, rule.faultSpec())
			if spec.Before != nil && c != "" && next > 0 {
				// The request fails before the turn plays: the
				// conversation stays where it was.
				return c, next - 1
			}
			return ref.cassette, ref.turn
		})
		if err != nil { // deleted meanwhile
			writeError(w, errConvNotFound)
			return nil
		}
	} else {
		ref = cat.selectTurn(header, req.query, "", 0)
		spec = s.chatFault(r, ref.cassette, rule.faultSpec())
	}
	rec := journal.FromContext(r.Context())
	rec.Choice(ref.cassette, ref.turn, rule.ruleID(), spec.String(), speed)
	if !s.beforeResponse(w, r, spec, true) {
		return nil
	}
	if spec.Delay > 0 && s.isClosed() { // shutdown cut the delay short
		writeError(w, errShuttingDown)
		return nil
	}
	t := cat.turn(ref)
	if t.Status != http.StatusOK {
		s.writeRecordedError(w, t)
		return nil
	}
	if req.convID == "" {
		conv = s.store.NewConversation(endUser.ID, req.inputs, s.app.Parameters.OpeningStatement, req.autoName)
		s.store.SetReplay(conv.ID, ref.cassette, ref.turn)
	}

	taskID, msgID := replay.NewUUID(), replay.NewUUID()
	tk, ok := s.beginStream(taskID, endUser.ID)
	if !ok {
		writeError(w, errShuttingDown)
		return nil
	}
	now := s.store.Now()
	bound := t.Bind(replay.Binding{ConversationID: conv.ID, MessageID: msgID, TaskID: taskID, Now: now, UploadFileIDs: uploadIDs})
	h := w.Header()
	for k, v := range t.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Transfer-Encoding", "Connection", "Date", "Set-Cookie", "Keep-Alive":
			continue
		}
		h[http.CanonicalHeaderKey(k)] = v
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/event-stream")
	}
	h.Set(HeaderCassette, ref.cassette)
	h.Set(HeaderTurn, strconv.Itoa(ref.turn))
	if spec.Stream != nil {
		h.Set(fault.Header, spec.String())
		s.log.Info("fault", "method", r.Method, "path", r.URL.Path, "fault", spec.String())
	}
	w.WriteHeader(http.StatusOK)

	return &chatStream{bound: bound, turn: t, tk: tk, taskID: taskID, conv: conv, msgID: msgID, query: req.query, inputs: req.inputs,
		userFiles: userFiles, now: now, ref: ref, spec: spec, speed: speed, rec: rec}
}

// playChat streams the turn serveChat prepared. It runs after serveChat
// has returned, so that serveChat's large frame is not on the stack below
// the replay, whose flushes reach deep into net/http: the connection's
// goroutine keeps its 8 KiB stack (stack_test.go) with room for the
// journal's layers.
func (s *Server) playChat(w http.ResponseWriter, r *http.Request, cs *chatStream) {
	defer s.endStream(cs.taskID)
	var sink replaySink = &flushSink{w: w, rc: http.NewResponseController(w)}
	opts := replay.Options{Speed: cs.speed, RunTimeout: s.cfg.RunTimeout, MaxModelRequests: s.cfg.MaxModelRequests, Fault: cs.spec.Stream}
	if cs.rec != nil {
		js := &journalSink{replaySink: sink, rec: cs.rec, speed: cs.speed, start: time.Now()}
		sink, opts.Observe = js, js.observe
	}
	rep := cs.bound.Play(r.Context(), sink, opts, replay.Signals{Stop: cs.tk.stop, Shutdown: s.closing}, func(rep *replay.Report) {
		// On a fresh stack for the same reason as flushSink's header write.
		onFreshStack(func() {
			s.recordTurn(cs.conv, cs.msgID, cs.query, cs.inputs, cs.userFiles, cs.now.Unix(), cs.ref.cassette, rep)
		})
	})
	cs.rec.Update(func(e *journal.Entry) { e.Outcome = rep.Outcome.String() })
	s.log.Debug("replay ended", "cassette", cs.ref.cassette, "turn", cs.ref.turn, "outcome", rep.Outcome.String(), "frames", rep.Sent)
	if rep.Reset {
		resetAfterStream(w)
	}
}

// writeRecordedError replays a recorded pre-stream error (a non-200 turn).
func (s *Server) writeRecordedError(w http.ResponseWriter, t *replay.CompiledTurn) {
	h := w.Header()
	copyRecordedHeader(h, t.Header)
	h.Set(HeaderCassette, t.Cassette)
	h.Set(HeaderTurn, strconv.Itoa(t.Index))
	h.Set("Content-Length", strconv.Itoa(len(t.Body)))
	w.WriteHeader(t.Status)
	_, _ = w.Write(t.Body)
}

// recordTurn stores the message exactly as GET /messages returns it (docs/api §6).
func (s *Server) recordTurn(conv store.Conversation, msgID, query string, inputs map[string]any, userFiles []dify.MessageFile, created int64, cassetteName string, rep *replay.Report) {
	res := rep.Result
	files := make([]dify.MessageFile, 0, len(userFiles)+len(res.Files))
	files = append(files, userFiles...)
	files = append(files, res.Files...)
	// Service API turns are not threaded: the generators set
	// parent_message_id = UUID_NIL for InvokeFrom.SERVICE_API
	// (api/core/app/apps/agent_chat/app_generator.py generate).
	parent := uuidNil
	m := dify.Message{
		ID: msgID, ConversationID: conv.ID, ParentMessageID: &parent, Inputs: inputs, Query: query, Answer: res.Answer,
		RetrieverResources: res.RetrieverResources, AgentThoughts: res.Thoughts, MessageFiles: files,
		CreatedAt: created, Status: "normal", ExtraContents: []json.RawMessage{},
	}
	if res.ErrorCode != "" {
		m.Status = "error"
		msg := res.ErrorMessage
		m.Error = &msg
	}
	u := res.Usage
	if u == nil {
		u = replay.ZeroUsage()
	}
	m.MessageTokens, m.AnswerTokens = u.PromptTokens, u.CompletionTokens
	m.TotalTokens = u.PromptTokens + u.CompletionTokens
	m.ProviderResponseLatency = u.Latency
	price, currency := u.TotalPrice, u.Currency
	m.TotalPrice, m.Currency = &price, &currency
	if err := s.store.AddMessage(m, cassetteName); err != nil {
		s.log.Debug("turn not stored", "reason", err.Error())
	}
}

// flushSink adapts a ResponseWriter to replay.Sink.
//
// The call that makes net/http write the response header (the first flush,
// or a write that overflows its 2 KiB response buffer first) runs on a
// fresh goroutine (onFreshStack): net/http writes the header in a function
// with a 2.8 KiB stack frame, which on top of the handler's deep stack would
// double the connection goroutine's stack from 8 to 16 KiB for the rest of
// the stream, the largest single item of a stream's memory
// (bench/README.md). Later calls take the direct path.
type flushSink struct {
	w          http.ResponseWriter
	rc         *http.ResponseController
	buffered   int // bytes written before the header was sent
	headerSent bool
}

// responseBuffer is net/http's per-response buffer: writes that still fit
// in it are only copied and do not reach the header-writing code.
const responseBuffer = 2048

func (f *flushSink) Write(p []byte) (int, error) {
	if f.headerSent || f.buffered+len(p) <= responseBuffer {
		f.buffered += len(p)
		return f.w.Write(p)
	}
	f.headerSent = true
	return f.writeFresh(p)
}

func (f *flushSink) writeFresh(p []byte) (n int, err error) {
	onFreshStack(func() { n, err = f.w.Write(p) })
	return n, err
}

func (f *flushSink) Flush() error {
	if f.headerSent {
		return f.rc.Flush()
	}
	f.headerSent = true
	return f.flushFresh()
}

func (f *flushSink) flushFresh() (err error) {
	onFreshStack(func() { err = f.rc.Flush() })
	return err
}

// onFreshStack runs fn on a new goroutine and waits for it; a panic in fn
// is raised again on the caller's goroutine.
func onFreshStack(fn func()) {
	done := make(chan any, 1)
	go func() {
		var p any
		defer func() { done <- p }()
		defer func() { p = recover() }()
		fn()
	}()
	if p := <-done; p != nil {
		panic(p)
	}
}

// stopChat is POST /chat-messages/:task_id/stop (docs/api §3): always 200 once
// the user is given; a task of another user, or no task, is ignored.
func (s *Server) stopChat(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	body, e := readJSON(w, r, false)
	if e != nil {
		writeError(w, e)
		return
	}
	user, e := body.user(true)
	if e != nil {
		writeError(w, e)
		return
	}
	s.stopTask(ps.ByName("task_id"), s.store.EndUser(user).ID)
	writeJSON(w, http.StatusOK, dify.ResultResponse{Result: "success"})
}
