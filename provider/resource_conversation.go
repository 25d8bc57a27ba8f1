package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/difyops/terraform-provider-dify/dify"
)

var (
	_ resource.ResourceWithConfigure   = &conversationResource{}
	_ resource.ResourceWithImportState = &conversationResource{}
	_ resource.ResourceWithModifyPlan  = &conversationResource{}
)

// DefaultCreateTimeout bounds the first chat turn. Agent runs may take many
// minutes (docs/api §18: Dify's own run deadline defaults to one hour).
const DefaultCreateTimeout = 30 * time.Minute

// cleanupTimeout bounds the best-effort clean-up after a failed create.
const cleanupTimeout = 30 * time.Second

// NewConversationResource is the dify_conversation resource.
func NewConversationResource() resource.Resource { return &conversationResource{} }

type conversationResource struct{ data *providerData }

type conversationModel struct {
	ID               types.String   `tfsdk:"id"`
	User             types.String   `tfsdk:"user"`
	Query            types.String   `tfsdk:"query"`
	Inputs           types.Map      `tfsdk:"inputs"`
	Files            types.List     `tfsdk:"files"`
	AutoGenerateName types.Bool     `tfsdk:"auto_generate_name"`
	Name             types.String   `tfsdk:"name"`
	MessageID        types.String   `tfsdk:"message_id"`
	Answer           types.String   `tfsdk:"answer"`
	AgentThoughts    types.List     `tfsdk:"agent_thoughts"`
	Usage            types.Object   `tfsdk:"usage"`
	CreatedAt        types.Int64    `tfsdk:"created_at"`
	Timeouts         timeouts.Value `tfsdk:"timeouts"`
}

var agentThoughtAttrTypes = map[string]attr.Type{
	"id":          types.StringType,
	"position":    types.Int64Type,
	"thought":     types.StringType,
	"tool":        types.StringType,
	"tool_input":  types.StringType,
	"observation": types.StringType,
}

var usageAttrTypes = map[string]attr.Type{
	"prompt_tokens":         types.Int64Type,
	"prompt_unit_price":     types.StringType,
	"prompt_price":          types.StringType,
	"completion_tokens":     types.Int64Type,
	"completion_unit_price": types.StringType,
	"completion_price":      types.StringType,
	"total_tokens":          types.Int64Type,
	"total_price":           types.StringType,
	"currency":              types.StringType,
	"latency":               types.Float64Type,
}

func (r *conversationResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_conversation"
}

func (r *conversationResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A conversation with the Dify Agent app. Creating it sends the first chat message " +
			"(`POST /chat-messages`, streaming) and waits for the reply to finish (`message_end`); the answer, " +
			"the agent's thoughts and the token usage are recorded. Renaming updates in place " +
			"(`POST /conversations/{id}/name`); every first-message argument forces a new conversation; destroy deletes it.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: keep,
				MarkdownDescription: "The conversation id (a UUID) Dify assigned."},
			"user": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "End user the conversation belongs to. Defaults to the provider's `user` " +
					"(`" + EnvUser + "`, then `" + DefaultUser + "`) at creation; changing it forces a new conversation, while a " +
					"later change of the provider default does not move existing conversations. Files in `files` must belong to the same user.",
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			},
			"query": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "The first message. Changing it forces a new conversation.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"inputs": schema.MapAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Values for the app's input variables, keyed by `variable` from `dify_app_parameters.user_input_form`. " +
					"Defaults to none (`{}` is sent). A change that makes Dify store other values forces a new conversation; one that " +
					"stores the same (a form default written out, `\"3.0\"` for `\"3\"`) is an in-place update of state only. Read back on " +
					"import without what leaving a variable out stores (its default, `\"\"`, null); numbers and booleans Dify converted " +
					"come back in their canonical spelling, e.g. `\"3\"` for `\"3.0\"`.",
				// Whether a change replaces the conversation is decided in
				// ModifyPlan, by what Dify stores (planInputs).
			},
			"files": schema.ListAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Ids of files uploaded with `dify_file` to attach to the first message. They are sent as " +
					"`local_file` references of type `custom`, which lets Dify take the type from the uploaded file. " +
					"Defaults to none. Changing it forces a new conversation. Read back on import from the first message's files.",
				Validators: []validator.List{listvalidator.ValueStringsAre(isUUID("upload"))},
				PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplaceIf(replaceUnlessImportedList,
					replaceUnlessImportedText,
					replaceUnlessImportedText)},
			},
			"auto_generate_name": schema.BoolAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Whether Dify generates the conversation's name from the first message. " +
					"Defaults to `true` when `name` is not set and to `false` when it is, so Dify's generated title never " +
					"races the configured name. Changing it forces a new conversation. Dify does not store it, so an import cannot " +
					"read it back: the first apply after an import records the configured value.",
				PlanModifiers: []planmodifier.Bool{
					boolplanmodifier.UseStateForUnknown(),
					boolplanmodifier.RequiresReplaceIf(replaceUnlessImportedBool,
						replaceUnlessImportedText,
						replaceUnlessImportedText),
				},
			},
			"name": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "The conversation's name. When set, it is applied right after the first message and " +
					"updated in place on change. When not set, Dify's name (generated or default) is recorded and followed.",
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
				PlanModifiers: keep,
			},
			"message_id": schema.StringAttribute{Computed: true, PlanModifiers: keep,
				MarkdownDescription: "Id of the first message."},
			"answer": schema.StringAttribute{Computed: true, PlanModifiers: keep,
				MarkdownDescription: "The agent's final answer to the first message: the closing `message` event when Dify sends one, " +
					"otherwise the streamed deltas with moderation replacements applied."},
			"agent_thoughts": schema.ListNestedAttribute{
				Computed:            true,
				PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "The agent's reasoning and tool steps for the first message, one per thought row, ordered by position.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":          schema.StringAttribute{Computed: true, MarkdownDescription: "Thought row id."},
					"position":    schema.Int64Attribute{Computed: true, MarkdownDescription: "Position in the turn, from 1."},
					"thought":     schema.StringAttribute{Computed: true, MarkdownDescription: "The model's reasoning text (may be empty)."},
					"tool":        schema.StringAttribute{Computed: true, MarkdownDescription: "Tool name(s) called, joined by `;` (empty when none)."},
					"tool_input":  schema.StringAttribute{Computed: true, MarkdownDescription: "Tool input as JSON text, keyed by tool name."},
					"observation": schema.StringAttribute{Computed: true, MarkdownDescription: "Tool output as JSON text, keyed by tool name."},
				}},
			},
			"usage": schema.SingleNestedAttribute{
				Computed:            true,
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "Token usage and cost of the first message (`message_end.metadata.usage`). Prices are decimal strings as Dify sends them.",
				Attributes: map[string]schema.Attribute{
					"prompt_tokens":         schema.Int64Attribute{Computed: true, MarkdownDescription: "Prompt tokens."},
					"prompt_unit_price":     schema.StringAttribute{Computed: true, MarkdownDescription: "Price per prompt price unit (null after import)."},
					"prompt_price":          schema.StringAttribute{Computed: true, MarkdownDescription: "Prompt cost (null after import)."},
					"completion_tokens":     schema.Int64Attribute{Computed: true, MarkdownDescription: "Completion tokens."},
					"completion_unit_price": schema.StringAttribute{Computed: true, MarkdownDescription: "Price per completion price unit (null after import)."},
					"completion_price":      schema.StringAttribute{Computed: true, MarkdownDescription: "Completion cost (null after import)."},
					"total_tokens":          schema.Int64Attribute{Computed: true, MarkdownDescription: "All tokens."},
					"total_price":           schema.StringAttribute{Computed: true, MarkdownDescription: "Total cost."},
					"currency":              schema.StringAttribute{Computed: true, MarkdownDescription: "Currency of the prices, e.g. `USD`."},
					"latency":               schema.Float64Attribute{Computed: true, MarkdownDescription: "Model latency in seconds."},
				},
			},
			"created_at": schema.Int64Attribute{Computed: true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
				MarkdownDescription: "When the first message was created, Unix epoch seconds."},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{
				Create: true,
				CreateDescription: "How long to wait for the first reply to finish, as a Go duration (`\"45m\"`). " +
					"Defaults to `\"30m\"`. When it passes, the run is stopped and the half-made conversation deleted.",
			}),
		},
	}
}

// replaceUnlessImported forces replacement when an input changes, except
// when the prior value is null because the resource was imported and the
// value could not be read back (recording it then is harmless).
// replaceUnlessImportedText describes the RequiresReplaceIf modifiers of the
// first-message arguments an import cannot read back.
const replaceUnlessImportedText = "Changing the value forces a new conversation (not after an import, which cannot read it back)."

func replaceUnlessImportedList(_ context.Context, req planmodifier.ListRequest, resp *listplanmodifier.RequiresReplaceIfFuncResponse) {
	resp.RequiresReplace = !req.StateValue.IsNull()
}

func replaceUnlessImportedBool(_ context.Context, req planmodifier.BoolRequest, resp *boolplanmodifier.RequiresReplaceIfFuncResponse) {
	resp.RequiresReplace = !req.StateValue.IsNull()
}

func (r *conversationResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configureData(req.ProviderData, &resp.Diagnostics)
}

func (r *conversationResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan, cfg conversationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	changed := false
	if req.State.Raw.IsNull() && cfg.User.IsNull() && r.data != nil {
		plan.User = types.StringValue(r.data.user)
		changed = true
	}
	// Unknown only at creation or after an import (UseStateForUnknown keeps
	// the recorded value otherwise): generate a name unless one is configured.
	if cfg.AutoGenerateName.IsNull() && plan.AutoGenerateName.IsUnknown() {
		plan.AutoGenerateName = types.BoolValue(cfg.Name.IsNull())
		changed = true
	}
	if !req.State.Raw.IsNull() {
		var state conversationModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		r.planInputs(ctx, cfg.Inputs, state, resp)
	}
	if changed {
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	}
}

// planInputs decides whether a change of inputs replaces the conversation by
// what Dify stores for each side (storedInputs), not by their spelling: a
// configuration that stores the same values (an explicit default, "3.0" for
// 3, a variable the form does not have) keeps the conversation and only
// records the configured spelling; one that stores other values is
// reported variable by variable before the replacement.
func (r *conversationResource) planInputs(ctx context.Context, cfgInputs types.Map, state conversationModel, resp *resource.ModifyPlanResponse) {
	if cfgInputs.Equal(state.Inputs) {
		return
	}
	replace := func() { resp.RequiresReplace = append(resp.RequiresReplace, path.Root("inputs")) }
	if cfgInputs.IsUnknown() || r.data == nil {
		replace()
		return
	}
	cfg, prior := map[string]string{}, map[string]string{}
	resp.Diagnostics.Append(cfgInputs.ElementsAs(ctx, &cfg, false)...)
	resp.Diagnostics.Append(state.Inputs.ElementsAs(ctx, &prior, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	params, err := r.data.params.get(ctx)
	if err != nil {
		replace()
		resp.Diagnostics.AddAttributeWarning(path.Root("inputs"), "Cannot compare inputs with the app's form",
			r.data.redact.clean(fmt.Sprintf("Reading the app's input form (GET /parameters) failed (%v), so any change of inputs replaces the conversation.", err)))
		return
	}
	form := params.UserInputForm
	id := state.ID.ValueString()
	if diff := inputsDifference(form, cfg, prior); diff != "" {
		replace()
		resp.Diagnostics.AddAttributeWarning(path.Root("inputs"), "Changed inputs replace the conversation",
			r.data.redact.clean(fmt.Sprintf("The configured inputs make Dify store other values than conversation %s has:\n%s\n\n"+
				"A conversation's inputs cannot be changed, so applying this plan deletes conversation %s in Dify and starts a new one. "+
				"To keep it, write the inputs it was created with.", id, diff, id)))
		return
	}
	detail := fmt.Sprintf("The configured inputs make Dify store the same values conversation %s has (Dify fills each form variable left out with its default and converts numbers and checkboxes), so the conversation is kept; applying only records the configured spelling in Terraform state.", id)
	if extra := notInForm(form, cfg); len(extra) > 0 {
		detail += fmt.Sprintf(" The app's form has no variable %s: Dify ignores it.", strings.Join(extra, ", "))
	}
	resp.Diagnostics.AddAttributeWarning(path.Root("inputs"), "Inputs spelled differently from what Dify stored", r.data.redact.clean(detail))
}

// firstMessage is the chat request that creates the conversation: the
// plan's query, inputs (none: {}), files (as local_file references of type
// custom, so Dify takes the type from the upload) and auto_generate_name
// (default true unless name is set).
func firstMessage(ctx context.Context, plan *conversationModel, user string, diags *diag.Diagnostics) dify.ChatRequest {
	chat := dify.ChatRequest{Query: plan.Query.ValueString(), User: user, Inputs: map[string]any{}}
	if !plan.Inputs.IsNull() {
		var in map[string]string
		diags.Append(plan.Inputs.ElementsAs(ctx, &in, false)...)
		for k, v := range in {
			chat.Inputs[k] = v
		}
	}
	if !plan.Files.IsNull() {
		var ids []string
		diags.Append(plan.Files.ElementsAs(ctx, &ids, false)...)
		for _, id := range ids {
			chat.Files = append(chat.Files, dify.InputFile{Type: dify.FileTypeCustom, TransferMethod: dify.TransferLocalFile, UploadFileID: id})
		}
	}
	auto := plan.AutoGenerateName.IsNull() || plan.AutoGenerateName.IsUnknown() || plan.AutoGenerateName.ValueBool()
	chat.AutoGenerateName = &auto
	return chat
}

// settleName gives the new conversation the planned name, or records the
// name Dify gave it. It returns false when renaming failed (the
// half-made conversation is deleted and the error is in diags).
func (r *conversationResource) settleName(ctx context.Context, plan, state *conversationModel, user string, diags *diag.Diagnostics) bool {
	id := state.ID.ValueString()
	if !plan.Name.IsNull() && !plan.Name.IsUnknown() {
		conv, err := r.data.client.RenameConversation(ctx, id, dify.RenameRequest{Name: plan.Name.ValueString(), User: user})
		if err != nil {
			cleanup := r.deleteHalfMade(ctx, id, "", user)
			r.data.redact.addError(diags, "Unable to create conversation", err,
				fmt.Sprintf("The first message was answered, but naming the conversation %q failed. %s", plan.Name.ValueString(), cleanup))
			return false
		}
		r.data.conversations.Remember(user, *conv)
		state.Name = types.StringValue(conv.Name)
		return true
	}
	conv, err := r.data.conversations.FindFresh(ctx, user, id)
	if err == nil && conv == nil {
		var res lookupResult
		res, err = r.data.conversations.Lookup(ctx, user, id)
		conv = res.Conversation
	}
	switch {
	case err != nil:
		diags.AddWarning("Conversation name not read",
			r.data.redact.clean(describeError(err, "The conversation was created; its name is recorded as empty and is read again on the next refresh.")))
		state.Name = types.StringValue("")
	case conv == nil:
		state.Name = types.StringValue("")
	default:
		state.Name = types.StringValue(conv.Name)
	}
	return true
}

func (r *conversationResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan conversationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	limit, diags := plan.Timeouts.Create(ctx, DefaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	user := r.data.userOr(plan.User.ValueString())
	chat := firstMessage(ctx, &plan, user, &resp.Diagnostics)
	auto := *chat.AutoGenerateName
	if resp.Diagnostics.HasError() {
		return
	}

	const summary = "Unable to create conversation"
	stream, err := r.data.client.SendChatMessage(ctx, chat)
	if err != nil {
		next := "Dify refused the first message before starting a conversation, so nothing was created; fix the cause and run terraform apply again."
		if !dify.ProvesNothingCreated(err) {
			// A 5xx or a timeout after the request left: Dify may have
			// stored the message and started the conversation.
			next = "The first message may have reached Dify and started a conversation that is not in Terraform state. " +
				"Chat messages are never re-sent automatically (a retry could send the message twice). " + findConversation(user) +
				" Then run terraform apply again."
		}
		r.data.redact.addError(&resp.Diagnostics, summary, err, next)
		return
	}
	turn, err := dify.Collect(stream)
	var frameErr *dify.FrameError
	switch {
	case err == nil && turn.Completed:
	case errors.As(err, &frameErr) && turn.Completed:
		resp.Diagnostics.AddWarning("Malformed event in the reply stream",
			r.data.redact.clean(fmt.Sprintf("One event of the reply could not be decoded and was skipped (%v); the reply otherwise completed.", err)))
	default:
		r.failCreate(ctx, &resp.Diagnostics, turn, err, user, limit)
		return
	}
	if turn.ConversationID == "" {
		resp.Diagnostics.AddError(summary, "The reply finished but Dify never named the conversation it belongs to (no conversation_id in the stream), "+
			"so the provider cannot track it. This points at a non-standard server or proxy.")
		return
	}

	state := plan
	state.ID = types.StringValue(turn.ConversationID)
	state.User = types.StringValue(user)
	state.AutoGenerateName = types.BoolValue(auto)
	state.MessageID = types.StringValue(turn.MessageID)
	state.Answer = types.StringValue(turn.Answer)
	state.CreatedAt = types.Int64Value(turn.CreatedAt)
	state.AgentThoughts, diags = thoughtsFromStream(turn.Thoughts)
	resp.Diagnostics.Append(diags...)
	state.Usage, diags = usageValue(turn.Usage)
	resp.Diagnostics.Append(diags...)

	if !r.settleName(ctx, &plan, &state, user, &resp.Diagnostics) {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	resp.Diagnostics.Append(setConversationIdentity(ctx, resp.Identity, user, turn.ConversationID)...)
}

// failCreate reports a failed or incomplete reply and removes what Dify may
// already have made for it, so nothing half-made outlives the failed create.
func (r *conversationResource) failCreate(ctx context.Context, diags *diag.Diagnostics, turn *dify.ChatReply, err error, user string, limit time.Duration) {
	const summary = "Unable to create conversation"
	if err == nil {
		err = dify.ErrTruncatedStream
	}
	var what string
	stillRunning := true
	apiErr, isAPI := dify.AsAPIError(err)
	switch {
	case isAPI && apiErr.Stream:
		stillRunning = false
		what = fmt.Sprintf("Dify reported an error inside the reply stream (status %d, code %q): %s", apiErr.Status, apiErr.Code, apiErr.Message)
		if apiErr.Code == "agent_run_limit_exceeded" {
			what += "\n\nThe agent run hit Dify's per-run limits (wall-clock deadline or model-request steps). Simplify the query or raise the limits on the Dify server."
		}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		what = fmt.Sprintf("The reply did not finish within the create timeout of %s. Raise it with timeouts { create = \"...\" } if the agent legitimately needs longer.", limit)
	default:
		what = fmt.Sprintf("The reply stream ended before Dify finished the message: %v.", err)
	}
	taskToStop := ""
	if stillRunning {
		taskToStop = turn.TaskID
	}
	cleanup := r.deleteHalfMade(ctx, turn.ConversationID, taskToStop, user)
	diags.AddError(summary, r.data.redact.clean(what+"\n\n"+cleanup+" Nothing was recorded in Terraform state; fix the cause and run terraform apply again."))
}

// findConversation tells how to find a conversation a failed create may have
// left in Dify for user, and how to adopt or remove it.
func findConversation(user string) string {
	return fmt.Sprintf("List user %q's conversations with the dify_conversations data source (or `terraform query` with a "+
		"list \"dify_conversation\" block on Terraform >= 1.14); import the one you want to keep with "+
		"`terraform import dify_conversation.NAME %s/CONVERSATION_ID`, or delete it in Dify.", user, user)
}

// deleteHalfMade stops a still-running reply (taskID non-empty) and deletes
// the conversation Dify created for a failed first message. It uses a fresh,
// bounded context because the create's own context may be what expired.
func (r *conversationResource) deleteHalfMade(ctx context.Context, conversationID, taskID, user string) string {
	if conversationID == "" {
		return "Dify had not named a conversation before the failure, so the provider could not delete it: one may have been started. " +
			findConversation(user)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if taskID != "" {
		if err := r.data.client.StopChatMessage(ctx, taskID, user); err != nil {
			tflog.Warn(ctx, "stopping the unfinished reply failed", map[string]any{"task_id": taskID, "error": r.data.redact.clean(err.Error())})
		}
	}
	err := r.data.client.DeleteConversation(ctx, conversationID, user)
	if err == nil || dify.IsNotFound(err) {
		r.data.conversations.Forget(user, conversationID)
		return fmt.Sprintf("The conversation %s that Dify had started for this message was deleted.", conversationID)
	}
	return fmt.Sprintf("Deleting the half-made conversation %s (user %q) failed (%v); delete it in Dify if it is still listed.", conversationID, user, err)
}

func (r *conversationResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state conversationModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	user := r.data.userOr(state.User.ValueString())
	id := state.ID.ValueString()
	res, err := r.data.conversations.Lookup(ctx, user, id)
	if err != nil {
		r.data.redact.addError(&resp.Diagnostics, "Unable to read conversation", err,
			fmt.Sprintf("Checking conversation %s of user %q failed; the state was left unchanged.", id, user))
		return
	}
	if !res.Exists && state.MessageID.IsNull() {
		// An import that found nothing: say why, instead of Terraform's
		// bare "Cannot import non-existent remote object".
		resp.Diagnostics.AddError("Cannot import conversation",
			fmt.Sprintf("Dify has no conversation %s for end user %q. Conversations belong to the end user who started them, and Dify "+
				"answers 404 to any other: import with USER/CONVERSATION_ID (a bare id uses the provider's default user, %q). "+
				"`dify_conversations` or `terraform query` lists a user's conversations.", id, user, r.data.user))
		return
	}
	if !res.Exists {
		tflog.Warn(ctx, "conversation no longer exists in Dify; removing it from state", map[string]any{"id": id, "user": user})
		resp.State.RemoveResource(ctx)
		// The framework wants an identity even for a removed resource when
		// Terraform (< 1.12) sent none.
		resp.Diagnostics.Append(setConversationIdentity(ctx, resp.Identity, user, id)...)
		return
	}
	state.User = types.StringValue(user)
	if res.Conversation != nil {
		state.Name = types.StringValue(res.Conversation.Name)
	}
	if state.MessageID.IsNull() {
		// Imported: everything but id and user comes from the history.
		resp.Diagnostics.Append(r.readFirstMessage(ctx, &state, user)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	resp.Diagnostics.Append(setConversationIdentity(ctx, resp.Identity, user, id)...)
}

// maxHistoryPages bounds the walk back to a conversation's first message:
// 10,000 pages of 100 messages, far beyond any real conversation, so a
// server that keeps answering with more pages cannot loop forever.
const maxHistoryPages = 10000

// readFirstMessage fills the first-message attributes from GET /messages,
// paging back to the oldest message (docs/api §6: pages go newest to oldest, each
// page oldest-first, next page by first_id = data[0].id).
func (r *conversationResource) readFirstMessage(ctx context.Context, state *conversationModel, user string) diag.Diagnostics {
	var diags diag.Diagnostics
	var first *dify.Message
	p := dify.ListMessagesParams{ConversationID: state.ID.ValueString(), User: user, Limit: 100}
	for page, err := range dify.MessagePages(ctx, r.data.client, &p, maxHistoryPages) {
		if err != nil {
			r.data.redact.addError(&diags, "Unable to read conversation", err,
				fmt.Sprintf("Reading the history of conversation %s failed.", state.ID.ValueString()))
			return diags
		}
		if len(page.Data) > 0 {
			first = &page.Data[0]
		}
	}
	if first == nil {
		diags.AddError("Unable to import conversation",
			fmt.Sprintf("Conversation %s has no messages, so it was not made by a first chat message and cannot be managed as a dify_conversation.", state.ID.ValueString()))
		return diags
	}
	state.Query = types.StringValue(first.Query)
	var form []dify.UserInputFormItem
	if params, err := r.data.params.get(ctx); err == nil {
		form = params.UserInputForm
	} else {
		tflog.Warn(ctx, "could not read the app's input form; inputs are read back as Dify stored them", map[string]any{"error": r.data.redact.clean(err.Error())})
	}
	state.Inputs = inputsFromHistory(first.Inputs, form)
	state.Files = filesFromHistory(first.MessageFiles)
	state.MessageID = types.StringValue(first.ID)
	state.Answer = types.StringValue(first.Answer)
	state.CreatedAt = types.Int64Value(first.CreatedAt)
	var d diag.Diagnostics
	state.AgentThoughts, d = thoughtsFromHistory(first.AgentThoughts)
	diags.Append(d...)
	state.Usage, d = types.ObjectValue(usageAttrTypes, map[string]attr.Value{
		"prompt_tokens":         types.Int64Value(first.MessageTokens),
		"prompt_unit_price":     types.StringNull(),
		"prompt_price":          types.StringNull(),
		"completion_tokens":     types.Int64Value(first.AnswerTokens),
		"completion_unit_price": types.StringNull(),
		"completion_price":      types.StringNull(),
		"total_tokens":          types.Int64Value(first.TotalTokens),
		"total_price":           types.StringPointerValue(first.TotalPrice),
		"currency":              types.StringPointerValue(first.Currency),
		"latency":               types.Float64Value(float64(first.ProviderResponseLatency)),
	})
	diags.Append(d...)
	return diags
}

func (r *conversationResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state conversationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	user := r.data.userOr(state.User.ValueString())
	if plan.Name.IsUnknown() {
		plan.Name = state.Name
	}
	if !plan.Name.IsNull() && !plan.Name.Equal(state.Name) {
		conv, err := r.data.client.RenameConversation(ctx, state.ID.ValueString(), dify.RenameRequest{Name: plan.Name.ValueString(), User: user})
		if err != nil {
			next := fmt.Sprintf("Renaming conversation %s to %q failed; the old name stays.", state.ID.ValueString(), plan.Name.ValueString())
			if dify.IsNotFound(err) {
				next += " The conversation no longer exists; run terraform apply again to create it anew."
			}
			r.data.redact.addError(&resp.Diagnostics, "Unable to rename conversation", err, next)
			return
		}
		r.data.conversations.Remember(user, *conv)
		plan.Name = types.StringValue(conv.Name)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setConversationIdentity(ctx, resp.Identity, user, state.ID.ValueString())...)
}

func (r *conversationResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state conversationModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	user := r.data.userOr(state.User.ValueString())
	err := r.data.client.DeleteConversation(ctx, state.ID.ValueString(), user)
	if err != nil && !dify.IsNotFound(err) { // 404: already gone (docs/api §8)
		r.data.redact.addError(&resp.Diagnostics, "Unable to delete conversation", err,
			fmt.Sprintf("Deleting conversation %s of user %q failed; it stays in state so the next apply can try again.", state.ID.ValueString(), user))
		return
	}
	r.data.conversations.Forget(user, state.ID.ValueString())
}

// ImportState accepts USER/CONVERSATION_ID or a bare CONVERSATION_ID (the
// provider's default user). The id is split at the last slash, so a user id
// may itself contain slashes; conversation ids (UUIDs) never do.
func (r *conversationResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	byID, ok := importIDGiven("dify_conversation", req, resp)
	if !ok {
		return
	}
	var user, id string
	if !byID {
		// import { identity = { user = ..., id = ... } } (Terraform >= 1.12)
		var ident conversationIdentity
		resp.Diagnostics.Append(req.Identity.Get(ctx, &ident)...)
		if resp.Diagnostics.HasError() {
			return
		}
		user, id = ident.User.ValueString(), ident.ID.ValueString()
		if user == "" || id == "" {
			resp.Diagnostics.AddError("Invalid import identity", "Both user and id must be set and non-empty in the identity of a dify_conversation.")
			return
		}
		if msg := checkUUID("conversation", id); msg != "" {
			resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid import identity", msg)
			return
		}
	} else {
		var err error
		user, id, err = parseConversationImportID(req.ID)
		if err != nil {
			resp.Diagnostics.AddError("Invalid import id", err.Error())
			return
		}
	}
	if user == "" && r.data != nil {
		user = r.data.user
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), id)...)
	if user != "" {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("user"), user)...)
	}
}

func parseConversationImportID(raw string) (user, id string, err error) {
	return parseUserScopedID(raw, "conversation", "USER/CONVERSATION_ID")
}

func thoughtsFromStream(ts []dify.AgentThoughtEvent) (types.List, diag.Diagnostics) {
	objType := types.ObjectType{AttrTypes: agentThoughtAttrTypes}
	vals := make([]attr.Value, 0, len(ts))
	var diags diag.Diagnostics
	for _, t := range ts {
		o, d := types.ObjectValue(agentThoughtAttrTypes, map[string]attr.Value{
			"id":          types.StringValue(t.ID),
			"position":    types.Int64Value(int64(t.Position)),
			"thought":     types.StringValue(deref(t.Thought)),
			"tool":        types.StringValue(deref(t.Tool)),
			"tool_input":  types.StringValue(deref(t.ToolInput)),
			"observation": types.StringValue(deref(t.Observation)),
		})
		diags.Append(d...)
		vals = append(vals, o)
	}
	l, d := types.ListValue(objType, vals)
	diags.Append(d...)
	return l, diags
}

func thoughtsFromHistory(ts []dify.AgentThoughtRecord) (types.List, diag.Diagnostics) {
	conv := make([]dify.AgentThoughtEvent, 0, len(ts))
	for _, t := range ts {
		conv = append(conv, dify.AgentThoughtEvent{ID: t.ID, Position: t.Position, Thought: &t.Thought,
			Tool: &t.Tool, ToolInput: &t.ToolInput, Observation: &t.Observation})
	}
	return thoughtsFromStream(conv)
}

func usageValue(u *dify.Usage) (types.Object, diag.Diagnostics) {
	if u == nil {
		return types.ObjectNull(usageAttrTypes), nil
	}
	return types.ObjectValue(usageAttrTypes, map[string]attr.Value{
		"prompt_tokens":         types.Int64Value(u.PromptTokens),
		"prompt_unit_price":     types.StringValue(u.PromptUnitPrice),
		"prompt_price":          types.StringValue(u.PromptPrice),
		"completion_tokens":     types.Int64Value(u.CompletionTokens),
		"completion_unit_price": types.StringValue(u.CompletionUnitPrice),
		"completion_price":      types.StringValue(u.CompletionPrice),
		"total_tokens":          types.Int64Value(u.TotalTokens),
		"total_price":           types.StringValue(u.TotalPrice),
		"currency":              types.StringValue(u.Currency),
		"latency":               types.Float64Value(u.Latency),
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
