package dify

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Wire types of the Service API endpoints an app key can call besides chat
// (docs/api §24–§31): message feedback, the app's feedback list, annotations,
// annotation-reply jobs, file preview and conversation variables.

// Feedback ratings (docs/api §25). A revoke is sent as rating null; see
// FeedbackRequest.
const (
	RatingLike    = "like"
	RatingDislike = "dislike"
)

// FeedbackRequest is the body of POST /messages/{message_id}/feedbacks
// (docs/api §25; Dify's MessageFeedbackPayload).
type FeedbackRequest struct {
	// Rating is RatingLike, RatingDislike, or "" to revoke the user's
	// feedback (sent as JSON null, which Dify reads as "delete my row").
	Rating string
	// Content is an optional free-text comment. Dify overwrites it on every
	// rating, so nil clears an earlier comment.
	Content *string
	// User must own the message; empty means the client's default user.
	User string
}

// MarshalJSON sends an empty Rating as null and always sends user, as
// Dify's payload model expects.
func (r FeedbackRequest) MarshalJSON() ([]byte, error) {
	var rating *string
	if r.Rating != "" {
		rating = &r.Rating
	}
	return json.Marshal(struct {
		Rating  *string `json:"rating"`
		Content *string `json:"content,omitempty"`
		User    string  `json:"user"`
	}{rating, r.Content, r.User})
}

// Feedback sources in GET /app/feedbacks (docs/api §26).
const (
	FeedbackFromUser  = "user"  // an end user through the Service API or WebApp
	FeedbackFromAdmin = "admin" // a console account
)

// AppFeedback is one row of GET /app/feedbacks (docs/api §26; Dify's
// MessageFeedback.to_dict). Timestamps are ISO-8601 strings without a zone
// (naive UTC), e.g. "2025-05-13T08:21:47.123456".
type AppFeedback struct {
	ID             string  `json:"id"`
	AppID          string  `json:"app_id"`
	ConversationID string  `json:"conversation_id"`
	MessageID      string  `json:"message_id"`
	Rating         string  `json:"rating"`
	Content        *string `json:"content"`
	FromSource     string  `json:"from_source"`
	FromEndUserID  *string `json:"from_end_user_id"`
	FromAccountID  *string `json:"from_account_id"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      string  `json:"updated_at"`
}

// AppFeedbackPage is the GET /app/feedbacks answer (docs/api §26). Dify sends
// neither has_more nor total: a short (or empty) page is the last one.
type AppFeedbackPage struct {
	Data []AppFeedback `json:"data"`
}

// Annotation is a question/answer pair that can answer chat turns without
// the model (docs/api §27.2). Answer is Dify's `content` column.
type Annotation struct {
	ID        string `json:"id"`
	Question  string `json:"question"`
	Answer    string `json:"answer"`
	HitCount  int    `json:"hit_count"`
	CreatedAt int64  `json:"created_at"`
}

// AnnotationPage is the GET /apps/annotations answer (docs/api §27.3). Limit and
// Page echo the request; Total counts every matching annotation. HasMore is
// what the server computed; released servers set it whenever a page is
// exactly full, so prefer Page*Limit < Total to decide whether to go on.
type AnnotationPage struct {
	Data    []Annotation `json:"data"`
	HasMore bool         `json:"has_more"`
	Limit   int          `json:"limit"`
	Total   int          `json:"total"`
	Page    int          `json:"page"`
}

// AnnotationRequest is the body of POST /apps/annotations and PUT
// /apps/annotations/{id} (docs/api §27.4–§27.5): both fields are required; PUT
// replaces both.
type AnnotationRequest struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// Annotation reply actions (docs/api §28.1).
const (
	AnnotationReplyEnable  = "enable"
	AnnotationReplyDisable = "disable"
)

// AnnotationReplyRequest is the body of POST /apps/annotation-reply/{action}
// (docs/api §28.1). Dify requires all three fields for both actions; disable
// ignores their values.
type AnnotationReplyRequest struct {
	// ScoreThreshold is the minimum similarity for an annotation to answer
	// a query; 0 behaves like 1 (exact matches only, docs/api §29.1).
	ScoreThreshold        float64 `json:"score_threshold"`
	EmbeddingProviderName string  `json:"embedding_provider_name"`
	EmbeddingModelName    string  `json:"embedding_model_name"`
}

// Annotation reply job states (docs/api §28.2).
const (
	JobStatusWaiting    = "waiting"
	JobStatusProcessing = "processing"
	JobStatusCompleted  = "completed"
	JobStatusError      = "error"
)

// AnnotationReplyJob is the answer of POST /apps/annotation-reply/{action}
// and of its status poll (docs/api §28.1–§28.2). ErrorMsg is set only when
// JobStatus is JobStatusError (the start call sends no error_msg at all).
type AnnotationReplyJob struct {
	JobID     string `json:"job_id"`
	JobStatus string `json:"job_status"`
	ErrorMsg  string `json:"error_msg"`
}

// Done reports whether the job reached a final state (completed or error).
func (j *AnnotationReplyJob) Done() bool {
	return j.JobStatus == JobStatusCompleted || j.JobStatus == JobStatusError
}

// AnnotationReply is message_end.metadata.annotation_reply (docs/api §29.2): the
// annotation that answered the turn and the account that wrote it.
type AnnotationReply struct {
	ID      string `json:"id"`
	Account struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"account"`
}

// ConversationVariable is one conversation variable (docs/api §31; Dify's
// ConversationVariableResponse). Value is always text: Dify renders
// non-string values with Python's str(), so an object arrives as "{'k': 'v'}"
// on the servers read for this package.
type ConversationVariable struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	ValueType   string  `json:"value_type"`
	Value       *string `json:"value"`
	Description *string `json:"description"`
	CreatedAt   int64   `json:"created_at"`
	UpdatedAt   int64   `json:"updated_at"`
}

// ConversationVariablePage is the GET /conversations/{id}/variables answer
// (docs/api §31.1).
type ConversationVariablePage struct {
	Limit   int                    `json:"limit"`
	HasMore bool                   `json:"has_more"`
	Data    []ConversationVariable `json:"data"`
}

// ConversationVariableUpdate is the body of PUT
// /conversations/{id}/variables/{variable_id} (docs/api §31.2). Value is any JSON
// value of the variable's type.
type ConversationVariableUpdate struct {
	Value any    `json:"value"`
	User  string `json:"user,omitempty"`
}

// Annotation decodes AnnotationReply: the annotation that answered the turn
// (docs/api §29.2), or nil when none did (the key absent, as older servers send
// it, or null, as newer ones do, docs/api §29.4).
func (m *MessageEndMetadata) Annotation() (*AnnotationReply, error) {
	raw := bytes.TrimSpace(m.AnnotationReply)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var a AnnotationReply
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("dify: decoding message_end.metadata.annotation_reply: %w", err)
	}
	return &a, nil
}
