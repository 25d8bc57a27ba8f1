package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

var (
	_ resource.ResourceWithConfigure   = &annotationReplyResource{}
	_ resource.ResourceWithImportState = &annotationReplyResource{}
)

// annotationReplyID is the id of the app's one annotation-reply setting:
// one API key selects one app, so there is nothing else to name.
const annotationReplyID = "annotation-reply"

// DefaultAnnotationReplyTimeout bounds the wait for an enable or disable
// job. Enabling embeds every annotation, which takes a while for many.
const DefaultAnnotationReplyTimeout = 10 * time.Minute

// annotationReplyPollInterval is how often a job's status is read (docs/api
// §28.3 suggests every 1–2 s).
var annotationReplyPollInterval = time.Second

// NewAnnotationReplyResource is the dify_annotation_reply resource.
func NewAnnotationReplyResource() resource.Resource { return &annotationReplyResource{} }

type annotationReplyResource struct{ data *providerData }

type annotationReplyModel struct {
	ID                    types.String   `tfsdk:"id"`
	ScoreThreshold        types.Float64  `tfsdk:"score_threshold"`
	EmbeddingProviderName types.String   `tfsdk:"embedding_provider_name"`
	EmbeddingModelName    types.String   `tfsdk:"embedding_model_name"`
	JobID                 types.String   `tfsdk:"job_id"`
	Timeouts              timeouts.Value `tfsdk:"timeouts"`
}

func (r *annotationReplyResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_annotation_reply"
}

func (r *annotationReplyResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The app's annotation reply switch: while it exists, Dify answers a chat query from the closest " +
			"`dify_annotation` (when the similarity reaches `score_threshold`) instead of running the agent. Declare at most one per app.\n\n" +
			"Create and update start Dify's enable job (`POST /apps/annotation-reply/enable`), which embeds every annotation " +
			"question with the given embedding model, and wait until the job reports `completed`; a job that ends in `error` " +
			"fails the apply with the job's message, and a job still unfinished when the timeout passes fails it too (Dify " +
			"without a running worker leaves jobs waiting for ever). Destroy starts the disable job and waits for it; " +
			"annotations stay.\n\n" +
			"**Refresh.** Dify's Service API has no endpoint that returns the setting (`/parameters` does not reflect it), " +
			"so refresh keeps the recorded values and a change made in the console is not detected. " +
			"**Import** with the id `" + annotationReplyID + "`: the values cannot be read back, so the first apply after an " +
			"import runs the enable job with the configured values.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Always `" + annotationReplyID + "`: an API key selects one app, which has one setting.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"score_threshold": schema.Float64Attribute{Required: true,
				MarkdownDescription: "Minimum similarity, from 0 to 1, for an annotation to answer a query. Dify treats `0` as `1` " +
					"(exact matches only).",
				Validators: []validator.Float64{float64validator.Between(0, 1)}},
			"embedding_provider_name": schema.StringAttribute{Required: true,
				MarkdownDescription: "Provider of the embedding model that indexes the questions, as the workspace names it " +
					"(for example `openai`, or `langgenius/openai/openai` on plugin-based Dify versions).",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
			"embedding_model_name": schema.StringAttribute{Required: true,
				MarkdownDescription: "The embedding model, e.g. `text-embedding-3-small`.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
			"job_id": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Id of the last enable job the provider ran."},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true,
				CreateDescription: "How long to wait for the enable job, as a Go duration. Defaults to `\"10m\"`.",
				UpdateDescription: "How long to wait for the enable job after a change. Defaults to `\"10m\"`.",
				DeleteDescription: "How long to wait for the disable job. Defaults to `\"10m\"`."}),
		},
	}
}

func (r *annotationReplyResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configureData(req.ProviderData, &resp.Diagnostics)
}

// runJob starts an enable or disable job and waits for its end within limit.
func (r *annotationReplyResource) runJob(ctx context.Context, action string, m annotationReplyModel, limit time.Duration) (string, diag.Diagnostics) {
	var diags diag.Diagnostics
	summary := fmt.Sprintf("Unable to %s annotation reply", action)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	job, err := r.data.client.StartAnnotationReply(ctx, action, dify.AnnotationReplyRequest{
		ScoreThreshold:        m.ScoreThreshold.ValueFloat64(),
		EmbeddingProviderName: m.EmbeddingProviderName.ValueString(),
		EmbeddingModelName:    m.EmbeddingModelName.ValueString(),
	})
	if err != nil {
		r.data.redact.addError(&diags, summary, err, "Dify did not start the job.")
		return "", diags
	}
	if job.Done() && job.JobStatus == dify.JobStatusCompleted {
		return job.JobID, diags
	}
	_, err = r.data.client.WaitAnnotationReply(ctx, action, job.JobID, annotationReplyPollInterval)
	var jobErr *dify.AnnotationReplyJobError
	switch {
	case err == nil:
		return job.JobID, diags
	case errors.As(err, &jobErr):
		diags.AddError(summary, r.data.redact.clean(fmt.Sprintf(
			"Dify's %s job %s ended in error: %s\n\nFor enable, this usually means the embedding model (%q of %q) is not usable in the workspace.",
			action, job.JobID, jobErr.Message, m.EmbeddingModelName.ValueString(), m.EmbeddingProviderName.ValueString())))
	case errors.Is(err, context.DeadlineExceeded):
		diags.AddError(summary, fmt.Sprintf(
			"Dify's %s job %s did not finish within %s. A Dify whose background worker is not running leaves jobs waiting for ever; "+
				"check the worker (queue \"dataset\"), or raise the timeout with timeouts { ... }.", action, job.JobID, limit))
	default:
		r.data.redact.addError(&diags, summary, err, fmt.Sprintf("Following %s job %s failed.", action, job.JobID))
	}
	return "", diags
}

func (r *annotationReplyResource) apply(ctx context.Context, plan annotationReplyModel, limit time.Duration, state *tfsdk.State) diag.Diagnostics {
	jobID, diags := r.runJob(ctx, dify.AnnotationReplyEnable, plan, limit)
	if diags.HasError() {
		return diags
	}
	plan.ID = types.StringValue(annotationReplyID)
	plan.JobID = types.StringValue(jobID)
	diags.Append(state.Set(ctx, &plan)...)
	return diags
}

func (r *annotationReplyResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan annotationReplyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	limit, d := plan.Timeouts.Create(ctx, DefaultAnnotationReplyTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.apply(ctx, plan, limit, &resp.State)...)
}

func (r *annotationReplyResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan annotationReplyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	limit, d := plan.Timeouts.Update(ctx, DefaultAnnotationReplyTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.apply(ctx, plan, limit, &resp.State)...)
}

// Read keeps the recorded values: the Service API does not expose the
// setting (docs/api §28.4).
func (r *annotationReplyResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state annotationReplyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	state.ID = types.StringValue(annotationReplyID)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *annotationReplyResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state annotationReplyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	limit, d := state.Timeouts.Delete(ctx, DefaultAnnotationReplyTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Dify requires the three fields for disable too and ignores them; an
	// imported, never-applied state has none, so send placeholders.
	if state.EmbeddingProviderName.IsNull() || state.EmbeddingModelName.IsNull() || state.ScoreThreshold.IsNull() {
		state.ScoreThreshold = types.Float64Value(1)
		state.EmbeddingProviderName = types.StringValue("unused")
		state.EmbeddingModelName = types.StringValue("unused")
	}
	_, diags := r.runJob(ctx, dify.AnnotationReplyDisable, state, limit)
	resp.Diagnostics.Append(diags...)
}

func (r *annotationReplyResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if _, ok := importIDGiven("dify_annotation_reply", req, resp); !ok {
		return
	}
	if req.ID != annotationReplyID {
		resp.Diagnostics.AddError("Invalid import id",
			fmt.Sprintf("Import the annotation reply setting with the id %q (the API key selects the app); got %q.", annotationReplyID, req.ID))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), annotationReplyID)...)
}
