package dify

import "encoding/json"

// Wire types for the Dify Agent app Service API. Field names and JSON shapes follow
// the project's API reference, docs/api/README.md (cited as "docs/api §n"). Every struct decodes with
// encoding/json's default behaviour, so fields a newer server adds are ignored
// rather than rejected (docs/api §21, version drift).

// Response modes for POST /chat-messages (docs/api §2.1).
const (
	ResponseModeStreaming = "streaming"
	ResponseModeBlocking  = "blocking"
)

// App modes reported by GET /info (docs/api §0.1, §13).
const (
	ModeAgent     = "agent"      // New Agent
	ModeAgentChat = "agent-chat" // legacy Agent
)

// ServerInfo is the unauthenticated GET / answer (docs/api §1.1).
type ServerInfo struct {
	Welcome       string `json:"welcome"`
	APIVersion    string `json:"api_version"`
	ServerVersion string `json:"server_version"`
}

// ChatRequest is the body of POST /chat-messages (docs/api §2.1). The client always
// streams: ResponseMode is forced to "streaming" by SendChatMessage.
type ChatRequest struct {
	Query            string         `json:"query"`
	Inputs           map[string]any `json:"inputs"`
	User             string         `json:"user"`
	ResponseMode     string         `json:"response_mode,omitempty"`
	ConversationID   string         `json:"conversation_id,omitempty"`
	Files            []InputFile    `json:"files,omitempty"`
	AutoGenerateName *bool          `json:"auto_generate_name,omitempty"`
}

// File types and transfer methods for chat file references (docs/api §2.1).
const (
	FileTypeImage    = "image"
	FileTypeDocument = "document"
	FileTypeAudio    = "audio"
	FileTypeVideo    = "video"
	FileTypeCustom   = "custom"

	TransferRemoteURL = "remote_url"
	TransferLocalFile = "local_file"
)

// InputFile references a file in a chat request (docs/api §2.1, files[]).
type InputFile struct {
	Type           string `json:"type"`
	TransferMethod string `json:"transfer_method"`
	URL            string `json:"url,omitempty"`
	UploadFileID   string `json:"upload_file_id,omitempty"`
}

// StopRequest is the body of POST /chat-messages/{task_id}/stop (docs/api §3).
type StopRequest struct {
	User string `json:"user"`
}

// ResultResponse is the {"result":"success"} body several endpoints return.
type ResultResponse struct {
	Result string `json:"result"`
}

// SuggestedQuestions is the GET /messages/{id}/suggested answer (docs/api §4).
type SuggestedQuestions struct {
	Result string   `json:"result"`
	Data   []string `json:"data"`
}

// Conversation is a SimpleConversation (docs/api §5, §7).
type Conversation struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Inputs       map[string]any `json:"inputs"`
	Status       string         `json:"status"`
	Introduction *string        `json:"introduction"`
	CreatedAt    int64          `json:"created_at"`
	UpdatedAt    int64          `json:"updated_at"`
}

// ConversationPage is the GET /conversations answer (docs/api §5).
type ConversationPage struct {
	Limit   int            `json:"limit"`
	HasMore bool           `json:"has_more"`
	Data    []Conversation `json:"data"`
}

// Sort orders accepted by GET /conversations (docs/api §5).
const (
	SortCreatedAt     = "created_at"
	SortCreatedAtDesc = "-created_at"
	SortUpdatedAt     = "updated_at"
	SortUpdatedAtDesc = "-updated_at"
)

// RenameRequest is the body of POST /conversations/{id}/name (docs/api §7).
type RenameRequest struct {
	Name         string `json:"name,omitempty"`
	AutoGenerate bool   `json:"auto_generate"`
	User         string `json:"user,omitempty"`
}

// DeleteRequest is the JSON body Dify requires on DELETE /conversations/{id} (docs/api §8).
type DeleteRequest struct {
	User string `json:"user,omitempty"`
}

// Feedback is a message's end-user feedback (docs/api §6).
type Feedback struct {
	Rating string `json:"rating"`
}

// AgentThoughtRecord is an agent thought in its history form, as GET /messages
// returns it (docs/api §6). It differs from the SSE form (AgentThoughtEvent): history
// uses `files`, `chain_id`, `message_id` and `created_at`.
type AgentThoughtRecord struct {
	ID          string         `json:"id"`
	ChainID     *string        `json:"chain_id"`
	MessageID   string         `json:"message_id"`
	Position    int            `json:"position"`
	Thought     string         `json:"thought"`
	Tool        string         `json:"tool"`
	ToolLabels  map[string]any `json:"tool_labels"`
	ToolInput   string         `json:"tool_input"`
	CreatedAt   int64          `json:"created_at"`
	Observation string         `json:"observation"`
	Files       []string       `json:"files"`
}

// MessageFile is a file attached to a message (docs/api §6).
type MessageFile struct {
	ID             string  `json:"id"`
	Filename       string  `json:"filename"`
	Type           string  `json:"type"`
	URL            *string `json:"url"`
	MimeType       *string `json:"mime_type"`
	Size           *int64  `json:"size"`
	TransferMethod string  `json:"transfer_method"`
	BelongsTo      *string `json:"belongs_to"`
	UploadFileID   *string `json:"upload_file_id"`
}

// Message is a MessageListItem (docs/api §6). Token and price fields are absent on
// older servers and then decode as zero values.
type Message struct {
	ID                      string               `json:"id"`
	ConversationID          string               `json:"conversation_id"`
	ParentMessageID         *string              `json:"parent_message_id"`
	Inputs                  map[string]any       `json:"inputs"`
	Query                   string               `json:"query"`
	Answer                  string               `json:"answer"`
	Feedback                *Feedback            `json:"feedback"`
	RetrieverResources      []RetrieverResource  `json:"retriever_resources"`
	AgentThoughts           []AgentThoughtRecord `json:"agent_thoughts"`
	MessageFiles            []MessageFile        `json:"message_files"`
	CreatedAt               int64                `json:"created_at"`
	Status                  string               `json:"status"`
	Error                   *string              `json:"error"`
	MessageTokens           int64                `json:"message_tokens"`
	AnswerTokens            int64                `json:"answer_tokens"`
	TotalTokens             int64                `json:"total_tokens"`
	ProviderResponseLatency Float                `json:"provider_response_latency"`
	TotalPrice              *string              `json:"total_price"`
	Currency                *string              `json:"currency"`
	ExtraContents           []json.RawMessage    `json:"extra_contents"`
}

// MessagePage is the GET /messages answer (docs/api §6): data is oldest-first within a page.
type MessagePage struct {
	Limit   int       `json:"limit"`
	HasMore bool      `json:"has_more"`
	Data    []Message `json:"data"`
}

// RetrieverResource is a knowledge citation (docs/api §2.5). New Agent apps never send them.
type RetrieverResource struct {
	ID              string  `json:"id,omitempty"`
	MessageID       string  `json:"message_id,omitempty"`
	Position        int     `json:"position"`
	DatasetID       string  `json:"dataset_id"`
	DatasetName     string  `json:"dataset_name"`
	DocumentID      string  `json:"document_id"`
	DocumentName    string  `json:"document_name"`
	DataSourceType  string  `json:"data_source_type"`
	SegmentID       string  `json:"segment_id"`
	Score           float64 `json:"score"`
	HitCount        int     `json:"hit_count"`
	WordCount       int     `json:"word_count"`
	SegmentPosition int     `json:"segment_position"`
	IndexNodeHash   string  `json:"index_node_hash"`
	Content         string  `json:"content"`
	Summary         *string `json:"summary,omitempty"`
	CreatedAt       int64   `json:"created_at,omitempty"`
}

// Usage is LLMUsage from message_end.metadata.usage (docs/api §2.5). Prices are
// decimal strings exactly as Dify sends them. The timing keys are null when
// unknown, as Dify's LLMUsage writes them (never left out), so a usage the
// mock makes up carries the same keys as a recorded one.
type Usage struct {
	PromptTokens        int64    `json:"prompt_tokens"`
	PromptUnitPrice     string   `json:"prompt_unit_price"`
	PromptPriceUnit     string   `json:"prompt_price_unit"`
	PromptPrice         string   `json:"prompt_price"`
	CompletionTokens    int64    `json:"completion_tokens"`
	CompletionUnitPrice string   `json:"completion_unit_price"`
	CompletionPriceUnit string   `json:"completion_price_unit"`
	CompletionPrice     string   `json:"completion_price"`
	TotalTokens         int64    `json:"total_tokens"`
	TotalPrice          string   `json:"total_price"`
	Currency            string   `json:"currency"`
	Latency             float64  `json:"latency"`
	TimeToFirstToken    *float64 `json:"time_to_first_token"`
	TimeToGenerate      *float64 `json:"time_to_generate"`
}

// FileUploadResult is the 201 body of POST /files/upload (docs/api §9.1).
type FileUploadResult struct {
	ID             string  `json:"id"`
	Name           string  `json:"name"`
	Size           int64   `json:"size"`
	Extension      *string `json:"extension"`
	MimeType       *string `json:"mime_type"`
	CreatedBy      *string `json:"created_by"`
	CreatedAt      int64   `json:"created_at"`
	PreviewURL     *string `json:"preview_url"`
	SourceURL      string  `json:"source_url"`
	OriginalURL    *string `json:"original_url"`
	UserID         *string `json:"user_id"`
	TenantID       *string `json:"tenant_id"`
	ConversationID *string `json:"conversation_id"`
	FileKey        *string `json:"file_key"`
	Reference      *string `json:"reference"` // newest servers; always null for this endpoint
}

// EndUser is the GET /end-users/{id} answer (docs/api §10). Timestamps are ISO-8601 strings.
type EndUser struct {
	ID             string  `json:"id"`
	TenantID       string  `json:"tenant_id"`
	AppID          *string `json:"app_id"`
	Type           string  `json:"type"`
	ExternalUserID string  `json:"external_user_id"`
	Name           *string `json:"name"`
	IsAnonymous    bool    `json:"is_anonymous"`
	SessionID      string  `json:"session_id"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      string  `json:"updated_at"`
}

// AudioText is the POST /audio-to-text answer (docs/api §11).
type AudioText struct {
	Text string `json:"text"`
}

// TextToAudioRequest is the body of POST /text-to-audio (docs/api §12).
type TextToAudioRequest struct {
	MessageID string `json:"message_id,omitempty"`
	Text      string `json:"text,omitempty"`
	User      string `json:"user,omitempty"`
	Voice     string `json:"voice,omitempty"`
	Streaming bool   `json:"streaming,omitempty"`
}

// AppInfo is the GET /info answer (docs/api §13).
type AppInfo struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Mode        string   `json:"mode"`
	AuthorName  string   `json:"author_name"`
}

// Toggle is a {"enabled": bool} feature switch in /parameters (docs/api §14).
type Toggle struct {
	Enabled bool `json:"enabled"`
}

// TextToSpeech is /parameters.text_to_speech (docs/api §14).
type TextToSpeech struct {
	Enabled  bool   `json:"enabled"`
	Voice    string `json:"voice,omitempty"`
	Language string `json:"language,omitempty"`
	AutoPlay string `json:"autoPlay,omitempty"`
}

// SensitiveWordAvoidance is /parameters.sensitive_word_avoidance (docs/api §14).
type SensitiveWordAvoidance struct {
	Enabled bool              `json:"enabled"`
	Type    string            `json:"type"`
	Configs []json.RawMessage `json:"configs"`
}

// AppParameters is the GET /parameters answer (docs/api §14).
type AppParameters struct {
	OpeningStatement              *string                `json:"opening_statement"`
	SuggestedQuestions            []string               `json:"suggested_questions"`
	SuggestedQuestionsAfterAnswer Toggle                 `json:"suggested_questions_after_answer"`
	SpeechToText                  Toggle                 `json:"speech_to_text"`
	TextToSpeech                  TextToSpeech           `json:"text_to_speech"`
	RetrieverResource             Toggle                 `json:"retriever_resource"`
	AnnotationReply               Toggle                 `json:"annotation_reply"`
	MoreLikeThis                  Toggle                 `json:"more_like_this"`
	UserInputForm                 []UserInputFormItem    `json:"user_input_form"`
	SensitiveWordAvoidance        SensitiveWordAvoidance `json:"sensitive_word_avoidance"`
	FileUpload                    FileUploadSettings     `json:"file_upload"`
	SystemParameters              SystemParameters       `json:"system_parameters"`
}

// UserInputFormItem is one /parameters.user_input_form entry. On the wire each
// item is a single-key object keyed by the control type (docs/api §14), e.g.
// {"text-input": {...}}; UnmarshalJSON/MarshalJSON (in form.go) translate
// between that shape and this flat struct, keeping the control type in Control.
type UserInputFormItem struct {
	Control                  string   `json:"-"`
	Label                    string   `json:"label"`
	Variable                 string   `json:"variable"`
	Required                 bool     `json:"required"`
	Default                  string   `json:"default"`
	MaxLength                *int     `json:"max_length,omitempty"`
	Options                  []string `json:"options,omitempty"`
	Type                     string   `json:"type,omitempty"`
	Hide                     bool     `json:"hide,omitempty"`
	Description              string   `json:"description,omitempty"`
	AllowedFileTypes         []string `json:"allowed_file_types,omitempty"`
	AllowedFileExtensions    []string `json:"allowed_file_extensions,omitempty"`
	AllowedFileUploadMethods []string `json:"allowed_file_upload_methods,omitempty"`
	// Extra keeps item fields this package does not model, so decoding and
	// re-encoding an item loses nothing.
	Extra map[string]json.RawMessage `json:"-"`
}

// Control types for user_input_form items (docs/api §14).
const (
	ControlTextInput    = "text-input"
	ControlParagraph    = "paragraph"
	ControlSelect       = "select"
	ControlNumber       = "number"
	ControlFile         = "file"
	ControlFileList     = "file-list"
	ControlExternalData = "external_data_tool"
	ControlCheckbox     = "checkbox"
	ControlJSONObject   = "json_object"
)

// ImageUploadSettings is the legacy /parameters.file_upload.image object (docs/api §14).
type ImageUploadSettings struct {
	Enabled         bool     `json:"enabled"`
	NumberLimits    int      `json:"number_limits"`
	Detail          string   `json:"detail,omitempty"`
	TransferMethods []string `json:"transfer_methods"`
}

// FileUploadSettings is /parameters.file_upload in both shapes (docs/api §14): the
// legacy `image` object is always present; newer apps add the top-level keys,
// which are nil when the server did not send them.
type FileUploadSettings struct {
	Image                    *ImageUploadSettings `json:"image,omitempty"`
	Enabled                  *bool                `json:"enabled,omitempty"`
	AllowedFileTypes         []string             `json:"allowed_file_types,omitempty"`
	AllowedFileExtensions    []string             `json:"allowed_file_extensions,omitempty"`
	AllowedFileUploadMethods []string             `json:"allowed_file_upload_methods,omitempty"`
	NumberLimits             *int                 `json:"number_limits,omitempty"`
}

// SystemParameters holds the upload size limits in MB (docs/api §14, §9.1).
type SystemParameters struct {
	ImageFileSizeLimit      int `json:"image_file_size_limit"`
	VideoFileSizeLimit      int `json:"video_file_size_limit"`
	AudioFileSizeLimit      int `json:"audio_file_size_limit"`
	FileSizeLimit           int `json:"file_size_limit"`
	WorkflowFileUploadLimit int `json:"workflow_file_upload_limit"`
}

// AppMeta is the GET /meta answer (docs/api §15). Values are either an icon URL
// string or an {"background","content"} object, so they stay raw.
type AppMeta struct {
	ToolIcons map[string]json.RawMessage `json:"tool_icons"`
}

// AppSite is the GET /site answer, the WebApp settings (docs/api §16). Nullable
// strings are pointers because Dify sends null for unset fields.
type AppSite struct {
	Title                  string  `json:"title"`
	ChatColorTheme         *string `json:"chat_color_theme"`
	ChatColorThemeInverted bool    `json:"chat_color_theme_inverted"`
	IconType               *string `json:"icon_type"`
	Icon                   *string `json:"icon"`
	IconBackground         *string `json:"icon_background"`
	IconURL                *string `json:"icon_url"`
	Description            *string `json:"description"`
	Copyright              *string `json:"copyright"`
	PrivacyPolicy          *string `json:"privacy_policy"`
	InputPlaceholder       *string `json:"input_placeholder"`
	CustomDisclaimer       *string `json:"custom_disclaimer"`
	DefaultLanguage        string  `json:"default_language"`
	ShowWorkflowSteps      bool    `json:"show_workflow_steps"`
	UseIconAsAnswerIcon    bool    `json:"use_icon_as_answer_icon"`
}
