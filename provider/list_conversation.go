package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

var (
	_ list.ListResource              = &conversationListResource{}
	_ list.ListResourceWithConfigure = &conversationListResource{}
)

// NewConversationListResource is the dify_conversation list resource
// (Terraform >= 1.14, `terraform query`).
func NewConversationListResource() list.ListResource { return &conversationListResource{} }

type conversationListResource struct{ data *providerData }

type conversationListModel struct {
	User         types.String `tfsdk:"user"`
	NameContains types.String `tfsdk:"name_contains"`
}

// maxListingPages bounds one listing at 100,000 conversations, so a broken
// cursor can never loop for ever.
const maxListingPages = 1000

func (l *conversationListResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_conversation"
}

func (l *conversationListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Finds the conversations of one end user (`GET /conversations`, all pages, newest first), " +
			"optionally only those whose name contains a text. Each result carries the `dify_conversation` identity " +
			"(`user`, `id`); with `include_resource = true` (implied by `terraform query -generate-config-out`) it also " +
			"carries the resource as an import would read it, so the generated configuration plans with no changes.",
		Attributes: map[string]schema.Attribute{
			"user": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "End user whose conversations are listed (Dify scopes conversations to an end user). " +
					"Defaults to the provider's `user`.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"name_contains": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Only conversations whose name contains this text, compared case-insensitively. Defaults to all.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
		},
	}
}

func (l *conversationListResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.data = configureData(req.ProviderData, &resp.Diagnostics)
}

func (l *conversationListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var cfg conversationListModel
	diags := req.Config.Get(ctx, &cfg)
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	if l.data == nil {
		var d diag.Diagnostics
		d.AddError("Provider not configured", "The dify provider was not configured before listing conversations. This is a bug in the provider; please report it.")
		stream.Results = list.ListResultsStreamDiagnostics(d)
		return
	}
	user := l.data.userOr(cfg.User.ValueString())
	filter := strings.ToLower(cfg.NameContains.ValueString())
	reader := &conversationResource{data: l.data}

	stream.Results = func(push func(list.ListResult) bool) {
		var sent int64
		p := dify.ListConversationsParams{User: user, Limit: listingPageSize, SortBy: dify.SortCreatedAtDesc}
		for page, err := range dify.ConversationPages(ctx, l.data.client, &p, maxListingPages) {
			if err != nil {
				var d diag.Diagnostics
				l.data.redact.addError(&d, "Unable to list conversations", err,
					fmt.Sprintf("Listing the conversations of user %q failed after %d result(s).", user, sent))
				push(list.ListResult{Diagnostics: d})
				return
			}
			for _, c := range page.Data {
				if filter != "" && !strings.Contains(strings.ToLower(c.Name), filter) {
					continue
				}
				if req.Limit > 0 && sent >= req.Limit {
					return
				}
				l.data.conversations.Remember(user, c)
				if !push(l.result(ctx, req, reader, user, c)) {
					return
				}
				sent++
			}
		}
	}
}

// result builds one list result: the identity always, the resource (read
// as an import reads it) when Terraform asked for it.
func (l *conversationListResource) result(ctx context.Context, req list.ListRequest, reader *conversationResource, user string, c dify.Conversation) list.ListResult {
	res := req.NewListResult(ctx)
	res.DisplayName = c.Name
	if res.DisplayName == "" {
		res.DisplayName = c.ID
	}
	res.Diagnostics.Append(setConversationIdentity(ctx, res.Identity, user, c.ID)...)
	if !req.IncludeResource || res.Diagnostics.HasError() {
		return res
	}
	m := conversationModel{
		ID:               types.StringValue(c.ID),
		User:             types.StringValue(user),
		Name:             types.StringValue(c.Name),
		AutoGenerateName: types.BoolNull(),
		Timeouts:         timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"create": types.StringType})},
	}
	res.Diagnostics.Append(reader.readFirstMessage(ctx, &m, user)...)
	if res.Diagnostics.HasError() {
		return res
	}
	res.Diagnostics.Append(res.Resource.Set(ctx, &m)...)
	return res
}
