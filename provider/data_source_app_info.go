package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ datasource.DataSourceWithConfigure = &appInfoDataSource{}

// NewAppInfoDataSource is dify_app_info (GET /info, docs/api §13).
func NewAppInfoDataSource() datasource.DataSource { return &appInfoDataSource{} }

type appInfoDataSource struct{ dataSourceBase }

type appInfoModel struct {
	Name        types.String `tfsdk:"name"`
	Description types.String `tfsdk:"description"`
	Tags        types.List   `tfsdk:"tags"`
	Mode        types.String `tfsdk:"mode"`
	AuthorName  types.String `tfsdk:"author_name"`
}

func (d *appInfoDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_app_info"
}

func (d *appInfoDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Basic information about the app the provider's API key belongs to (`GET /info`). Takes no arguments.",
		Attributes: map[string]schema.Attribute{
			"name":        schema.StringAttribute{Computed: true, MarkdownDescription: "App name."},
			"description": schema.StringAttribute{Computed: true, MarkdownDescription: "App description."},
			"tags":        schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Tag names (empty on servers that predate tags)."},
			"mode": schema.StringAttribute{Computed: true, MarkdownDescription: "App mode: `agent` for a New Agent app, `agent-chat` for a legacy Agent, " +
				"or another Dify mode (`chat`, `advanced-chat`, `completion`, `workflow`). Empty on very old servers."},
			"author_name": schema.StringAttribute{Computed: true, MarkdownDescription: "Name of the app's author."},
		},
	}
}

func (d *appInfoDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !d.ready(&resp.Diagnostics) {
		return
	}
	info, err := d.data.client.AppInfo(ctx)
	if err != nil {
		d.data.redact.addError(&resp.Diagnostics, "Unable to read app info", err, "GET /info failed.")
		return
	}
	m := appInfoModel{
		Name:        types.StringValue(info.Name),
		Description: types.StringValue(info.Description),
		Tags:        stringList(info.Tags),
		Mode:        types.StringValue(info.Mode),
		AuthorName:  types.StringValue(info.AuthorName),
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
