package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/difyops/terraform-provider-dify/dify"
)

var (
	_ resource.ResourceWithConfigure   = &messageFeedbackResource{}
	_ resource.ResourceWithImportState = &messageFeedbackResource{}
	_ resource.ResourceWithIdentity    = &messageFeedbackResource{}
	_ resource.ResourceWithModifyPlan  = &messageFeedbackResource{}
)

// NewMessageFeedbackResource is the dify_message_feedback resource.
func NewMessageFeedbackResource() resource.Resource { return &messageFeedbackResource{} }

type messageFeedbackResource struct{ data *providerData }

type messageFeedbackModel struct {
	ID        types.String `tfsdk:"id"`
	MessageID types.String `tfsdk:"message_id"`
	User      types.String `tfsdk:"user"`
	Rating    types.String `tfsdk:"rating"`
	Content   types.String `tfsdk:"content"`
}

type messageFeedbackIdentity struct {
	User      types.String `tfsdk:"user"`
	MessageID types.String `tfsdk:"message_id"`
}

func (r *messageFeedbackResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_message_feedback"
}

func (r *messageFeedbackResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "An end user's rating of one message (`POST /messages/{message_id}/feedbacks`), with an optional comment. " +
			"Changing `rating` or `content` rates the message again in place; destroy revokes the rating (`rating: null`).\n\n" +
			"**Refresh** reads the app's feedback list (`GET /app/feedbacks`) once per Terraform run and shares it between all " +
			"`dify_message_feedback` resources. A rating revoked or changed outside Terraform is detected: a revoked one is " +
			"removed from state (the next plan rates again), a changed one shows as an update. Only the end user's own feedback " +
			"is managed; a console account's feedback on the same message is a separate row that is never touched.\n\n" +
			"**Import** with `USER/MESSAGE_ID`, or with `identity = { user = ..., message_id = ... }` on Terraform 1.12 and later.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "`USER/MESSAGE_ID`, the import id."},
			"message_id": schema.StringAttribute{Required: true,
				MarkdownDescription: "The message to rate (a UUID), e.g. `dify_conversation.x.message_id`. It must belong to `user`. Changing it forces a new resource.",
				Validators:          []validator.String{isUUID("message")},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"user": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "End user who rates; only the message's own end user can. Defaults to the provider's `user`. " +
					"Changing it forces a new resource.",
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()}},
			"rating": schema.StringAttribute{Required: true,
				MarkdownDescription: "`like` or `dislike`.",
				Validators:          []validator.String{stringvalidator.OneOf(dify.RatingLike, dify.RatingDislike)}},
			"content": schema.StringAttribute{Optional: true,
				MarkdownDescription: "A comment stored with the rating. Defaults to none; Dify replaces the comment with every rating, " +
					"so removing it from the configuration clears it.",
			},
		},
	}
}

func (r *messageFeedbackResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"user":       identityschema.StringAttribute{RequiredForImport: true, Description: "End user who rated the message."},
		"message_id": identityschema.StringAttribute{RequiredForImport: true, Description: "The rated message's id."},
	}}
}

func (r *messageFeedbackResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configureData(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan fills the default user at creation, so the plan shows it.
func (r *messageFeedbackResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || !req.State.Raw.IsNull() || r.data == nil {
		return
	}
	var plan messageFeedbackModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || !plan.User.IsUnknown() {
		return
	}
	plan.User = types.StringValue(r.data.user)
	if !plan.MessageID.IsUnknown() {
		plan.ID = types.StringValue(r.data.user + "/" + plan.MessageID.ValueString())
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// rate sends the planned rating and comment, filling user and id.
func (r *messageFeedbackResource) rate(ctx context.Context, m *messageFeedbackModel) error {
	user := r.data.userOr(m.User.ValueString())
	m.User = types.StringValue(user)
	m.ID = types.StringValue(user + "/" + m.MessageID.ValueString())
	return r.data.client.SendFeedback(ctx, m.MessageID.ValueString(), dify.FeedbackRequest{
		Rating: m.Rating.ValueString(), Content: m.Content.ValueStringPointer(), User: user})
}

func setFeedbackIdentity(ctx context.Context, into *tfsdk.ResourceIdentity, m messageFeedbackModel) diag.Diagnostics {
	if into == nil {
		return nil
	}
	return into.Set(ctx, messageFeedbackIdentity{User: m.User, MessageID: m.MessageID})
}

func (r *messageFeedbackResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan messageFeedbackModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.rate(ctx, &plan); err != nil {
		next := fmt.Sprintf("Rating message %s as user %q failed; nothing was recorded.", plan.MessageID.ValueString(), plan.User.ValueString())
		if dify.IsNotFound(err) {
			next += " Dify finds no such message for this user: check message_id, and that user is the end user who sent the message."
		}
		r.data.redact.addError(&resp.Diagnostics, "Unable to rate message", err, next)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setFeedbackIdentity(ctx, resp.Identity, plan)...)
}

func (r *messageFeedbackResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state messageFeedbackModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	state.User = types.StringValue(r.data.userOr(state.User.ValueString()))
	state.ID = types.StringValue(state.User.ValueString() + "/" + state.MessageID.ValueString())
	resp.Diagnostics.Append(setFeedbackIdentity(ctx, resp.Identity, state)...)
	row, err := r.data.feedbacks.Lookup(ctx, state.MessageID.ValueString())
	if err != nil {
		r.data.redact.addError(&resp.Diagnostics, "Unable to read message feedback", err,
			fmt.Sprintf("Listing the app's feedback to check message %s failed; the state was left unchanged.", state.MessageID.ValueString()))
		return
	}
	if row == nil && state.Rating.IsNull() {
		resp.Diagnostics.AddError("Cannot import message feedback",
			fmt.Sprintf("Dify lists no end-user feedback on message %s (GET /app/feedbacks). Import USER/MESSAGE_ID of a message its end user "+
				"rated; feedback given in the Dify console is not an end user's and cannot be managed here.", state.MessageID.ValueString()))
		return
	}
	if row == nil {
		tflog.Warn(ctx, "the message has no end-user feedback in Dify any more; removing it from state",
			map[string]any{"message_id": state.MessageID.ValueString(), "user": state.User.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	state.Rating = types.StringValue(row.Rating)
	state.Content = types.StringPointerValue(row.Content)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *messageFeedbackResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan messageFeedbackModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.rate(ctx, &plan); err != nil {
		r.data.redact.addError(&resp.Diagnostics, "Unable to rate message", err,
			fmt.Sprintf("Rating message %s again failed; the earlier rating stays.", plan.MessageID.ValueString()))
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setFeedbackIdentity(ctx, resp.Identity, plan)...)
}

func (r *messageFeedbackResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state messageFeedbackModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	user := r.data.userOr(state.User.ValueString())
	err := r.data.client.SendFeedback(ctx, state.MessageID.ValueString(), dify.FeedbackRequest{User: user})
	// Already revoked (400 "rating cannot be None when feedback not exists")
	// or the message is gone with its conversation (404): nothing is left.
	if err != nil && !dify.IsFeedbackAlreadyRevoked(err) && !dify.IsNotFound(err) {
		r.data.redact.addError(&resp.Diagnostics, "Unable to revoke message feedback", err,
			fmt.Sprintf("Revoking the rating of message %s by user %q failed; it stays in state so the next apply can try again.", state.MessageID.ValueString(), user))
		return
	}
	r.data.feedbacks.Forget(state.MessageID.ValueString())
}

// ImportState accepts USER/MESSAGE_ID (split at the last slash, so a user id
// may contain slashes) or an identity.
func (r *messageFeedbackResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	byID, ok := importIDGiven("dify_message_feedback", req, resp)
	if !ok {
		return
	}
	var user, id string
	if !byID {
		var ident messageFeedbackIdentity
		resp.Diagnostics.Append(req.Identity.Get(ctx, &ident)...)
		if resp.Diagnostics.HasError() {
			return
		}
		user, id = ident.User.ValueString(), ident.MessageID.ValueString()
		if msg := checkUUID("message", id); user == "" || msg != "" {
			resp.Diagnostics.AddError("Invalid import identity", "The identity of a dify_message_feedback needs a non-empty user and the message id. "+msg)
			return
		}
	} else {
		var err error
		user, id, err = parseUserScopedID(req.ID, "message", "USER/MESSAGE_ID")
		if err == nil && user == "" {
			err = fmt.Errorf("import id %q has no user: feedback belongs to the end user who rated, so import USER/MESSAGE_ID, e.g. alice/%s", req.ID, exampleUUID)
		}
		if err != nil {
			resp.Diagnostics.AddError("Invalid import id", err.Error())
			return
		}
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("user"), user)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("message_id"), id)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), user+"/"+id)...)
}
