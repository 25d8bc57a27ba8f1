package mockserver

// The parse phase of a chat request (chat.go): the body as Dify's
// ChatRequestPayload reads it, then the checks Dify's controller and
// generator make before anything runs.

import (
	"encoding/json"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
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
	// fault is X-Dify-Mock-Fault, parsed once, here; the steer phase weighs
	// it against rules, the cassette and the server (readSteering).
	fault    fault.Spec
	faultSet bool // the header was sent

	// Set by checkChat.
	endUserID string
	userFiles []dify.MessageFile // files[] as the stored message lists them
	uploadIDs []string           // the upload ids of files[], in request order
}

// chatRequestPayload is ChatRequestPayload
// (api/controllers/service_api/app/completion.py), in its field order.
var chatRequestPayload = pydantic.Model{Name: "ChatRequestPayload", Fields: []pydantic.Field{
	{Name: "inputs", Rule: pydantic.DictRule, Required: true},
	{Name: "query", Rule: pydantic.StrRule, Required: true},
	{Name: "files", Rule: pydantic.ListOfDicts, Optional: true},
	{Name: "response_mode", Rule: pydantic.Literal(dify.ResponseModeBlocking, dify.ResponseModeStreaming), Optional: true, Default: ""},
	{Name: "conversation_id", Rule: conversationIDRule, Optional: true, Default: ""},
	{Name: "retriever_from", Rule: pydantic.StrRule, Default: "dev"},
	{Name: "auto_generate_name", Rule: pydantic.BoolRule, Default: true},
	{Name: "workflow_id", Rule: pydantic.StrRule, Optional: true},
}}

// conversationIDRule is the payload's normalize_conversation_id: stripped,
// blank is a new conversation (""), else helper.uuid_value (Python's
// uuid.UUID spellings), canonicalised.
func conversationIDRule(loc string, v any) (any, []pydantic.Error) {
	str, isStr := v.(string)
	str = strings.TrimSpace(str)
	if isStr && str == "" {
		return "", nil
	}
	if id, ok := pydantic.PythonUUID(str); isStr && ok {
		return id, nil
	}
	return nil, []pydantic.Error{{Loc: loc, Msg: "Value error, conversation_id must be a valid UUID", Type: "value_error", Input: v}}
}

// parseChat validates the request: first the mock's X-Dify-Mock-Fault
// header (a malformed one is refused before the body is read, as on every
// other route, withFaults), then the body in Dify's order
// (api/controllers/service_api/app/completion.py ChatApi.post): the JSON
// body and `user` (validate_app_token), every ChatRequestPayload field at
// once (one pydantic ValidationError listing each failing field, in the
// model's field order), then the New Agent streaming-only rule
// (_resolve_agent_app_streaming).
func (s *appServer) parseChat(w http.ResponseWriter, r *http.Request) (*chatRequest, *apiError) {
	spec, faultSet, e := headerFault(r)
	if e != nil {
		return nil, e
	}
	body, raw, e := readJSONRaw(w, r)
	if e != nil {
		return nil, e
	}
	req := &chatRequest{autoName: true, fault: spec, faultSet: faultSet}
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
	p, errs := chatRequestPayload.Validate(dict)
	if len(errs) > 0 {
		return nil, pydanticError(chatRequestPayload.Name, errs...)
	}
	req.inputs, _ = p["inputs"].(map[string]any)
	req.rawQuery = p.Str("query")
	req.query = strings.ReplaceAll(req.rawQuery, "\x00", "")
	req.convID = p.Str("conversation_id")
	req.autoName = p.Bool("auto_generate_name")
	mode := p.Str("response_mode")
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
func (s *appServer) checkFiles(files []dify.InputFile, ownerID string) ([]dify.MessageFile, []string, *apiError) {
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
func (s *appServer) checkChat(req *chatRequest) *apiError {
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
