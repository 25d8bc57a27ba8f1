package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ datasource.DataSourceWithConfigure = &annotationsDataSource{}

// NewAnnotationsDataSource is dify_annotations (GET /apps/annotations, docs/api §27.3).
func NewAnnotationsDataSource() datasource.DataSource { return &annotationsDataSource{} }

type annotationsDataSource struct{ dataSourceBase }

type annotationsModel struct {
	Keyword     types.String           `tfsdk:"keyword"`
	Annotations []annotationEntryModel `tfsdk:"annotations"`
}

type annotationEntryModel struct {
	ID        string `tfsdk:"id"`
	Question  string `tfsdk:"question"`
	Answer    string `tfsdk:"answer"`
	HitCount  int64  `tfsdk:"hit_count"`
	CreatedAt int64  `tfsdk:"created_at"`
}

func (d *annotationsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_annotations"
}

func (d *annotationsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The app's annotations (`GET /apps/annotations`, every page, newest first), optionally only those " +
			"whose question or answer contains a keyword.",
		Attributes: map[string]schema.Attribute{
			"keyword": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only annotations whose question or answer contains this text, compared case-insensitively. Defaults to all.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
			"annotations": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The annotations, newest first.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":         schema.StringAttribute{Computed: true, MarkdownDescription: "Annotation id."},
					"question":   schema.StringAttribute{Computed: true, MarkdownDescription: "The question."},
					"answer":     schema.StringAttribute{Computed: true, MarkdownDescription: "The answer."},
					"hit_count":  schema.Int64Attribute{Computed: true, MarkdownDescription: "How many chat queries it answered."},
					"created_at": schema.Int64Attribute{Computed: true, MarkdownDescription: "Creation time, Unix epoch seconds."},
				}},
			},
		},
	}
}

func (d *annotationsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !d.ready(&resp.Diagnostics) {
		return
	}
	var m annotationsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	all, err := listAnnotations(ctx, d.data.client, m.Keyword.ValueString(), 0)
	if err != nil {
		d.data.redact.addError(&resp.Diagnostics, "Unable to list annotations", err,
			fmt.Sprintf("GET /apps/annotations (keyword %q) failed.", m.Keyword.ValueString()))
		return
	}
	m.Annotations = make([]annotationEntryModel, 0, len(all))
	for _, a := range all {
		m.Annotations = append(m.Annotations, annotationEntryModel{ID: a.ID, Question: a.Question, Answer: a.Answer,
			HitCount: int64(a.HitCount), CreatedAt: a.CreatedAt})
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
