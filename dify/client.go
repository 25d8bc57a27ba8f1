package dify

import (
	"context"
	"io"
	"net/http"
	"time"
)

// CONTRACT SKELETON: signatures below are fixed (the provider and the mock code
// against them); bodies are being implemented.

// DefaultBaseURL is Dify Cloud's Service API base (API §1.1).
const DefaultBaseURL = "https://api.dify.ai/v1"

// Version names this client in the User-Agent; release builds override it.
var Version = "dev"

// RetryPolicy bounds retries of idempotent calls (429, 5xx except 501,
// connection failures). POST /chat-messages is never retried once the request
// may have reached the server.
type RetryPolicy struct {
	MaxAttempts int           // total attempts including the first; <=1 disables retries. Default 4.
	BaseDelay   time.Duration // first backoff. Default 500ms.
	MaxDelay    time.Duration // cap per wait, also caps Retry-After. Default 30s.
}

// Client talks to one Dify app (the API key selects the app).
type Client struct {
	baseURL    string
	apiKey     string
	user       string
	userAgent  string
	httpClient *http.Client
	retry      RetryPolicy
	logf       func(ctx context.Context, msg string, fields map[string]any)
}

// Option configures a Client.
type Option func(*Client)

func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.httpClient = h } }
func WithUser(user string) Option          { return func(c *Client) { c.user = user } }
func WithUserAgent(ua string) Option       { return func(c *Client) { c.userAgent = ua } }
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }
func WithLogger(f func(ctx context.Context, msg string, fields map[string]any)) Option {
	return func(c *Client) { c.logf = f }
}

// NewClient returns a client for baseURL (e.g. "http://127.0.0.1:5001/v1").
func NewClient(baseURL, apiKey string, opts ...Option) (*Client, error) { panic("todo") }

// User returns the default end-user id used when a call does not name one.
func (c *Client) User() string { return c.user }

// ChatStream is a live chat reply.
type ChatStream struct{}

// Next returns the next event; io.EOF after a terminal message_end (or after
// the error event was returned); ErrTruncatedStream if the stream ends early.
func (s *ChatStream) Next() (Event, error) { panic("todo") }
func (s *ChatStream) Close() error         { panic("todo") }

// Audio is a text-to-audio reply; the caller closes Body.
type Audio struct {
	Body        io.ReadCloser
	ContentType string
}

// Upload describes a multipart upload streamed from Reader.
type Upload struct {
	Filename    string
	ContentType string // defaults from the extension
	Reader      io.Reader
	User        string // defaults to the client's user
}

type ListConversationsParams struct {
	User   string
	LastID string
	Limit  int
	SortBy string
}

type ListMessagesParams struct {
	ConversationID string
	User           string
	FirstID        string
	Limit          int
}

func (c *Client) ServerInfo(ctx context.Context) (*ServerInfo, error) { panic("todo") }
func (c *Client) SendChatMessage(ctx context.Context, req ChatRequest) (*ChatStream, error) {
	panic("todo")
}
func (c *Client) StopChatMessage(ctx context.Context, taskID, user string) error { panic("todo") }
func (c *Client) SuggestedQuestions(ctx context.Context, messageID, user string) ([]string, error) {
	panic("todo")
}
func (c *Client) UploadFile(ctx context.Context, up Upload) (*FileUploadResult, error) { panic("todo") }
func (c *Client) GetEndUser(ctx context.Context, endUserID string) (*EndUser, error)   { panic("todo") }
func (c *Client) ListConversations(ctx context.Context, p ListConversationsParams) (*ConversationPage, error) {
	panic("todo")
}
func (c *Client) ListMessages(ctx context.Context, p ListMessagesParams) (*MessagePage, error) {
	panic("todo")
}
func (c *Client) RenameConversation(ctx context.Context, conversationID string, req RenameRequest) (*Conversation, error) {
	panic("todo")
}
func (c *Client) DeleteConversation(ctx context.Context, conversationID, user string) error {
	panic("todo")
}
func (c *Client) AudioToText(ctx context.Context, up Upload) (*AudioText, error) { panic("todo") }
func (c *Client) TextToAudio(ctx context.Context, req TextToAudioRequest) (*Audio, error) {
	panic("todo")
}
func (c *Client) AppInfo(ctx context.Context) (*AppInfo, error)             { panic("todo") }
func (c *Client) AppParameters(ctx context.Context) (*AppParameters, error) { panic("todo") }
func (c *Client) AppMeta(ctx context.Context) (*AppMeta, error)             { panic("todo") }
func (c *Client) AppSite(ctx context.Context) (*AppSite, error)             { panic("todo") }

// APIError is a Dify error envelope (API §1.4) or an in-stream error event.
type APIError struct {
	Status  int
	Code    string
	Message string
	Params  string
}

func (e *APIError) Error() string { panic("todo") }

// IsNotFound reports whether err is an APIError with HTTP 404.
func IsNotFound(err error) bool { panic("todo") }

// Turn is a chat reply folded by Accumulator (API §2.5–2.6).
type Turn struct {
	ConversationID string
	MessageID      string
	TaskID         string
	CreatedAt      int64
	Answer         string
	Thoughts       []AgentThoughtEvent // ordered by Position, one per id
	Files          []MessageFileEvent
	Usage          *Usage
	Metadata       MessageEndMetadata
	Completed      bool // message_end seen
}

// Accumulator folds stream events into a Turn.
type Accumulator struct{}

// Add folds one event; an error event returns an *APIError.
func (a *Accumulator) Add(ev Event) error { panic("todo") }

// Turn returns the result so far.
func (a *Accumulator) Turn() Turn { panic("todo") }

// Collect drains s into a Turn (the stream is closed).
func Collect(s *ChatStream) (*Turn, error) { panic("todo") }
