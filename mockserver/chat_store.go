package mockserver

// The store phase of a chat request (chat.go): the one place a chat
// message is written, with every field set as Dify's code sets it.

import (
	"encoding/json"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/replay"
)

// uuidNil is constants.UUID_NIL (api/constants/__init__.py).
const uuidNil = "00000000-0000-0000-0000-000000000000"

// storeTurn stores the turn's message as GET /messages then returns it
// (docs/api §6). The player calls it once, before the frame that ends the
// stream, so a client acting on message_end finds the message. The values
// are Dify's:
//
//   - parent_message_id is UUID_NIL: Service API turns are not threaded
//     (the generators set it for InvokeFrom.SERVICE_API,
//     core/app/apps/agent_chat/app_generator.py generate);
//   - a turn that ends with message_end (completed or stopped) is saved by
//     EasyUIBasedGenerateTaskPipeline._save_message: the answer stripped
//     and with its template variables rewritten (savedAnswer), the tokens,
//     latency and price from the usage;
//   - a turn that ends with an error event is not saved by _save_message:
//     handle_error (based_generate_task_pipeline.py) only sets status
//     "error" and the error text on the row _init_generate_records created,
//     whose answer is "" and whose tokens, latency and price are 0 (its
//     agent thoughts were saved as the agent ran);
//   - a turn the client left (or a fault cut) is stored as far as it
//     streamed, the mock's documented choice (docs/mock/faults.md).
func (s *Server) storeTurn(cs *chatStream, rep *replay.Report) {
	res, req := rep.Result, cs.req
	files := make([]dify.MessageFile, 0, len(req.userFiles)+len(res.Files))
	files = append(files, req.userFiles...)
	files = append(files, res.Files...)
	parent := uuidNil
	m := dify.Message{
		ID: cs.bound.Binding.MessageID, ConversationID: cs.conv.ID, ParentMessageID: &parent, Inputs: req.inputs, Query: req.query,
		RetrieverResources: res.RetrieverResources, AgentThoughts: res.Thoughts, MessageFiles: files,
		CreatedAt: cs.now.Unix(), Status: "normal", ExtraContents: []json.RawMessage{},
	}
	u := res.Usage
	m.Answer = res.Answer
	if res.ErrorCode != "" {
		m.Status = "error"
		msg := res.ErrorMessage
		m.Error = &msg
	}
	if u == nil {
		u = replay.ZeroUsage()
	}
	m.MessageTokens, m.AnswerTokens = u.PromptTokens, u.CompletionTokens
	m.TotalTokens = u.PromptTokens + u.CompletionTokens
	m.ProviderResponseLatency = u.Latency
	price, currency := u.TotalPrice, u.Currency
	m.TotalPrice, m.Currency = &price, &currency
	if err := s.store.AddMessage(m, cs.plan.ref.cassette); err != nil {
		s.log.Debug("turn not stored", "reason", err.Error())
	}
}

// introduction is a new conversation's introduction.
func (s *Server) introduction(map[string]any) *string {
	return s.app.Parameters.OpeningStatement
}
