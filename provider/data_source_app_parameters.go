package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

var _ datasource.DataSourceWithConfigure = &appParametersDataSource{}

// NewAppParametersDataSource is dify_app_parameters (GET /parameters, docs/api §14).
func NewAppParametersDataSource() datasource.DataSource { return &appParametersDataSource{} }

type appParametersDataSource struct{ dataSourceBase }

type appParametersModel struct {
	OpeningStatement                     *string               `tfsdk:"opening_statement"`
	SuggestedQuestions                   []string              `tfsdk:"suggested_questions"`
	SuggestedQuestionsAfterAnswerEnabled bool                  `tfsdk:"suggested_questions_after_answer_enabled"`
	SpeechToTextEnabled                  bool                  `tfsdk:"speech_to_text_enabled"`
	TextToSpeech                         textToSpeechModel     `tfsdk:"text_to_speech"`
	RetrieverResourceEnabled             bool                  `tfsdk:"retriever_resource_enabled"`
	AnnotationReplyEnabled               bool                  `tfsdk:"annotation_reply_enabled"`
	MoreLikeThisEnabled                  bool                  `tfsdk:"more_like_this_enabled"`
	SensitiveWordAvoidance               sensitiveWordModel    `tfsdk:"sensitive_word_avoidance"`
	UserInputForm                        []userInputFormModel  `tfsdk:"user_input_form"`
	FileUpload                           fileUploadModel       `tfsdk:"file_upload"`
	SystemParameters                     systemParametersModel `tfsdk:"system_parameters"`
}

type textToSpeechModel struct {
	Enabled  bool   `tfsdk:"enabled"`
	Voice    string `tfsdk:"voice"`
	Language string `tfsdk:"language"`
	AutoPlay string `tfsdk:"auto_play"`
}

type sensitiveWordModel struct {
	Enabled bool   `tfsdk:"enabled"`
	Type    string `tfsdk:"type"`
}

type userInputFormModel struct {
	Control                  string   `tfsdk:"control"`
	Type                     string   `tfsdk:"type"`
	Variable                 string   `tfsdk:"variable"`
	Label                    string   `tfsdk:"label"`
	Required                 bool     `tfsdk:"required"`
	Default                  string   `tfsdk:"default"`
	Options                  []string `tfsdk:"options"`
	MaxLength                *int64   `tfsdk:"max_length"`
	Hide                     bool     `tfsdk:"hide"`
	Description              string   `tfsdk:"description"`
	AllowedFileTypes         []string `tfsdk:"allowed_file_types"`
	AllowedFileExtensions    []string `tfsdk:"allowed_file_extensions"`
	AllowedFileUploadMethods []string `tfsdk:"allowed_file_upload_methods"`
}

type fileUploadModel struct {
	Enabled                  *bool             `tfsdk:"enabled"`
	AllowedFileTypes         []string          `tfsdk:"allowed_file_types"`
	AllowedFileExtensions    []string          `tfsdk:"allowed_file_extensions"`
	AllowedFileUploadMethods []string          `tfsdk:"allowed_file_upload_methods"`
	NumberLimits             *int64            `tfsdk:"number_limits"`
	Image                    *imageUploadModel `tfsdk:"image"`
}

type imageUploadModel struct {
	Enabled         bool     `tfsdk:"enabled"`
	NumberLimits    int64    `tfsdk:"number_limits"`
	Detail          string   `tfsdk:"detail"`
	TransferMethods []string `tfsdk:"transfer_methods"`
}

type systemParametersModel struct {
	ImageFileSizeLimit      int64 `tfsdk:"image_file_size_limit"`
	VideoFileSizeLimit      int64 `tfsdk:"video_file_size_limit"`
	AudioFileSizeLimit      int64 `tfsdk:"audio_file_size_limit"`
	FileSizeLimit           int64 `tfsdk:"file_size_limit"`
	WorkflowFileUploadLimit int64 `tfsdk:"workflow_file_upload_limit"`
}

func (d *appParametersDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_app_parameters"
}

func (d *appParametersDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	boolean := func(desc string) schema.BoolAttribute {
		return schema.BoolAttribute{Computed: true, MarkdownDescription: desc}
	}
	num := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	strs := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The app's chat settings (`GET /parameters`): opening statement, feature toggles, the " +
			"input form the `inputs` of a `dify_conversation` must follow, and upload settings and size limits. Takes no arguments. " +
			"Features a server does not report read as disabled.",
		Attributes: map[string]schema.Attribute{
			"opening_statement":                        str("Greeting shown before the first message (null when unset)."),
			"suggested_questions":                      strs("Questions suggested before the first message."),
			"suggested_questions_after_answer_enabled": boolean("Whether Dify suggests follow-up questions after each answer."),
			"speech_to_text_enabled":                   boolean("Whether speech-to-text (`/audio-to-text`) is enabled."),
			"text_to_speech": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Text-to-speech settings.",
				Attributes: map[string]schema.Attribute{
					"enabled":   boolean("Whether text-to-speech is enabled."),
					"voice":     str("Voice name (empty when unset)."),
					"language":  str("Language (empty when unset)."),
					"auto_play": str("`enabled` or `disabled` (empty when unset)."),
				},
			},
			"retriever_resource_enabled": boolean("Whether answers cite knowledge sources (always false for New Agent apps)."),
			"annotation_reply_enabled":   boolean("Whether annotation replies are enabled."),
			"more_like_this_enabled":     boolean("Whether \"more like this\" is enabled."),
			"sensitive_word_avoidance": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Content moderation settings.",
				Attributes: map[string]schema.Attribute{
					"enabled": boolean("Whether moderation is enabled."),
					"type":    str("Moderation provider type (empty when disabled)."),
				},
			},
			"user_input_form": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The app's input variables in display order; set them through `dify_conversation.inputs`.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"control":                     str("Control kind: `text-input`, `paragraph`, `select`, `number`, `file`, `file-list`, `checkbox`, `json_object` or `external_data_tool`."),
					"type":                        str("The type the item states for itself (usually equal to `control`; empty when absent)."),
					"variable":                    str("Variable name: the key in `inputs`."),
					"label":                       str("Label shown to users."),
					"required":                    boolean("Whether the input is required."),
					"default":                     str("Default value (empty when none)."),
					"options":                     strs("Choices of a `select` control (empty otherwise)."),
					"max_length":                  num("Maximum length, or file count for file controls (null when unset)."),
					"hide":                        boolean("Whether the input is hidden from users."),
					"description":                 str("Help text (empty when none)."),
					"allowed_file_types":          strs("File controls: allowed types (`image`, `document`, `audio`, `video`, `custom`)."),
					"allowed_file_extensions":     strs("File controls: allowed extensions, e.g. `.md`."),
					"allowed_file_upload_methods": strs("File controls: `local_file` and/or `remote_url`."),
				}},
			},
			"file_upload": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "File upload settings for chat messages, in both the newer top-level shape and the legacy `image` shape.",
				Attributes: map[string]schema.Attribute{
					"enabled":                     schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether file upload is enabled (null on servers that only send the legacy `image` shape)."},
					"allowed_file_types":          strs("Allowed file types."),
					"allowed_file_extensions":     strs("Allowed extensions for `custom` files."),
					"allowed_file_upload_methods": strs("`local_file` and/or `remote_url`."),
					"number_limits":               schema.Int64Attribute{Computed: true, MarkdownDescription: "Maximum files per message (null when not reported)."},
					"image": schema.SingleNestedAttribute{
						Computed:            true,
						MarkdownDescription: "Legacy image upload settings (null when the server omits them).",
						Attributes: map[string]schema.Attribute{
							"enabled":          boolean("Whether image upload is enabled."),
							"number_limits":    num("Maximum images per message."),
							"detail":           str("Image detail level: `high` or `low`."),
							"transfer_methods": strs("`remote_url` and/or `local_file`."),
						},
					},
				},
			},
			"system_parameters": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Upload size limits in MB; `dify_file` checks these at plan time.",
				Attributes: map[string]schema.Attribute{
					"image_file_size_limit":      num("Image upload limit, MB (Dify default 10)."),
					"video_file_size_limit":      num("Video upload limit, MB (Dify default 100)."),
					"audio_file_size_limit":      num("Audio upload limit, MB (Dify default 50)."),
					"file_size_limit":            num("Limit for other files, MB (Dify default 15)."),
					"workflow_file_upload_limit": num("Maximum files per workflow run."),
				},
			},
		},
	}
}

func (d *appParametersDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !d.ready(&resp.Diagnostics) {
		return
	}
	p, err := d.data.client.AppParameters(ctx)
	if err != nil {
		d.data.redact.addError(&resp.Diagnostics, "Unable to read app parameters", err,
			"GET /parameters failed. A New Agent app answers 400 agent_not_published until its agent is published.")
		return
	}
	m := parametersModel(p)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func parametersModel(p *dify.AppParameters) appParametersModel {
	m := appParametersModel{
		OpeningStatement:                     p.OpeningStatement,
		SuggestedQuestions:                   nonNil(p.SuggestedQuestions),
		SuggestedQuestionsAfterAnswerEnabled: p.SuggestedQuestionsAfterAnswer.Enabled,
		SpeechToTextEnabled:                  p.SpeechToText.Enabled,
		TextToSpeech: textToSpeechModel{
			Enabled: p.TextToSpeech.Enabled, Voice: p.TextToSpeech.Voice,
			Language: p.TextToSpeech.Language, AutoPlay: p.TextToSpeech.AutoPlay,
		},
		RetrieverResourceEnabled: p.RetrieverResource.Enabled,
		AnnotationReplyEnabled:   p.AnnotationReply.Enabled,
		MoreLikeThisEnabled:      p.MoreLikeThis.Enabled,
		SensitiveWordAvoidance:   sensitiveWordModel{Enabled: p.SensitiveWordAvoidance.Enabled, Type: p.SensitiveWordAvoidance.Type},
		UserInputForm:            make([]userInputFormModel, 0, len(p.UserInputForm)),
		FileUpload: fileUploadModel{
			Enabled:                  p.FileUpload.Enabled,
			AllowedFileTypes:         nonNil(p.FileUpload.AllowedFileTypes),
			AllowedFileExtensions:    nonNil(p.FileUpload.AllowedFileExtensions),
			AllowedFileUploadMethods: nonNil(p.FileUpload.AllowedFileUploadMethods),
			NumberLimits:             int64Ptr(p.FileUpload.NumberLimits),
		},
		SystemParameters: systemParametersModel{
			ImageFileSizeLimit:      int64(p.SystemParameters.ImageFileSizeLimit),
			VideoFileSizeLimit:      int64(p.SystemParameters.VideoFileSizeLimit),
			AudioFileSizeLimit:      int64(p.SystemParameters.AudioFileSizeLimit),
			FileSizeLimit:           int64(p.SystemParameters.FileSizeLimit),
			WorkflowFileUploadLimit: int64(p.SystemParameters.WorkflowFileUploadLimit),
		},
	}
	if img := p.FileUpload.Image; img != nil {
		m.FileUpload.Image = &imageUploadModel{Enabled: img.Enabled, NumberLimits: int64(img.NumberLimits),
			Detail: img.Detail, TransferMethods: nonNil(img.TransferMethods)}
	}
	for _, it := range p.UserInputForm {
		m.UserInputForm = append(m.UserInputForm, userInputFormModel{
			Control: it.Control, Type: it.Type, Variable: it.Variable, Label: it.Label,
			Required: it.Required, Default: it.Default, Options: nonNil(it.Options),
			MaxLength: int64Ptr(it.MaxLength), Hide: it.Hide, Description: it.Description,
			AllowedFileTypes:         nonNil(it.AllowedFileTypes),
			AllowedFileExtensions:    nonNil(it.AllowedFileExtensions),
			AllowedFileUploadMethods: nonNil(it.AllowedFileUploadMethods),
		})
	}
	return m
}

// nonNil makes an absent list an empty one, so configurations can use
// length() and for expressions without null checks.
func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

func int64Ptr(p *int) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}
