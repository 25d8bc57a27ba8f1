package provider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ datasource.DataSourceWithConfigure = &appMetaDataSource{}

// NewAppMetaDataSource is dify_app_meta (GET /meta, docs/api §15).
func NewAppMetaDataSource() datasource.DataSource { return &appMetaDataSource{} }

type appMetaDataSource struct{ dataSourceBase }

var toolIconAttrTypes = map[string]attr.Type{
	"url":        types.StringType,
	"background": types.StringType,
	"content":    types.StringType,
}

func (d *appMetaDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_app_meta"
}

func (d *appMetaDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Tool icons of the app (`GET /meta`). The map is empty for New Agent apps. Takes no arguments.",
		Attributes: map[string]schema.Attribute{
			"tool_icons": schema.MapNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Icons keyed by tool name. An icon is either a URL (`url` set) or an emoji on a background colour (`content` and `background` set).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"url":        schema.StringAttribute{Computed: true, MarkdownDescription: "Icon URL, null for emoji icons."},
					"background": schema.StringAttribute{Computed: true, MarkdownDescription: "Background colour (`#RRGGBB`) of an emoji icon."},
					"content":    schema.StringAttribute{Computed: true, MarkdownDescription: "The emoji of an emoji icon."},
				}},
			},
		},
	}
}

func (d *appMetaDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !d.ready(&resp.Diagnostics) {
		return
	}
	meta, err := d.data.client.AppMeta(ctx)
	if err != nil {
		d.data.redact.addError(&resp.Diagnostics, "Unable to read app meta", err, "GET /meta failed.")
		return
	}
	icons := make(map[string]attr.Value, len(meta.ToolIcons))
	for name, raw := range meta.ToolIcons {
		icons[name] = toolIcon(raw)
	}
	m, diags := types.MapValue(types.ObjectType{AttrTypes: toolIconAttrTypes}, icons)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("tool_icons"), m)...)
}

// toolIcon decodes one icon: a URL string or {"background","content"} (docs/api §15).
func toolIcon(raw json.RawMessage) attr.Value {
	vals := map[string]attr.Value{"url": types.StringNull(), "background": types.StringNull(), "content": types.StringNull()}
	var url string
	var obj struct {
		Background *string `json:"background"`
		Content    *string `json:"content"`
	}
	switch {
	case json.Unmarshal(raw, &url) == nil:
		vals["url"] = types.StringValue(url)
	case json.Unmarshal(raw, &obj) == nil:
		vals["background"] = types.StringPointerValue(obj.Background)
		vals["content"] = types.StringPointerValue(obj.Content)
	}
	return types.ObjectValueMust(toolIconAttrTypes, vals)
}
