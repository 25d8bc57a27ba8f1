package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

var _ datasource.DataSourceWithConfigure = &conversationsDataSource{}

// NewConversationsDataSource is dify_conversations (GET /conversations, docs/api §5).
func NewConversationsDataSource() datasource.DataSource { return &conversationsDataSource{} }

type conversationsDataSource struct{ dataSourceBase }

type conversationsModel struct {
	User          types.String             `tfsdk:"user"`
	SortBy        types.String             `tfsdk:"sort_by"`
	MaxResults    types.Int64              `tfsdk:"max_results"`
	Conversations []conversationEntryModel `tfsdk:"conversations"`
}

type conversationEntryModel struct {
	ID           string    `tfsdk:"id"`
	Name         string    `tfsdk:"name"`
	Inputs       types.Map `tfsdk:"inputs"`
	Status       string    `tfsdk:"status"`
	Introduction *string   `tfsdk:"introduction"`
	CreatedAt    int64     `tfsdk:"created_at"`
	UpdatedAt    int64     `tfsdk:"updated_at"`
}

const defaultMaxConversations = 1000

func (d *conversationsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_conversations"
}

func (d *conversationsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Conversations of one end user (`GET /conversations`), read page by page.",
		Attributes: map[string]schema.Attribute{
			"user": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "End user whose conversations to list. Defaults to the provider's `user` (`" + EnvUser + "`, then `" + DefaultUser + "`).",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
			"sort_by": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Order: `created_at`, `-created_at`, `updated_at` or `-updated_at` (a leading `-` means newest first). Defaults to `-updated_at`, Dify's own default.",
				Validators: []validator.String{stringvalidator.OneOf(dify.SortCreatedAt, dify.SortCreatedAtDesc,
					dify.SortUpdatedAt, dify.SortUpdatedAtDesc)}},
			"max_results": schema.Int64Attribute{Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("Stop after this many conversations. Defaults to `%d`.", defaultMaxConversations),
				Validators:          []validator.Int64{int64validator.AtLeast(1)}},
			"conversations": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The conversations in the requested order.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":           schema.StringAttribute{Computed: true, MarkdownDescription: "Conversation id."},
					"name":         schema.StringAttribute{Computed: true, MarkdownDescription: "Conversation name."},
					"inputs":       schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Inputs of the conversation; values that are not strings are given as JSON text."},
					"status":       schema.StringAttribute{Computed: true, MarkdownDescription: "Status, `normal` for live conversations."},
					"introduction": schema.StringAttribute{Computed: true, MarkdownDescription: "Introduction text (null when none)."},
					"created_at":   schema.Int64Attribute{Computed: true, MarkdownDescription: "Creation time, Unix epoch seconds."},
					"updated_at":   schema.Int64Attribute{Computed: true, MarkdownDescription: "Last update time, Unix epoch seconds."},
				}},
			},
		},
	}
}

func (d *conversationsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !d.ready(&resp.Diagnostics) {
		return
	}
	var m conversationsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	user := d.data.userOr(m.User.ValueString())
	sortBy := m.SortBy.ValueString()
	if sortBy == "" {
		sortBy = dify.SortUpdatedAtDesc
	}
	maxResults := int64(defaultMaxConversations)
	if !m.MaxResults.IsNull() {
		maxResults = m.MaxResults.ValueInt64()
	}
	m.Conversations = []conversationEntryModel{}
	p := dify.ListConversationsParams{User: user, Limit: int(min(maxResults, listingPageSize)), SortBy: sortBy}
	for page, err := range dify.ConversationPages(ctx, d.data.client, &p, 0) {
		if err != nil {
			d.data.redact.addError(&resp.Diagnostics, "Unable to list conversations", err,
				fmt.Sprintf("GET /conversations for user %q failed.", user))
			return
		}
		for _, c := range page.Data {
			m.Conversations = append(m.Conversations, conversationEntryModel{
				ID: c.ID, Name: c.Name, Inputs: stringMap(c.Inputs), Status: c.Status,
				Introduction: c.Introduction, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
			})
		}
		left := maxResults - int64(len(m.Conversations))
		if left <= 0 {
			break
		}
		p.Limit = int(min(left, listingPageSize)) // ask only for what is still wanted
	}
	m.User = types.StringValue(user)
	m.SortBy = types.StringValue(sortBy)
	m.MaxResults = types.Int64Value(maxResults)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
