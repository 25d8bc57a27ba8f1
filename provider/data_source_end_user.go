package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ datasource.DataSourceWithConfigure = &endUserDataSource{}

// NewEndUserDataSource is dify_end_user (GET /end-users/{id}, docs/api §10).
func NewEndUserDataSource() datasource.DataSource { return &endUserDataSource{} }

type endUserDataSource struct{ dataSourceBase }

type endUserModel struct {
	ID             types.String `tfsdk:"id"`
	TenantID       types.String `tfsdk:"tenant_id"`
	AppID          types.String `tfsdk:"app_id"`
	Type           types.String `tfsdk:"type"`
	ExternalUserID types.String `tfsdk:"external_user_id"`
	Name           types.String `tfsdk:"name"`
	IsAnonymous    types.Bool   `tfsdk:"is_anonymous"`
	SessionID      types.String `tfsdk:"session_id"`
	CreatedAt      types.String `tfsdk:"created_at"`
	UpdatedAt      types.String `tfsdk:"updated_at"`
}

func (d *endUserDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_end_user"
}

func (d *endUserDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "An end user of the app by its Dify id (`GET /end-users/{id}`), for example the " +
			"`created_by` of a `dify_file`. Newer Dify servers only (the endpoint appeared around 1.13).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Required: true, MarkdownDescription: "The end user's Dify id (a UUID), not the `user` string you chose.",
				Validators: []validator.String{isUUID("end user")}},
			"tenant_id":        str("Workspace id."),
			"app_id":           str("App id (null for end users not bound to an app)."),
			"type":             str("End-user type; `service-api` for users created through this API."),
			"external_user_id": str("The `user` string that created this end user."),
			"name":             str("Display name (usually null)."),
			"is_anonymous":     schema.BoolAttribute{Computed: true, MarkdownDescription: "True when the calls that created it named no `user`."},
			"session_id":       str("Session id; defaults to `external_user_id`."),
			"created_at":       str("Creation time, ISO-8601."),
			"updated_at":       str("Last update time, ISO-8601."),
		},
	}
}

func (d *endUserDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !d.ready(&resp.Diagnostics) {
		return
	}
	var m endUserModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	u, err := d.data.client.GetEndUser(ctx, m.ID.ValueString())
	if err != nil {
		d.data.redact.addError(&resp.Diagnostics, "Unable to read end user", err,
			fmt.Sprintf("GET /end-users/%s failed. The id must be Dify's end-user id (e.g. dify_file.created_by), not the user string.", m.ID.ValueString()))
		return
	}
	m = endUserModel{
		ID:             m.ID, // keep the configured id; Dify echoes it
		TenantID:       types.StringValue(u.TenantID),
		AppID:          types.StringPointerValue(u.AppID),
		Type:           types.StringValue(u.Type),
		ExternalUserID: types.StringValue(u.ExternalUserID),
		Name:           types.StringPointerValue(u.Name),
		IsAnonymous:    types.BoolValue(u.IsAnonymous),
		SessionID:      types.StringValue(u.SessionID),
		CreatedAt:      types.StringValue(u.CreatedAt),
		UpdatedAt:      types.StringValue(u.UpdatedAt),
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
