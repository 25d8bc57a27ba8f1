package provider

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

var _ datasource.DataSourceWithConfigure = &messagesDataSource{}

// NewMessagesDataSource is dify_messages (GET /messages, docs/api §6).
func NewMessagesDataSource() datasource.DataSource { return &messagesDataSource{} }

type messagesDataSource struct{ dataSourceBase }

type messagesModel struct {
	ConversationID types.String   `tfsdk:"conversation_id"`
	User           types.String   `tfsdk:"user"`
	Messages       []messageModel `tfsdk:"messages"`
}

type messageModel struct {
	ID                      string               `tfsdk:"id"`
	ConversationID          string               `tfsdk:"conversation_id"`
	ParentMessageID         *string              `tfsdk:"parent_message_id"`
	Inputs                  types.Map            `tfsdk:"inputs"`
	Query                   string               `tfsdk:"query"`
	Answer                  string               `tfsdk:"answer"`
	FeedbackRating          *string              `tfsdk:"feedback_rating"`
	Status                  string               `tfsdk:"status"`
	Error                   *string              `tfsdk:"error"`
	CreatedAt               int64                `tfsdk:"created_at"`
	MessageTokens           int64                `tfsdk:"message_tokens"`
	AnswerTokens            int64                `tfsdk:"answer_tokens"`
	TotalTokens             int64                `tfsdk:"total_tokens"`
	TotalPrice              *string              `tfsdk:"total_price"`
	Currency                *string              `tfsdk:"currency"`
	ProviderResponseLatency float64              `tfsdk:"provider_response_latency"`
	AgentThoughts           []thoughtRecordModel `tfsdk:"agent_thoughts"`
	MessageFiles            []messageFileModel   `tfsdk:"message_files"`
}

type thoughtRecordModel struct {
	ID          string   `tfsdk:"id"`
	Position    int64    `tfsdk:"position"`
	Thought     string   `tfsdk:"thought"`
	Tool        string   `tfsdk:"tool"`
	ToolInput   string   `tfsdk:"tool_input"`
	Observation string   `tfsdk:"observation"`
	Files       []string `tfsdk:"files"`
	CreatedAt   int64    `tfsdk:"created_at"`
}

type messageFileModel struct {
	ID             string  `tfsdk:"id"`
	Filename       string  `tfsdk:"filename"`
	Type           string  `tfsdk:"type"`
	URL            *string `tfsdk:"url"`
	MimeType       *string `tfsdk:"mime_type"`
	Size           *int64  `tfsdk:"size"`
	TransferMethod string  `tfsdk:"transfer_method"`
	BelongsTo      *string `tfsdk:"belongs_to"`
	UploadFileID   *string `tfsdk:"upload_file_id"`
}

// maxMessagePages bounds the history walk (100 messages a page).
const maxMessagePages = 100

func (d *messagesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_messages"
}

func (d *messagesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	num := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The message history of one conversation, oldest first, with each turn's agent thoughts " +
			"(`GET /messages`). Reads at most 10 000 messages.",
		Attributes: map[string]schema.Attribute{
			"conversation_id": schema.StringAttribute{Required: true, MarkdownDescription: "Conversation to read (a UUID), e.g. `dify_conversation.example.id`.",
				Validators: []validator.String{isUUID("conversation")}},
			"user": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "End user who owns the conversation (Dify answers 404 for anyone else). Defaults to the provider's `user` (`" + EnvUser + "`, then `" + DefaultUser + "`).",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
			"messages": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Messages in chronological order.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":                        str("Message id."),
					"conversation_id":           str("Conversation id."),
					"parent_message_id":         str("Parent message id for threaded conversations (null otherwise)."),
					"inputs":                    schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Inputs of the turn; values that are not strings are given as JSON text."},
					"query":                     str("The user's message."),
					"answer":                    str("The agent's answer."),
					"feedback_rating":           str("The end user's feedback, `like` or `dislike` (null when none)."),
					"status":                    str("`normal` or `error`."),
					"error":                     str("Error text of a failed turn (null otherwise)."),
					"created_at":                num("Creation time, Unix epoch seconds."),
					"message_tokens":            num("Prompt tokens (0 on servers that do not report it)."),
					"answer_tokens":             num("Answer tokens (0 on servers that do not report it)."),
					"total_tokens":              num("All tokens (0 on servers that do not report it)."),
					"total_price":               str("Total cost as a decimal string (null when not reported)."),
					"currency":                  str("Currency of `total_price` (null when not reported)."),
					"provider_response_latency": schema.Float64Attribute{Computed: true, MarkdownDescription: "Model latency in seconds (0 when not reported)."},
					"agent_thoughts": schema.ListNestedAttribute{
						Computed:            true,
						MarkdownDescription: "The turn's reasoning and tool steps, ordered by position.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"id":          str("Thought id."),
							"position":    num("Position in the turn, from 1."),
							"thought":     str("Reasoning text."),
							"tool":        str("Tool name(s), joined by `;`."),
							"tool_input":  str("Tool input, JSON text."),
							"observation": str("Tool output, JSON text."),
							"files":       schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Ids of files the step produced."},
							"created_at":  num("Creation time, Unix epoch seconds."),
						}},
					},
					"message_files": schema.ListNestedAttribute{
						Computed:            true,
						MarkdownDescription: "Files attached to or produced by the turn.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"id":              str("File id."),
							"filename":        str("File name."),
							"type":            str("File type, e.g. `image`."),
							"url":             str("Download URL (null when none)."),
							"mime_type":       str("MIME type (null when unknown)."),
							"size":            num("Size in bytes (null when unknown)."),
							"transfer_method": str("`remote_url`, `local_file` or `tool_file`."),
							"belongs_to":      str("`user` or `assistant` (null when unknown)."),
							"upload_file_id":  str("Upload id for `local_file` files (null otherwise)."),
						}},
					},
				}},
			},
		},
	}
}

func (d *messagesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !d.ready(&resp.Diagnostics) {
		return
	}
	var m messagesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	user := d.data.userOr(m.User.ValueString())
	id := m.ConversationID.ValueString()
	// Pages come newest first, each oldest-first inside (docs/api §6); collect
	// them backwards and reverse the page order at the end.
	var pages [][]dify.Message
	p := dify.ListMessagesParams{ConversationID: id, User: user, Limit: 100}
	for page, err := range dify.MessagePages(ctx, d.data.client, &p, maxMessagePages) {
		if err != nil {
			next := fmt.Sprintf("GET /messages for conversation %s of user %q failed.", id, user)
			if dify.IsNotFound(err) {
				next += " Dify answers 404 when the conversation does not exist or belongs to another user."
			}
			d.data.redact.addError(&resp.Diagnostics, "Unable to read messages", err, next)
			return
		}
		pages = append(pages, page.Data)
	}
	slices.Reverse(pages)
	m.Messages = []messageModel{}
	for _, p := range pages {
		for _, msg := range p {
			m.Messages = append(m.Messages, messageFromAPI(msg))
		}
	}
	m.User = types.StringValue(user)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func messageFromAPI(msg dify.Message) messageModel {
	mm := messageModel{
		ID: msg.ID, ConversationID: msg.ConversationID, ParentMessageID: msg.ParentMessageID,
		Inputs: stringMap(msg.Inputs), Query: msg.Query, Answer: msg.Answer, Status: msg.Status, Error: msg.Error,
		CreatedAt: msg.CreatedAt, MessageTokens: msg.MessageTokens, AnswerTokens: msg.AnswerTokens, TotalTokens: msg.TotalTokens,
		TotalPrice: msg.TotalPrice, Currency: msg.Currency, ProviderResponseLatency: float64(msg.ProviderResponseLatency),
		AgentThoughts: []thoughtRecordModel{}, MessageFiles: []messageFileModel{},
	}
	if msg.Feedback != nil {
		rating := msg.Feedback.Rating
		mm.FeedbackRating = &rating
	}
	for _, t := range msg.AgentThoughts {
		mm.AgentThoughts = append(mm.AgentThoughts, thoughtRecordModel{ID: t.ID, Position: int64(t.Position), Thought: t.Thought,
			Tool: t.Tool, ToolInput: t.ToolInput, Observation: t.Observation, Files: nonNil(t.Files), CreatedAt: t.CreatedAt})
	}
	for _, f := range msg.MessageFiles {
		mm.MessageFiles = append(mm.MessageFiles, messageFileModel{ID: f.ID, Filename: f.Filename, Type: f.Type, URL: f.URL,
			MimeType: f.MimeType, Size: f.Size, TransferMethod: f.TransferMethod, BelongsTo: f.BelongsTo, UploadFileID: f.UploadFileID})
	}
	return mm
}
