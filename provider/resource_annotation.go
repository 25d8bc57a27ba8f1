package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/difyops/terraform-provider-dify/dify"
)

var (
	_ resource.ResourceWithConfigure   = &annotationResource{}
	_ resource.ResourceWithImportState = &annotationResource{}
	_ resource.ResourceWithIdentity    = &annotationResource{}
)

// NewAnnotationResource is the dify_annotation resource.
func NewAnnotationResource() resource.Resource { return &annotationResource{} }

type annotationResource struct{ data *providerData }

type annotationModel struct {
	ID        types.String `tfsdk:"id"`
	Question  types.String `tfsdk:"question"`
	Answer    types.String `tfsdk:"answer"`
	HitCount  types.Int64  `tfsdk:"hit_count"`
	CreatedAt types.Int64  `tfsdk:"created_at"`
}

type annotationIdentity struct {
	ID types.String `tfsdk:"id"`
}

func (r *annotationResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_annotation"
}

func (r *annotationResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A curated question and answer of the app (`/apps/annotations`). While annotation reply is on " +
			"(`dify_annotation_reply`), Dify answers a chat query that is close enough to `question` with `answer` directly, " +
			"without running the agent. Changing either text updates the annotation in place (`PUT`); destroy deletes it " +
			"with its hit history.\n\n" +
			"**Refresh** lists the app's annotations once per Terraform run (pages of 100) and shares that listing between all " +
			"`dify_annotation` resources, so N annotations cost a handful of requests, not N listings. An annotation edited " +
			"outside Terraform shows as an update; one deleted outside Terraform (confirmed by a search for its question) is " +
			"removed from state, so the next plan creates it again.\n\n" +
			"**Import** by id, or with `identity = { id = ... }` on Terraform 1.12 and later.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "The annotation id Dify assigned.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"question": schema.StringAttribute{Required: true,
				MarkdownDescription: "The question a chat query is matched against. Dify accepts any text, the empty string included."},
			"answer": schema.StringAttribute{Required: true,
				MarkdownDescription: "The answer Dify sends, verbatim, when the question matches."},
			"hit_count": schema.Int64Attribute{Computed: true,
				MarkdownDescription: "How many chat queries this annotation has answered. It grows outside Terraform, so it is read " +
					"on every refresh and is unknown in the plan of an update."},
			"created_at": schema.Int64Attribute{Computed: true, MarkdownDescription: "Creation time, Unix epoch seconds.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}},
		},
	}
}

func (r *annotationResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"id": identityschema.StringAttribute{RequiredForImport: true, Description: "The annotation id."},
	}}
}

func (r *annotationResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configureData(req.ProviderData, &resp.Diagnostics)
}

func setAnnotationIdentity(ctx context.Context, into *tfsdk.ResourceIdentity, id string) diag.Diagnostics {
	if into == nil {
		return nil
	}
	return into.Set(ctx, annotationIdentity{ID: types.StringValue(id)})
}

func annotationState(a *dify.Annotation) annotationModel {
	return annotationModel{
		ID: types.StringValue(a.ID), Question: types.StringValue(a.Question), Answer: types.StringValue(a.Answer),
		HitCount: types.Int64Value(int64(a.HitCount)), CreatedAt: types.Int64Value(a.CreatedAt),
	}
}

func (r *annotationResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan annotationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	a, err := r.data.client.CreateAnnotation(ctx, dify.AnnotationRequest{Question: plan.Question.ValueString(), Answer: plan.Answer.ValueString()})
	if err != nil {
		next := "Dify refused the annotation, so nothing was created."
		if !dify.ProvesNothingCreated(err) {
			next = "Dify did not confirm the annotation, and the request may have reached it: an annotation may exist that is not in Terraform state. " +
				"Creating is never re-sent automatically (a retry could add it twice). List the app's annotations with the dify_annotations data source; " +
				"import the one you want to keep with `terraform import dify_annotation.NAME ANNOTATION_ID`, or delete it in Dify, before applying again."
		}
		r.data.redact.addError(&resp.Diagnostics, "Unable to create annotation", err, next)
		return
	}
	r.data.annotations.Remember(*a)
	state := annotationState(a)
	// State must equal the plan: keep the configured texts (Dify stores
	// them as sent).
	state.Question, state.Answer = plan.Question, plan.Answer
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	resp.Diagnostics.Append(setAnnotationIdentity(ctx, resp.Identity, a.ID)...)
}

func (r *annotationResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state annotationModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	resp.Diagnostics.Append(setAnnotationIdentity(ctx, resp.Identity, id)...)
	a, err := r.data.annotations.Lookup(ctx, id)
	if err == nil && a == nil {
		a, err = r.data.annotations.Confirm(ctx, id, state.Question.ValueString())
	}
	if err != nil {
		r.data.redact.addError(&resp.Diagnostics, "Unable to read annotation", err,
			fmt.Sprintf("Listing the app's annotations to find %s failed; the state was left unchanged.", id))
		return
	}
	if a == nil && state.Question.IsNull() {
		resp.Diagnostics.AddError("Cannot import annotation",
			fmt.Sprintf("The app has no annotation %s. Annotations belong to the app the API key is for; `dify_annotations` lists them with their ids.", id))
		return
	}
	if a == nil {
		tflog.Warn(ctx, "annotation no longer exists in Dify; removing it from state", map[string]any{"id": id})
		resp.State.RemoveResource(ctx)
		return
	}
	next := annotationState(a)
	resp.Diagnostics.Append(resp.State.Set(ctx, &next)...)
}

func (r *annotationResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state annotationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	a, err := r.data.client.UpdateAnnotation(ctx, id, dify.AnnotationRequest{Question: plan.Question.ValueString(), Answer: plan.Answer.ValueString()})
	if err != nil {
		next := fmt.Sprintf("Updating annotation %s failed; it keeps its earlier texts.", id)
		if dify.IsNotFound(err) {
			next += " It no longer exists in Dify; run terraform apply again to create it anew."
		}
		r.data.redact.addError(&resp.Diagnostics, "Unable to update annotation", err, next)
		return
	}
	r.data.annotations.Remember(*a)
	next := annotationState(a)
	next.Question, next.Answer = plan.Question, plan.Answer
	resp.Diagnostics.Append(resp.State.Set(ctx, &next)...)
	resp.Diagnostics.Append(setAnnotationIdentity(ctx, resp.Identity, id)...)
}

func (r *annotationResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state annotationModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	if err := r.data.client.DeleteAnnotation(ctx, id); err != nil && !dify.IsNotFound(err) {
		r.data.redact.addError(&resp.Diagnostics, "Unable to delete annotation", err,
			fmt.Sprintf("Deleting annotation %s failed; it stays in state so the next apply can try again.", id))
		return
	}
	r.data.annotations.Forget(id)
}

func (r *annotationResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	byID, ok := importIDGiven("dify_annotation", req, resp)
	if !ok {
		return
	}
	id := req.ID
	if !byID {
		var ident annotationIdentity
		resp.Diagnostics.Append(req.Identity.Get(ctx, &ident)...)
		id = ident.ID.ValueString()
	}
	if msg := checkUUID("annotation", id); msg != "" {
		resp.Diagnostics.AddError("Invalid import id", msg+" `dify_annotations` lists the app's annotations with their ids.")
		return
	}
	resource.ImportStatePassthroughWithIdentity(ctx, path.Root("id"), path.Root("id"), req, resp)
}
