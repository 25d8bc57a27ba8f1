package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/difyops/terraform-provider-dify/dify"
)

var (
	_ action.ActionWithConfigure      = &chatAction{}
	_ action.ActionWithValidateConfig = &chatAction{}
)

// DefaultChatActionTimeout bounds one dify_chat invocation unless `timeout`
// says otherwise. A smoke test should be quick; a real agent run may not be.
const DefaultChatActionTimeout = 5 * time.Minute

// NewChatAction is the dify_chat action (Terraform >= 1.14).
func NewChatAction() action.Action { return &chatAction{} }

type chatAction struct{ data *providerData }

type chatActionModel struct {
	Query               types.String `tfsdk:"query"`
	User                types.String `tfsdk:"user"`
	ConversationID      types.String `tfsdk:"conversation_id"`
	Inputs              types.Map    `tfsdk:"inputs"`
	ExpectAnswerMatches types.String `tfsdk:"expect_answer_matches"`
	KeepConversation    types.Bool   `tfsdk:"keep_conversation"`
	Timeout             types.String `tfsdk:"timeout"`
}

func (a *chatAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_chat"
}

func (a *chatAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Sends one chat message to the Dify app (`POST /chat-messages`, streaming) and reports the " +
			"agent's progress to Terraform while it runs: each thought, each tool call and its result, the answer as it " +
			"streams, and a summary (tokens, cost, and the annotation that answered, if one did).\n\n" +
			"The action **fails** the Terraform run when Dify reports an error in the stream (for example " +
			"`agent_run_limit_exceeded`), when Dify refuses the message, when the stream is cut, when `timeout` passes " +
			"(the run is then stopped), or when the answer does not match `expect_answer_matches`. " +
			"A conversation the action started is deleted afterwards, whether it passed or failed, unless " +
			"`keep_conversation` is `true`; a conversation given in `conversation_id` is never deleted.\n\n" +
			"Typical use is a smoke test after a change, triggered from a resource's `lifecycle { action_trigger { ... } }` " +
			"or run on demand with `terraform apply -invoke=action.dify_chat.NAME`. Requires Terraform 1.14 or later.",
		Attributes: map[string]schema.Attribute{
			"query": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "The message to send.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"user": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "End user who sends the message. Defaults to the provider's `user`. With `conversation_id` it " +
					"must be the conversation's user.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"conversation_id": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Continue this existing conversation (for example `dify_conversation.x.id`) instead of starting " +
					"a new one. Defaults to a new conversation. An existing conversation is never deleted by the action.",
				Validators: []validator.String{isUUID("conversation")},
			},
			"inputs": schema.MapAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Values for the app's input variables, for a new conversation (Dify ignores inputs on later " +
					"messages). Defaults to none.",
			},
			"expect_answer_matches": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "A regular expression (Go RE2 syntax) the final answer must match somewhere, e.g. `(?i)lisbon`; " +
					"the action fails when it does not. Defaults to no check: any completed answer passes.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"keep_conversation": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Keep the conversation the action started instead of deleting it afterwards, for example to read " +
					"it later in the Dify console. Defaults to `false`.",
			},
			"timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "How long the reply may take, as a Go duration of at least `1s` (`\"90s\"`, `\"10m\"`). " +
					"When it passes, the run is stopped and the action fails. Defaults to `\"5m\"`.",
			},
		},
	}
}

func (a *chatAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = configureData(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks the regular expression and the timeout at plan
// time, so a typo fails before anything is sent.
func (a *chatAction) ValidateConfig(ctx context.Context, req action.ValidateConfigRequest, resp *action.ValidateConfigResponse) {
	var m chatActionModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if v := m.ExpectAnswerMatches; !v.IsNull() && !v.IsUnknown() {
		if _, err := regexp.Compile(v.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("expect_answer_matches"), "Invalid regular expression",
				fmt.Sprintf("expect_answer_matches %q is not a valid Go (RE2) regular expression: %v.", v.ValueString(), err))
		}
	}
	if v := m.Timeout; !v.IsNull() && !v.IsUnknown() {
		if _, err := parseChatTimeout(v.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("timeout"), "Invalid timeout", err.Error())
		}
	}
}

func parseChatTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("timeout %q is not a Go duration such as \"90s\" or \"10m\": %v", s, err)
	}
	if d < time.Second {
		return 0, fmt.Errorf("timeout %q is shorter than the minimum of 1s", s)
	}
	return d, nil
}

func (a *chatAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m chatActionModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if a.data == nil {
		resp.Diagnostics.AddError("Provider not configured", "The dify provider was not configured before the dify_chat action ran. This is a bug in the provider; please report it.")
		return
	}
	send := func(msg string) {
		if resp.SendProgress != nil {
			resp.SendProgress(action.InvokeProgressEvent{Message: a.data.redact.clean(msg)})
		}
	}
	resp.Diagnostics.Append(a.run(ctx, m, send)...)
}

// run is Invoke without the framework types, so tests can drive it.
func (a *chatAction) run(ctx context.Context, m chatActionModel, send func(string)) diag.Diagnostics {
	var diags diag.Diagnostics
	const summary = "dify_chat failed"
	limit := DefaultChatActionTimeout
	if !m.Timeout.IsNull() {
		var err error
		if limit, err = parseChatTimeout(m.Timeout.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("timeout"), "Invalid timeout", err.Error())
			return diags
		}
	}
	var expect *regexp.Regexp
	if !m.ExpectAnswerMatches.IsNull() {
		var err error
		if expect, err = regexp.Compile(m.ExpectAnswerMatches.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("expect_answer_matches"), "Invalid regular expression", err.Error())
			return diags
		}
	}

	user := a.data.userOr(m.User.ValueString())
	existing := m.ConversationID.ValueString()
	chat := dify.ChatRequest{Query: m.Query.ValueString(), User: user, Inputs: map[string]any{}, ConversationID: existing}
	if !m.Inputs.IsNull() {
		var in map[string]string
		diags.Append(m.Inputs.ElementsAs(ctx, &in, false)...)
		for k, v := range in {
			chat.Inputs[k] = v
		}
		if diags.HasError() {
			return diags
		}
	}

	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if existing != "" {
		send(fmt.Sprintf("sending the query to conversation %s as user %q", existing, user))
	} else {
		send(fmt.Sprintf("sending the query as user %q (new conversation)", user))
	}
	start := time.Now()
	stream, err := a.data.client.SendChatMessage(runCtx, chat)
	if err != nil {
		next := "Dify refused the message before any reply started, so nothing was sent to the agent."
		if !dify.ProvesNothingCreated(err) {
			next = "The message may have reached Dify and started a reply. Chat messages are never re-sent automatically (a retry could send the message twice)."
		}
		a.data.redact.addError(&diags, summary, err, next)
		return diags
	}
	defer stream.Close()

	var acc dify.Accumulator
	progress := newChatProgress(send)
	var streamErr error
	for {
		ev, err := stream.Next()
		var frameErr *dify.FrameError
		if errors.As(err, &frameErr) {
			tflog.Warn(ctx, "skipped a malformed event in the reply stream", map[string]any{"error": a.data.redact.clean(err.Error())})
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			streamErr = err
			break
		}
		progress.Event(ev)
		if err := acc.Add(ev); err != nil {
			streamErr = err
			break
		}
		if _, end := ev.(*dify.MessageEndEvent); end {
			break
		}
	}
	progress.Finish()
	turn := acc.Reply()

	// Clean up first, with a context of its own: the run's may have expired.
	cleanup := ""
	if existing == "" && turn.ConversationID != "" {
		keep := m.KeepConversation.ValueBool()
		apiErr, isAPI := dify.AsAPIError(streamErr)
		stillRunning := !turn.Completed && streamErr != nil && !(isAPI && apiErr.Stream)
		cleanup = a.finishConversation(ctx, turn, user, keep, stillRunning, send)
	}

	switch {
	case streamErr != nil:
		what := ""
		apiErr, isAPI := dify.AsAPIError(streamErr)
		switch {
		case isAPI && apiErr.Stream:
			what = fmt.Sprintf("Dify reported an error inside the reply stream (status %d, code %q): %s", apiErr.Status, apiErr.Code, apiErr.Message)
		case errors.Is(streamErr, context.DeadlineExceeded) || errors.Is(runCtx.Err(), context.DeadlineExceeded):
			what = fmt.Sprintf("The reply did not finish within the timeout of %s; the run was stopped. Raise timeout if the agent legitimately needs longer.", limit)
		default:
			what = fmt.Sprintf("The reply stream ended before Dify finished the message: %v.", streamErr)
		}
		diags.AddError(summary, a.data.redact.clean(what+cleanup))
	case !turn.Completed:
		diags.AddError(summary, a.data.redact.clean("The reply stream ended without message_end, so the answer is incomplete."+cleanup))
	case expect != nil && !expect.MatchString(turn.Answer):
		diags.AddError("dify_chat answer did not match",
			a.data.redact.clean(fmt.Sprintf("The answer does not match expect_answer_matches %q.\n\nAnswer (%d characters):\n%s%s",
				expect.String(), len([]rune(turn.Answer)), clip(turn.Answer, 2000), cleanup)))
	default:
		verdict := "answer received"
		if expect != nil {
			verdict = fmt.Sprintf("answer matches %q", expect.String())
		}
		send(fmt.Sprintf("%s after %s", verdict, time.Since(start).Round(100*time.Millisecond)))
	}
	return diags
}

// finishConversation stops a still-running reply and deletes the
// conversation the action started, unless it is to be kept. It returns a
// sentence for a failure diagnostic ("" when there is nothing to add).
func (a *chatAction) finishConversation(ctx context.Context, turn dify.ChatReply, user string, keep, stillRunning bool, send func(string)) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if stillRunning && turn.TaskID != "" {
		if err := a.data.client.StopChatMessage(ctx, turn.TaskID, user); err != nil {
			tflog.Warn(ctx, "stopping the unfinished reply failed", map[string]any{"task_id": turn.TaskID, "error": a.data.redact.clean(err.Error())})
		}
	}
	if keep {
		send(fmt.Sprintf("kept conversation %s (keep_conversation = true)", turn.ConversationID))
		return fmt.Sprintf("\n\nThe conversation %s was kept (keep_conversation = true).", turn.ConversationID)
	}
	err := a.data.client.DeleteConversation(ctx, turn.ConversationID, user)
	if err != nil && !dify.IsNotFound(err) {
		msg := fmt.Sprintf("deleting conversation %s failed: %v", turn.ConversationID, err)
		send(msg)
		return fmt.Sprintf("\n\nDeleting the conversation %s (user %q) afterwards failed (%v); delete it in Dify if it is still listed.", turn.ConversationID, user, err)
	}
	a.data.conversations.Forget(user, turn.ConversationID)
	send(fmt.Sprintf("deleted conversation %s", turn.ConversationID))
	return fmt.Sprintf("\n\nThe conversation %s the action started was deleted.", turn.ConversationID)
}
