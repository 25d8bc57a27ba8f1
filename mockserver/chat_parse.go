package mockserver

// The parse phase of a chat request (chat.go): the body as Dify's
// ChatRequestPayload reads it, then the checks Dify's controller and
// generator make before anything runs.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/pydantic"
	"github.com/difyops/terraform-provider-dify/mockserver/replay"
)

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

	// Set by checkChat.
	endUserID string
	userFiles []dify.MessageFile // files[] as the stored message lists them
	uploadIDs []string           // the upload ids of files[], in request order
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
	dict := pydantic.Body(raw)
	delete(dict.Vals, "trace_session_id") // omit_trace_session_id_from_payload
	for i, k := range dict.Keys {
		if k == "trace_session_id" {
			dict.Keys = append(dict.Keys[:i:i], dict.Keys[i+1:]...)
			break
		}
	}
	var errs []pydantic.Error
	fail := func(pe *pydantic.Error) {
		if pe != nil {
			errs = append(errs, *pe)
		}
	}
	missing := func(loc string) {
		errs = append(errs, pydantic.Error{Loc: loc, Msg: "Field required", Type: "missing", Input: dict})
	}

	if v, ok := dict.Vals["inputs"]; !ok {
		missing("inputs")
	} else if _, isDict := v.(map[string]any); !isDict {
		fail(&pydantic.Error{Loc: "inputs", Msg: "Input should be a valid dictionary", Type: "dict_type", Input: v})
	} else {
		// json.Number keeps 5 and 5.0 apart, as Python's json does.
		dec := json.NewDecoder(bytes.NewReader(body["inputs"]))
		dec.UseNumber()
		_ = dec.Decode(&req.inputs)
	}
	if v, ok := dict.Vals["query"]; !ok {
		missing("query")
	} else {
		q, pe := pydantic.Str("query", v)
		fail(pe)
		req.rawQuery = q
		req.query = strings.ReplaceAll(q, "\x00", "")
	}
	if v := dict.Vals["files"]; v != nil {
		list, isList := v.([]any)
		if !isList {
			fail(&pydantic.Error{Loc: "files", Msg: "Input should be a valid list", Type: "list_type", Input: v})
		}
		for i, item := range list {
			if _, isDict := item.(map[string]any); !isDict {
				fail(&pydantic.Error{Loc: "files." + strconv.Itoa(i), Msg: "Input should be a valid dictionary", Type: "dict_type", Input: item})
			}
		}
	}
	mode := ""
	if v := dict.Vals["response_mode"]; v != nil {
		m, _ := v.(string)
		if m != dify.ResponseModeStreaming && m != dify.ResponseModeBlocking {
			fail(&pydantic.Error{Loc: "response_mode", Msg: pydantic.LiteralMessage(dify.ResponseModeBlocking, dify.ResponseModeStreaming), Type: "literal_error", Input: v})
		}
		mode = m
	}
	if v, ok := dict.Vals["conversation_id"]; ok {
		// normalize_conversation_id: strip, blank = new conversation,
		// else helper.uuid_value (Python's uuid.UUID spellings).
		str, isStr := v.(string)
		if isStr {
			str = strings.TrimSpace(str)
		}
		if v != nil && (!isStr || str != "") {
			id, ok := pydantic.PythonUUID(str)
			if !isStr || !ok {
				fail(&pydantic.Error{Loc: "conversation_id", Msg: "Value error, conversation_id must be a valid UUID", Type: "value_error", Input: v})
			}
			req.convID = id
		}
	}
	if v, ok := dict.Vals["retriever_from"]; ok {
		_, pe := pydantic.Str("retriever_from", v)
		fail(pe)
	}
	if v, ok := dict.Vals["auto_generate_name"]; ok {
		b, pe := pydantic.Bool("auto_generate_name", v)
		fail(pe)
		req.autoName = b
	}
	if v := dict.Vals["workflow_id"]; v != nil {
		_, pe := pydantic.Str("workflow_id", v)
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
			if !dify.IsUUID(f.UploadFileID) {
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

// checkChat makes the checks Dify makes after the body parsed and before
// anything runs. ChatApi.post looks the conversation up before generating;
// the generator then refuses blocking mode (agent-chat), requires a query
// and validates `inputs` against the form on every turn
// (_prepare_user_inputs runs whether or not the conversation exists), then
// the files. A request that passes them is one Dify would run: only then is
// a turn steered (and a control-API rule used up).
func (s *Server) checkChat(req *chatRequest) *apiError {
	req.endUserID = s.store.EndUser(req.user).ID
	if req.convID != "" {
		if _, err := s.store.Conversation(req.convID, req.endUserID); err != nil {
			return errConvNotFound
		}
	}
	if req.blocking {
		return errBlockingAgentChat
	}
	// The generators' own checks: New Agent refuses a blank query
	// (agent_app/app_generator.py: `not query.strip()`); the legacy
	// agent-chat generator only an empty one, before stripping NUL bytes.
	if (s.mode == dify.ModeAgentChat && req.rawQuery == "") || (s.mode != dify.ModeAgentChat && strings.TrimSpace(req.query) == "") {
		return invalidParam("query is required")
	}
	inputs, e := s.prepareInputs(req.inputs)
	if e != nil {
		return e
	}
	req.inputs = inputs // stored as Dify stores them, not as sent
	if req.userFiles, req.uploadIDs, e = s.checkFiles(req.files, req.endUserID); e != nil {
		return e
	}
	if s.isClosed() {
		return errShuttingDown
	}
	return nil
}
