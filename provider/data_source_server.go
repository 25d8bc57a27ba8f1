package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ datasource.DataSourceWithConfigure = &serverDataSource{}

// NewServerDataSource is dify_server (GET /, docs/api §1.1).
func NewServerDataSource() datasource.DataSource { return &serverDataSource{} }

type serverDataSource struct{ dataSourceBase }

type serverModel struct {
	Welcome       types.String `tfsdk:"welcome"`
	APIVersion    types.String `tfsdk:"api_version"`
	ServerVersion types.String `tfsdk:"server_version"`
}

func (d *serverDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_server"
}

func (d *serverDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The Dify server's version (`GET /`). This call is not authenticated; use it to " +
			"check which Dify release serves `base_url`. Takes no arguments.",
		Attributes: map[string]schema.Attribute{
			"welcome":        schema.StringAttribute{Computed: true, MarkdownDescription: "Welcome text, `Dify OpenAPI` on real servers."},
			"api_version":    schema.StringAttribute{Computed: true, MarkdownDescription: "Service API version, e.g. `v1`."},
			"server_version": schema.StringAttribute{Computed: true, MarkdownDescription: "Dify release, e.g. `1.17.1`."},
		},
	}
}

func (d *serverDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !d.ready(&resp.Diagnostics) {
		return
	}
	info, err := d.data.client.ServerInfo(ctx)
	if err != nil {
		d.data.redact.addError(&resp.Diagnostics, "Unable to read server version", err, "GET / failed.")
		return
	}
	m := serverModel{
		Welcome:       types.StringValue(info.Welcome),
		APIVersion:    types.StringValue(info.APIVersion),
		ServerVersion: types.StringValue(info.ServerVersion),
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
