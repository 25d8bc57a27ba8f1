package mockserver

// The store phase of a chat request (chat.go): the one place a chat
// message is written, with every field set as Dify's code sets it.

import (
	"encoding/json"
	"regexp"
	"strings"
	"unicode"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
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
func (s *appServer) storeTurn(cs *chatStream, rep *replay.Report) {
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
	switch {
	case res.ErrorCode != "":
		m.Status = "error"
		msg := res.ErrorMessage
		m.Error = &msg
		u = nil // the row keeps _init_generate_records' zeros
	case res.Ended:
		m.Answer = savedAnswer(res.Answer)
	default:
		m.Answer = res.Answer
	}
	if u == nil {
		u = replay.ZeroUsage()
	}
	m.MessageTokens, m.AnswerTokens = u.PromptTokens, u.CompletionTokens
	m.TotalTokens = u.PromptTokens + u.CompletionTokens
	m.ProviderResponseLatency = dify.Float(u.Latency)
	// total_price goes through a Numeric(10, 7) column (models/model.py
	// Message) and comes back as a Decimal of seven places, written as
	// str(Decimal): "0E-7" for nothing, "0.0012890" for 0.001289.
	price, currency := pydantic.Numeric(u.TotalPrice, 7), u.Currency
	m.TotalPrice, m.Currency = &price, &currency
	if err := s.store.AddMessage(m, cs.plan.ref.cassette); err != nil {
		s.log.Debug("turn not stored", "reason", err.Error())
	}
}

// templateVar is PromptTemplateParser's REGEX
// (core/prompt/utils/prompt_template_parser.py): {{name}} with a name of at
// most 30 letters, digits and underscores not starting with a digit, or one
// of the three special variables.
var templateVar = regexp.MustCompile(`\{\{([a-zA-Z_][a-zA-Z0-9_]{0,29}|#histories#|#query#|#context#)\}\}`)

// removeTemplateVariables is PromptTemplateParser.remove_template_variables:
// every {{name}} becomes {name}.
func removeTemplateVariables(s string) string {
	if !strings.Contains(s, "{{") {
		return s // no match possible; the expression copies even then
	}
	return templateVar.ReplaceAllString(s, "{$1}")
}

// savedAnswer is the answer as _save_message stores it:
// remove_template_variables(answer.strip()), "" for no answer.
func savedAnswer(answer string) string {
	return removeTemplateVariables(pyStrip(answer))
}

// pyStrip is Python's str.strip(): it removes what str.isspace() calls
// whitespace, which is Go's unicode.IsSpace plus the separators U+001C to
// U+001F.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
}

// specialTokens is the `<|…|>` run PromptTemplateParser.format removes after
// filling the variables (Python's `.` does not match a newline, nor does
// Go's).
var specialTokens = regexp.MustCompile(`<\|.*?\|>`)

// introduction is a new conversation's introduction, as
// MessageBasedAppGenerator._get_conversation_introduction makes it: the
// app's opening statement with its {{variables}} filled from the turn's
// inputs by PromptTemplateParser.format (a string value has its own
// {{variables}} rewritten to {name}; a variable the inputs lack stays as
// written), then `<|…|>` runs removed; "" when the app has none. A value
// that is not a string (a number input) makes Dify's re.sub raise a
// TypeError that the function does not catch; the mock keeps the
// placeholder instead (docs/mock/api-coverage.md).
func (s *appServer) introduction(inputs map[string]any) *string {
	out := ""
	if p := s.app.Parameters.OpeningStatement; p != nil && *p != "" {
		out = specialTokens.ReplaceAllString(templateVar.ReplaceAllStringFunc(*p, func(m string) string {
			if v, ok := inputs[templateVar.FindStringSubmatch(m)[1]].(string); ok {
				return removeTemplateVariables(v)
			}
			return m
		}), "")
	}
	return &out
}
