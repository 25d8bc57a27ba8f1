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

var _ datasource.DataSourceWithConfigure = &appFeedbacksDataSource{}

// NewAppFeedbacksDataSource is dify_app_feedbacks (GET /app/feedbacks, docs/api §26).
func NewAppFeedbacksDataSource() datasource.DataSource { return &appFeedbacksDataSource{} }

type appFeedbacksDataSource struct{ dataSourceBase }

type appFeedbacksModel struct {
	Rating     types.String         `tfsdk:"rating"`
	FromSource types.String         `tfsdk:"from_source"`
	MaxResults types.Int64          `tfsdk:"max_results"`
	Feedbacks  []appFeedbackEntries `tfsdk:"feedbacks"`
}

type appFeedbackEntries struct {
	ID             string  `tfsdk:"id"`
	ConversationID string  `tfsdk:"conversation_id"`
	MessageID      string  `tfsdk:"message_id"`
	Rating         string  `tfsdk:"rating"`
	Content        *string `tfsdk:"content"`
	FromSource     string  `tfsdk:"from_source"`
	FromEndUserID  *string `tfsdk:"from_end_user_id"`
	FromAccountID  *string `tfsdk:"from_account_id"`
	CreatedAt      string  `tfsdk:"created_at"`
	UpdatedAt      string  `tfsdk:"updated_at"`
}

const defaultMaxFeedbacks = 10000

func (d *appFeedbacksDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_app_feedbacks"
}

func (d *appFeedbacksDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Every feedback of the app (`GET /app/feedbacks`, all pages, newest first): the ratings end users gave " +
			"through the Service API or the WebApp, and those console accounts gave, for every conversation. Use it to review " +
			"what users disliked, or to check `dify_message_feedback` from outside.",
		Attributes: map[string]schema.Attribute{
			"rating": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only feedback with this rating, `like` or `dislike`. Defaults to both.",
				Validators:          []validator.String{stringvalidator.OneOf(dify.RatingLike, dify.RatingDislike)}},
			"from_source": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only feedback from `user` (end users) or `admin` (console accounts). Defaults to both.",
				Validators:          []validator.String{stringvalidator.OneOf(dify.FeedbackFromUser, dify.FeedbackFromAdmin)}},
			"max_results": schema.Int64Attribute{Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("Stop after this many matching rows. Defaults to `%d`.", defaultMaxFeedbacks),
				Validators:          []validator.Int64{int64validator.AtLeast(1)}},
			"feedbacks": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The feedback rows, newest first.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":               schema.StringAttribute{Computed: true, MarkdownDescription: "Feedback id."},
					"conversation_id":  schema.StringAttribute{Computed: true, MarkdownDescription: "Conversation of the rated message."},
					"message_id":       schema.StringAttribute{Computed: true, MarkdownDescription: "The rated message."},
					"rating":           schema.StringAttribute{Computed: true, MarkdownDescription: "`like` or `dislike`."},
					"content":          schema.StringAttribute{Computed: true, MarkdownDescription: "The comment (null when none)."},
					"from_source":      schema.StringAttribute{Computed: true, MarkdownDescription: "`user` (an end user) or `admin` (a console account)."},
					"from_end_user_id": schema.StringAttribute{Computed: true, MarkdownDescription: "Dify's id of the end user who rated (null for console feedback); `dify_end_user` reads it."},
					"from_account_id":  schema.StringAttribute{Computed: true, MarkdownDescription: "The console account that rated (null for end-user feedback)."},
					"created_at":       schema.StringAttribute{Computed: true, MarkdownDescription: "Creation time as Dify sends it: ISO 8601 in UTC without a zone suffix."},
					"updated_at":       schema.StringAttribute{Computed: true, MarkdownDescription: "Last update time, same format."},
				}},
			},
		},
	}
}

func (d *appFeedbacksDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !d.ready(&resp.Diagnostics) {
		return
	}
	var m appFeedbacksModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	maxResults := int64(defaultMaxFeedbacks)
	if !m.MaxResults.IsNull() {
		maxResults = m.MaxResults.ValueInt64()
	}
	m.Feedbacks = []appFeedbackEntries{}
	page := 0
	for p, err := range dify.AppFeedbackPages(ctx, d.data.client, dify.ListAppFeedbacksParams{Limit: feedbackPageSize}, maxFeedbackPages) {
		page++
		if err != nil {
			d.data.redact.addError(&resp.Diagnostics, "Unable to list the app's feedback", err,
				fmt.Sprintf("GET /app/feedbacks page %d failed.", page))
			return
		}
		for _, f := range p.Data {
			if (!m.Rating.IsNull() && f.Rating != m.Rating.ValueString()) ||
				(!m.FromSource.IsNull() && f.FromSource != m.FromSource.ValueString()) {
				continue
			}
			if int64(len(m.Feedbacks)) == maxResults {
				break
			}
			m.Feedbacks = append(m.Feedbacks, appFeedbackEntries{
				ID: f.ID, ConversationID: f.ConversationID, MessageID: f.MessageID, Rating: f.Rating, Content: f.Content,
				FromSource: f.FromSource, FromEndUserID: f.FromEndUserID, FromAccountID: f.FromAccountID,
				CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt,
			})
		}
		if int64(len(m.Feedbacks)) >= maxResults {
			break
		}
	}
	m.MaxResults = types.Int64Value(maxResults)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
