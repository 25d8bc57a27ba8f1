package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var (
	_ list.ListResource              = &annotationListResource{}
	_ list.ListResourceWithConfigure = &annotationListResource{}
)

// NewAnnotationListResource is the dify_annotation list resource
// (Terraform >= 1.14, `terraform query`).
func NewAnnotationListResource() list.ListResource { return &annotationListResource{} }

type annotationListResource struct{ data *providerData }

type annotationListModel struct {
	Keyword types.String `tfsdk:"keyword"`
}

func (l *annotationListResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_annotation"
}

func (l *annotationListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Finds the app's annotations (`GET /apps/annotations`, every page, newest first), optionally only " +
			"those whose question or answer contains a keyword. Each result carries the `dify_annotation` identity (`id`), " +
			"the question as its display name and, with `include_resource`, the annotation itself.",
		Attributes: map[string]schema.Attribute{
			"keyword": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only annotations whose question or answer contains this text, compared case-insensitively. Defaults to all.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
		},
	}
}

func (l *annotationListResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.data = configureData(req.ProviderData, &resp.Diagnostics)
}

func (l *annotationListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var cfg annotationListModel
	diags := req.Config.Get(ctx, &cfg)
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	if l.data == nil {
		var d diag.Diagnostics
		d.AddError("Provider not configured", "The dify provider was not configured before listing annotations. This is a bug in the provider; please report it.")
		stream.Results = list.ListResultsStreamDiagnostics(d)
		return
	}
	max := 0
	if req.Limit > 0 {
		max = int(req.Limit)
	}
	all, err := listAnnotations(ctx, l.data.client, cfg.Keyword.ValueString(), max)
	if err != nil {
		var d diag.Diagnostics
		l.data.redact.addError(&d, "Unable to list annotations", err, fmt.Sprintf("GET /apps/annotations (keyword %q) failed.", cfg.Keyword.ValueString()))
		stream.Results = list.ListResultsStreamDiagnostics(d)
		return
	}
	stream.Results = func(push func(list.ListResult) bool) {
		for i := range all {
			a := &all[i]
			res := req.NewListResult(ctx)
			res.DisplayName = a.Question
			res.Diagnostics.Append(setAnnotationIdentity(ctx, res.Identity, a.ID)...)
			if req.IncludeResource && !res.Diagnostics.HasError() {
				m := annotationState(a)
				res.Diagnostics.Append(res.Resource.Set(ctx, &m)...)
			}
			if !push(res) {
				return
			}
		}
	}
}
