package dify

import (
	"context"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"strconv"
)

// ServerInfo calls the unauthenticated GET {base}/ (docs/api §1.1). No API key is
// sent, so it works for version detection and health checks before a key is
// known.
func (c *Client) ServerInfo(ctx context.Context) (*ServerInfo, error) {
	var out ServerInfo
	if err := c.do(ctx, &request{method: http.MethodGet, path: "/", noAuth: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SendChatMessage posts a chat message (docs/api §2) and returns the live stream.
// The request always streams: ResponseMode is forced to "streaming" (agent
// apps reject blocking, docs/api §2.2); nil Inputs are sent as {} and an empty
// User falls back to the client's default user. The request is never
// retried once it may have reached the server — a retry would send the
// message twice — so a 5xx is returned as *APIError at once; only a 429
// that proves Dify refused it before creating anything (Dify's rate-limit
// codes, or a Retry-After) is sent again, within the retry policy and ctx's
// deadline (see retryClass). The caller must Close the stream; cancelling
// ctx aborts it.
func (c *Client) SendChatMessage(ctx context.Context, req ChatRequest) (*ChatStream, error) {
	req.ResponseMode = ResponseModeStreaming
	if req.Inputs == nil {
		req.Inputs = map[string]any{}
	}
	req.User = c.userOr(req.User)
	body, err := newJSONBody(req)
	if err != nil {
		return nil, err
	}
	r := &request{method: http.MethodPost, path: "/chat-messages", body: body,
		accept: "text/event-stream", class: retryUnsentOnly}
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	// A JSON 2xx is a blocking-mode reply from a server that ignored
	// response_mode (a non-agent app, docs/api §2.2); it cannot be read as events.
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		drainClose(resp.Body)
		return nil, fmt.Errorf("dify: POST /chat-messages: expected an event stream, got HTTP %d application/json (is this an agent app?): %s",
			resp.StatusCode, snippet(redact(string(body), c.apiKey)))
	}
	var stream io.ReadCloser = resp.Body
	if c.streamIdle > 0 {
		stream = newIdleBody(resp.Body, c.streamIdle)
	}
	s := NewChatStream(stream)
	s.resp = resp
	return s, nil
}

// StopChatMessage asks Dify to stop a streaming reply (docs/api §3); taskID comes
// from any event of the stream (Turn.TaskID). user must be the user who sent
// the message; empty means the client's default. Dify answers success even
// for an unknown or finished task.
func (c *Client) StopChatMessage(ctx context.Context, taskID, user string) error {
	body, err := newJSONBody(StopRequest{User: c.userOr(user)})
	if err != nil {
		return err
	}
	return c.do(ctx, &request{method: http.MethodPost, path: "/chat-messages/" + pathEscape(taskID) + "/stop",
		body: body, class: retryIdempotent}, nil)
}

// SuggestedQuestions returns the follow-up questions for a message (docs/api §4).
// The result is never nil.
func (c *Client) SuggestedQuestions(ctx context.Context, messageID, user string) ([]string, error) {
	var out SuggestedQuestions
	q := url.Values{}
	setQuery(q, "user", c.userOr(user))
	r := &request{method: http.MethodGet, path: "/messages/" + pathEscape(messageID) + "/suggested", query: q}
	if err := c.do(ctx, r, &out); err != nil {
		return nil, err
	}
	if out.Data == nil {
		out.Data = []string{}
	}
	return out.Data, nil
}

// UploadFile uploads a file for later use in a chat message (docs/api §9.1),
// streaming it from up.Reader. It is not retried once any byte may have
// reached the server: a retry could store the file twice.
func (c *Client) UploadFile(ctx context.Context, up Upload) (*FileUploadResult, error) {
	var out FileUploadResult
	if err := c.upload(ctx, "/files/upload", up, false, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetEndUser returns an end user by its Dify id (docs/api §10), e.g. the
// created_by of an uploaded file.
func (c *Client) GetEndUser(ctx context.Context, endUserID string) (*EndUser, error) {
	var out EndUser
	if err := c.do(ctx, &request{method: http.MethodGet, path: "/end-users/" + pathEscape(endUserID)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListConversationsParams selects a page of GET /conversations (docs/api §5).
// Zero values are omitted from the query so the server's defaults apply
// (limit 20, sort_by -updated_at); User falls back to the client's default.
type ListConversationsParams struct {
	User   string
	LastID string
	Limit  int
	SortBy string // one of the Sort* constants
}

// ListConversations returns one page of the user's conversations (docs/api §5);
// pass the last item's id as LastID for the next page.
func (c *Client) ListConversations(ctx context.Context, p ListConversationsParams) (*ConversationPage, error) {
	q := url.Values{}
	setQuery(q, "user", c.userOr(p.User))
	setQuery(q, "last_id", p.LastID)
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	setQuery(q, "sort_by", p.SortBy)
	var out ConversationPage
	if err := c.do(ctx, &request{method: http.MethodGet, path: "/conversations", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Last reports whether no page follows: has_more is false or the page is
// empty (docs/api §5).
func (p *ConversationPage) Last() bool { return !p.HasMore || len(p.Data) == 0 }

// ConversationLister lists conversations; *Client is one.
type ConversationLister interface {
	ListConversations(ctx context.Context, p ListConversationsParams) (*ConversationPage, error)
}

// ConversationPages yields the pages of GET /conversations from p.LastID on,
// at most maxPages (0: no bound). The cursor is the last row's id (last_id,
// docs/api §5), written to p.LastID before a page is yielded; p is read
// before each request, so the loop body may lower p.Limit to ask only for
// what it still needs, and a walk stopped early resumes from p.
func ConversationPages(ctx context.Context, l ConversationLister, p *ListConversationsParams, maxPages int) iter.Seq2[*ConversationPage, error] {
	return walk(maxPages,
		func() (*ConversationPage, error) { return l.ListConversations(ctx, *p) },
		func(page *ConversationPage) { p.LastID = page.Data[len(page.Data)-1].ID })
}

// ListMessagesParams selects a page of GET /messages (docs/api §6). Zero values
// are omitted from the query; User falls back to the client's default.
type ListMessagesParams struct {
	ConversationID string
	User           string
	FirstID        string
	Limit          int
}

// ListMessages returns one page of a conversation's history (docs/api §6). Data
// is oldest-first within the page; the next (older) page is requested with
// FirstID = Data[0].ID.
func (c *Client) ListMessages(ctx context.Context, p ListMessagesParams) (*MessagePage, error) {
	q := url.Values{}
	setQuery(q, "conversation_id", p.ConversationID)
	setQuery(q, "user", c.userOr(p.User))
	setQuery(q, "first_id", p.FirstID)
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	var out MessagePage
	if err := c.do(ctx, &request{method: http.MethodGet, path: "/messages", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Last reports whether no older page follows: has_more is false or the page
// is empty (docs/api §6).
func (p *MessagePage) Last() bool { return !p.HasMore || len(p.Data) == 0 }

// MessageLister lists messages; *Client is one.
type MessageLister interface {
	ListMessages(ctx context.Context, p ListMessagesParams) (*MessagePage, error)
}

// MessagePages yields a conversation's history from the newest page to the
// oldest, at most maxPages (0: no bound). Rows are oldest-first inside a
// page, and the cursor is the first row's id (first_id, docs/api §6),
// written to p.FirstID before a page is yielded.
func MessagePages(ctx context.Context, l MessageLister, p *ListMessagesParams, maxPages int) iter.Seq2[*MessagePage, error] {
	return walk(maxPages,
		func() (*MessagePage, error) { return l.ListMessages(ctx, *p) },
		func(page *MessagePage) { p.FirstID = page.Data[0].ID })
}

// RenameConversation sets a conversation's name, or lets Dify generate one
// when req.AutoGenerate is true (docs/api §7). An empty req.User falls back to the
// client's default user.
func (c *Client) RenameConversation(ctx context.Context, conversationID string, req RenameRequest) (*Conversation, error) {
	req.User = c.userOr(req.User)
	body, err := newJSONBody(req)
	if err != nil {
		return nil, err
	}
	var out Conversation
	r := &request{method: http.MethodPost, path: "/conversations/" + pathEscape(conversationID) + "/name",
		body: body, class: retryIdempotent}
	if err := c.do(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteConversation deletes a conversation (docs/api §8). The user goes in a JSON
// body, which Dify requires even on DELETE ({} when no user is known). Any
// 2xx is success: servers answer 204 or 200 {"result":"success"} depending
// on their version (docs/api §21). A 404 means the conversation is already gone,
// which a caller deleting usually treats as success (IsNotFound).
func (c *Client) DeleteConversation(ctx context.Context, conversationID, user string) error {
	body, err := newJSONBody(DeleteRequest{User: c.userOr(user)})
	if err != nil {
		return err
	}
	return c.do(ctx, &request{method: http.MethodDelete, path: "/conversations/" + pathEscape(conversationID),
		body: body, class: retryIdempotent}, nil)
}

// AudioToText transcribes audio (docs/api §11), streaming it from up.Reader. When
// up.ContentType is empty, a Dify audio extension (mp3, m4a, wav, amr, mpga,
// mp4, mpeg, webm) yields "audio/<ext>", the form Dify checks; other names
// fall back to the extension's MIME type. Not retried once sent: the audio
// stream cannot be replayed.
func (c *Client) AudioToText(ctx context.Context, up Upload) (*AudioText, error) {
	var out AudioText
	if err := c.upload(ctx, "/audio-to-text", up, true, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Audio is a text-to-audio reply; the caller closes Body.
type Audio struct {
	Body        io.ReadCloser
	ContentType string // e.g. "audio/mpeg" (docs/api §12)
}

// TextToAudio synthesises speech for a message or a text (docs/api §12) and
// returns the audio as it arrives; the caller must close Body. An empty
// req.User falls back to the client's default user.
func (c *Client) TextToAudio(ctx context.Context, req TextToAudioRequest) (*Audio, error) {
	req.User = c.userOr(req.User)
	body, err := newJSONBody(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, &request{method: http.MethodPost, path: "/text-to-audio", body: body,
		accept: "audio/*, */*", class: retryIdempotent})
	if err != nil {
		return nil, err
	}
	return &Audio{Body: resp.Body, ContentType: resp.Header.Get("Content-Type")}, nil
}

// AppInfo returns the app's name, description, tags and mode (docs/api §13).
func (c *Client) AppInfo(ctx context.Context) (*AppInfo, error) {
	var out AppInfo
	if err := c.do(ctx, &request{method: http.MethodGet, path: "/info"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AppParameters returns the app's input form and feature switches (docs/api §14).
func (c *Client) AppParameters(ctx context.Context) (*AppParameters, error) {
	var out AppParameters
	if err := c.do(ctx, &request{method: http.MethodGet, path: "/parameters"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AppMeta returns the app's tool icons (docs/api §15).
func (c *Client) AppMeta(ctx context.Context) (*AppMeta, error) {
	var out AppMeta
	if err := c.do(ctx, &request{method: http.MethodGet, path: "/meta"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AppSite returns the app's WebApp settings (docs/api §16).
func (c *Client) AppSite(ctx context.Context) (*AppSite, error) {
	var out AppSite
	if err := c.do(ctx, &request{method: http.MethodGet, path: "/site"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func setQuery(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}
