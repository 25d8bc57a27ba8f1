package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ datasource.DataSourceWithConfigure = &appSiteDataSource{}

// NewAppSiteDataSource is dify_app_site (GET /site, docs/api §16).
func NewAppSiteDataSource() datasource.DataSource { return &appSiteDataSource{} }

type appSiteDataSource struct{ dataSourceBase }

type appSiteModel struct {
	Title                  types.String `tfsdk:"title"`
	Description            types.String `tfsdk:"description"`
	Icon                   types.String `tfsdk:"icon"`
	IconType               types.String `tfsdk:"icon_type"`
	IconBackground         types.String `tfsdk:"icon_background"`
	IconURL                types.String `tfsdk:"icon_url"`
	ChatColorTheme         types.String `tfsdk:"chat_color_theme"`
	ChatColorThemeInverted types.Bool   `tfsdk:"chat_color_theme_inverted"`
	Copyright              types.String `tfsdk:"copyright"`
	PrivacyPolicy          types.String `tfsdk:"privacy_policy"`
	CustomDisclaimer       types.String `tfsdk:"custom_disclaimer"`
	InputPlaceholder       types.String `tfsdk:"input_placeholder"`
	DefaultLanguage        types.String `tfsdk:"default_language"`
	ShowWorkflowSteps      types.Bool   `tfsdk:"show_workflow_steps"`
	UseIconAsAnswerIcon    types.Bool   `tfsdk:"use_icon_as_answer_icon"`
}

func (d *appSiteDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_app_site"
}

func (d *appSiteDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	boolean := func(desc string) schema.BoolAttribute {
		return schema.BoolAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The app's WebApp settings (`GET /site`). Takes no arguments. String settings Dify leaves unset are null.",
		Attributes: map[string]schema.Attribute{
			"title":                     str("WebApp title."),
			"description":               str("WebApp description."),
			"icon":                      str("Icon: an emoji when `icon_type` is `emoji`, a file id when `image`."),
			"icon_type":                 str("`emoji` or `image`."),
			"icon_background":           str("Icon background colour (`#RRGGBB`)."),
			"icon_url":                  str("Signed icon URL when `icon_type` is `image`, otherwise null."),
			"chat_color_theme":          str("Chat colour theme (`#RRGGBB`)."),
			"chat_color_theme_inverted": boolean("Whether the chat colour theme is inverted."),
			"copyright":                 str("Copyright notice."),
			"privacy_policy":            str("Privacy policy URL."),
			"custom_disclaimer":         str("Custom disclaimer text."),
			"input_placeholder":         str("Placeholder of the chat input (newer servers; null when unset)."),
			"default_language":          str("Default language, e.g. `en-US`."),
			"show_workflow_steps":       boolean("Whether the WebApp shows workflow steps."),
			"use_icon_as_answer_icon":   boolean("Whether the app icon is shown next to answers."),
		},
	}
}

func (d *appSiteDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !d.ready(&resp.Diagnostics) {
		return
	}
	s, err := d.data.client.AppSite(ctx)
	if err != nil {
		d.data.redact.addError(&resp.Diagnostics, "Unable to read WebApp settings", err,
			"GET /site failed. Dify answers 403 when the app has no WebApp site.")
		return
	}
	m := appSiteModel{
		Title:                  types.StringValue(s.Title),
		Description:            types.StringPointerValue(s.Description),
		Icon:                   types.StringPointerValue(s.Icon),
		IconType:               types.StringPointerValue(s.IconType),
		IconBackground:         types.StringPointerValue(s.IconBackground),
		IconURL:                types.StringPointerValue(s.IconURL),
		ChatColorTheme:         types.StringPointerValue(s.ChatColorTheme),
		ChatColorThemeInverted: types.BoolValue(s.ChatColorThemeInverted),
		Copyright:              types.StringPointerValue(s.Copyright),
		PrivacyPolicy:          types.StringPointerValue(s.PrivacyPolicy),
		CustomDisclaimer:       types.StringPointerValue(s.CustomDisclaimer),
		InputPlaceholder:       types.StringPointerValue(s.InputPlaceholder),
		DefaultLanguage:        types.StringValue(s.DefaultLanguage),
		ShowWorkflowSteps:      types.BoolValue(s.ShowWorkflowSteps),
		UseIconAsAnswerIcon:    types.BoolValue(s.UseIconAsAnswerIcon),
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
