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
	"time"
)

// Operations of docs/api §25–§31: message feedback, the app's feedback list,
// annotations, annotation-reply jobs, file preview and conversation
// variables. Dify serves all of them to `agent` keys except the
// conversation variables, which answer 400 not_chat_app there (docs/api §24.2).

// SendFeedback rates a message for its end user, or revokes the rating when
// req.Rating is "" (docs/api §25). Rating again overwrites rating and content.
// Revoking when no rating exists is a 400 invalid_param. The call is
// retried like any idempotent call: a repeated rating changes nothing, and a
// revoke retried after it succeeded answers that 400, which
// IsFeedbackAlreadyRevoked recognises.
func (c *Client) SendFeedback(ctx context.Context, messageID string, req FeedbackRequest) error {
	req.User = c.userOr(req.User)
	body, err := newJSONBody(req)
	if err != nil {
		return err
	}
	return c.do(ctx, &request{method: http.MethodPost, path: "/messages/" + pathEscape(messageID) + "/feedbacks",
		body: body, class: retryIdempotent}, nil)
}

// feedbackNotExists is Dify's message when a revoke finds no feedback
// (MessageService.create_feedback).
const feedbackNotExists = "rating cannot be None when feedback not exists"

// IsFeedbackAlreadyRevoked reports the 400 Dify answers when a revoke finds
// no feedback to delete (docs/api §25): for a caller removing feedback this
// means the goal is already reached.
func IsFeedbackAlreadyRevoked(err error) bool {
	apiErr, ok := AsAPIError(err)
	return ok && !apiErr.Stream && apiErr.Status == http.StatusBadRequest && apiErr.Message == feedbackNotExists
}

// ListAppFeedbacksParams selects a page of GET /app/feedbacks (docs/api §26);
// zero values leave the server's defaults (page 1, limit 20; Dify allows
// 1–101).
type ListAppFeedbacksParams struct {
	Page  int
	Limit int
}

// ListAppFeedbacks returns one page of every feedback of the app, end users'
// and console accounts' alike, newest first (docs/api §26). The result's Data is
// never nil.
func (c *Client) ListAppFeedbacks(ctx context.Context, p ListAppFeedbacksParams) (*AppFeedbackPage, error) {
	q := url.Values{}
	setInt(q, "page", p.Page)
	setInt(q, "limit", p.Limit)
	var out AppFeedbackPage
	if err := c.do(ctx, &request{method: http.MethodGet, path: "/app/feedbacks", query: q}, &out); err != nil {
		return nil, err
	}
	if out.Data == nil {
		out.Data = []AppFeedback{}
	}
	return &out, nil
}

// feedbackPage is one page of GET /app/feedbacks with the limit it was
// asked for: the answer has no has_more, so a short page is the last one
// (docs/api §26).
type feedbackPage struct {
	*AppFeedbackPage
	limit int
}

func (p feedbackPage) Last() bool { return len(p.Data) < p.limit }

// AppFeedbackLister lists the app's feedback; *Client is one.
type AppFeedbackLister interface {
	ListAppFeedbacks(ctx context.Context, p ListAppFeedbacksParams) (*AppFeedbackPage, error)
}

// AppFeedbackPages yields the pages of GET /app/feedbacks from p.Page (0 or
// 1: the first) on, at most maxPages (0: no bound). The answer has no
// has_more: a page shorter than the limit asked for is the last one
// (docs/api §26).
func AppFeedbackPages(ctx context.Context, l AppFeedbackLister, p ListAppFeedbacksParams, maxPages int) iter.Seq2[*AppFeedbackPage, error] {
	return numbered(maxPages, &p.Page,
		func() (feedbackPage, error) {
			page, err := l.ListAppFeedbacks(ctx, p)
			return feedbackPage{page, limitOr(p.Limit)}, err
		},
		func(f feedbackPage) *AppFeedbackPage { return f.AppFeedbackPage })
}

// ListAnnotationsParams selects a page of GET /apps/annotations (docs/api §27.3).
// Zero values leave the server's defaults (page 1, limit 20, no keyword).
type ListAnnotationsParams struct {
	Page  int
	Limit int
	// Keyword filters on question or answer, case-insensitive substring.
	Keyword string
}

// ListAnnotations returns one page of the app's annotations, newest first
// (docs/api §27.3). The result's Data is never nil.
func (c *Client) ListAnnotations(ctx context.Context, p ListAnnotationsParams) (*AnnotationPage, error) {
	q := url.Values{}
	setInt(q, "page", p.Page)
	setInt(q, "limit", p.Limit)
	setQuery(q, "keyword", p.Keyword)
	var out AnnotationPage
	if err := c.do(ctx, &request{method: http.MethodGet, path: "/apps/annotations", query: q}, &out); err != nil {
		return nil, err
	}
	if out.Data == nil {
		out.Data = []Annotation{}
	}
	return &out, nil
}

// annotationPage is one page of GET /apps/annotations with the page number
// and limit it was asked for: has_more is unreliable on released servers
// (true on an exactly full last page), so page × limit ≥ total ends the
// walk, as does an empty page (docs/api §27.3).
type annotationPage struct {
	*AnnotationPage
	page, limit int
}

func (p annotationPage) Last() bool { return len(p.Data) == 0 || p.page*p.limit >= p.Total }

// AnnotationLister lists annotations; *Client is one.
type AnnotationLister interface {
	ListAnnotations(ctx context.Context, p ListAnnotationsParams) (*AnnotationPage, error)
}

// AnnotationPages yields the pages of GET /apps/annotations from p.Page (0
// or 1: the first) on, at most maxPages (0: no bound). has_more is not
// trusted: the walk ends when the pages asked for cover total, or at an
// empty page (docs/api §27.3).
func AnnotationPages(ctx context.Context, l AnnotationLister, p ListAnnotationsParams, maxPages int) iter.Seq2[*AnnotationPage, error] {
	return numbered(maxPages, &p.Page,
		func() (annotationPage, error) {
			page, err := l.ListAnnotations(ctx, p)
			return annotationPage{page, p.Page, limitOr(p.Limit)}, err
		},
		func(a annotationPage) *AnnotationPage { return a.AnnotationPage })
}

// CreateAnnotation adds an annotation (docs/api §27.4). It is not retried once
// the request may have reached the server — a retry could create a second
// annotation — except on a 429 that proves it was refused unprocessed (see
// retryClass).
func (c *Client) CreateAnnotation(ctx context.Context, req AnnotationRequest) (*Annotation, error) {
	body, err := newJSONBody(req)
	if err != nil {
		return nil, err
	}
	var out Annotation
	if err := c.do(ctx, &request{method: http.MethodPost, path: "/apps/annotations", body: body,
		class: retryUnsentOnly}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateAnnotation replaces an annotation's question and answer (docs/api §27.5);
// its hit count and creation time are kept. 404 when it does not exist.
func (c *Client) UpdateAnnotation(ctx context.Context, annotationID string, req AnnotationRequest) (*Annotation, error) {
	body, err := newJSONBody(req)
	if err != nil {
		return nil, err
	}
	var out Annotation
	if err := c.do(ctx, &request{method: http.MethodPut, path: "/apps/annotations/" + pathEscape(annotationID),
		body: body, class: retryIdempotent}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteAnnotation deletes an annotation and its hit history (docs/api §27.6).
// A 404 means it is already gone (IsNotFound), which a caller deleting
// usually treats as success.
func (c *Client) DeleteAnnotation(ctx context.Context, annotationID string) error {
	return c.do(ctx, &request{method: http.MethodDelete, path: "/apps/annotations/" + pathEscape(annotationID),
		class: retryIdempotent}, nil)
}

// StartAnnotationReply starts an asynchronous job that enables or disables
// annotation reply (docs/api §28.1); action is AnnotationReplyEnable or
// AnnotationReplyDisable. Dify requires req's fields for both actions. The
// returned job is usually JobStatusWaiting; follow it with AnnotationReplyStatus
// or WaitAnnotationReply. Retried like an idempotent call: a second job with
// the same settings ends in the same state.
func (c *Client) StartAnnotationReply(ctx context.Context, action string, req AnnotationReplyRequest) (*AnnotationReplyJob, error) {
	body, err := newJSONBody(req)
	if err != nil {
		return nil, err
	}
	var out AnnotationReplyJob
	if err := c.do(ctx, &request{method: http.MethodPost, path: "/apps/annotation-reply/" + pathEscape(action),
		body: body, class: retryIdempotent}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AnnotationReplyStatus reads a job's state (docs/api §28.2); action must be the
// one the job was started with. Dify forgets a finished job after ten
// minutes and then answers "The job does not exist." (400 on released
// servers, 404 on the newest; see IsAnnotationReplyJobNotFound).
func (c *Client) AnnotationReplyStatus(ctx context.Context, action, jobID string) (*AnnotationReplyJob, error) {
	var out AnnotationReplyJob
	r := &request{method: http.MethodGet,
		path: "/apps/annotation-reply/" + pathEscape(action) + "/status/" + pathEscape(jobID)}
	if err := c.do(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// jobNotExists is Dify's message for an unknown or expired job.
const jobNotExists = "The job does not exist."

// IsAnnotationReplyJobNotFound reports Dify's answer for an unknown, expired or
// wrong-action annotation-reply job (docs/api §28.2), whichever status the
// server version uses for it.
func IsAnnotationReplyJobNotFound(err error) bool {
	apiErr, ok := AsAPIError(err)
	return ok && !apiErr.Stream && (apiErr.Status == http.StatusBadRequest || apiErr.Status == http.StatusNotFound) &&
		apiErr.Message == jobNotExists
}

// AnnotationReplyJobError is a finished annotation-reply job that ended in `error`
// (docs/api §28.2). Message is the worker's error text.
type AnnotationReplyJobError struct {
	Action  string
	JobID   string
	Message string
}

func (e *AnnotationReplyJobError) Error() string {
	return fmt.Sprintf("dify: annotation reply %s job %s failed: %s", e.Action, e.JobID, e.Message)
}

// DefaultJobPollInterval is WaitAnnotationReply's interval when given 0:
// the API reference suggests polling every 1–2 s (docs/api §28.3).
const DefaultJobPollInterval = time.Second

// WaitAnnotationReply polls a job every interval (0 means
// DefaultJobPollInterval) until it is completed or failed, or ctx ends. A
// failed job returns the job together with an *AnnotationReplyJobError.
// Bound the wait with ctx: a Dify without a running worker leaves jobs
// waiting for ever.
func (c *Client) WaitAnnotationReply(ctx context.Context, action, jobID string, interval time.Duration) (*AnnotationReplyJob, error) {
	if interval <= 0 {
		interval = DefaultJobPollInterval
	}
	var last *AnnotationReplyJob
	for {
		job, err := c.AnnotationReplyStatus(ctx, action, jobID)
		if err != nil {
			// A deadline that cuts a poll after earlier ones answered is
			// still "the job did not finish in time": say what it was doing.
			if last != nil && ctx.Err() != nil {
				return last, stillRunning(action, jobID, last, ctx.Err())
			}
			return nil, err
		}
		last = job
		switch job.JobStatus {
		case JobStatusCompleted:
			return job, nil
		case JobStatusError:
			return job, &AnnotationReplyJobError{Action: action, JobID: jobID, Message: job.ErrorMsg}
		}
		if !sleep(ctx, interval) {
			return job, stillRunning(action, jobID, job, ctx.Err())
		}
	}
}

func stillRunning(action, jobID string, job *AnnotationReplyJob, cause error) error {
	return fmt.Errorf("dify: annotation reply %s job %s still %s: %w", action, jobID, job.JobStatus, cause)
}

// FilePreviewParams selects how GET /files/{file_id}/preview answers (docs/api §30).
type FilePreviewParams struct {
	// AsAttachment asks for Content-Disposition: attachment (and a generic
	// application/octet-stream type).
	AsAttachment bool
	// User is sent as the query's user; Dify does not use it for access
	// control. Empty means the client's default user.
	User string
}

// FileContent is a previewed file; the caller closes Body.
type FileContent struct {
	Body          io.ReadCloser
	ContentType   string
	ContentLength int64 // -1 when unknown
	// Filename is taken from Content-Disposition when the server sent one
	// (AsAttachment), else "".
	Filename string
}

// PreviewFile downloads an uploaded file that was sent in a chat turn of
// this app (docs/api §30): Dify answers 404 file_not_found for a file no message
// of the app references, 403 file_access_denied for another app's file.
// The caller must close the returned Body.
func (c *Client) PreviewFile(ctx context.Context, fileID string, p FilePreviewParams) (*FileContent, error) {
	q := url.Values{}
	if p.AsAttachment {
		q.Set("as_attachment", "true")
	}
	setQuery(q, "user", c.userOr(p.User))
	resp, err := c.send(ctx, &request{method: http.MethodGet, path: "/files/" + pathEscape(fileID) + "/preview",
		query: q, accept: "*/*"})
	if err != nil {
		return nil, err
	}
	fc := &FileContent{Body: resp.Body, ContentType: resp.Header.Get("Content-Type"), ContentLength: resp.ContentLength}
	if cd := resp.Header.Get("Content-Disposition"); cd != "" {
		if _, params, err := mime.ParseMediaType(cd); err == nil {
			fc.Filename = params["filename"] // mime decodes filename*=UTF-8''… into this key
		}
	}
	return fc, nil
}

// ListConversationVariablesParams selects a page of GET
// /conversations/{id}/variables (docs/api §31.1). Zero values are omitted.
type ListConversationVariablesParams struct {
	User   string
	LastID string
	Limit  int
	// VariableName filters by a case-insensitive substring of the name;
	// Dify allows only letters, digits, '-', '_' and '.'.
	VariableName string
}

// ListConversationVariables returns one page of a conversation's variables,
// oldest first (docs/api §31.1). `agent` apps answer 400 not_chat_app. The
// result's Data is never nil.
func (c *Client) ListConversationVariables(ctx context.Context, conversationID string, p ListConversationVariablesParams) (*ConversationVariablePage, error) {
	q := url.Values{}
	setQuery(q, "user", c.userOr(p.User))
	setQuery(q, "last_id", p.LastID)
	setInt(q, "limit", p.Limit)
	setQuery(q, "variable_name", p.VariableName)
	var out ConversationVariablePage
	r := &request{method: http.MethodGet, path: "/conversations/" + pathEscape(conversationID) + "/variables", query: q}
	if err := c.do(ctx, r, &out); err != nil {
		return nil, err
	}
	if out.Data == nil {
		out.Data = []ConversationVariable{}
	}
	return &out, nil
}

// UpdateConversationVariable sets a conversation variable's value (docs/api
// §31.2); the value must match the variable's type (400 bad_request
// otherwise). An empty user falls back to the client's default user.
func (c *Client) UpdateConversationVariable(ctx context.Context, conversationID, variableID string, value any, user string) (*ConversationVariable, error) {
	body, err := newJSONBody(ConversationVariableUpdate{Value: value, User: c.userOr(user)})
	if err != nil {
		return nil, err
	}
	var out ConversationVariable
	r := &request{method: http.MethodPut,
		path: "/conversations/" + pathEscape(conversationID) + "/variables/" + pathEscape(variableID),
		body: body, class: retryIdempotent}
	if err := c.do(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func setInt(q url.Values, key string, v int) {
	if v != 0 {
		q.Set(key, strconv.Itoa(v))
	}
}
