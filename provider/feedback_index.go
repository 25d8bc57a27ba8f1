package provider

import (
	"context"
	"sync"

	"github.com/difyops/terraform-provider-dify/dify"
)

// feedbackIndex answers "what is the end user's feedback on message M" for
// every dify_message_feedback in one Terraform run from one shared listing
// of GET /app/feedbacks (docs/api §26), so N resources cost ceil(F/100) requests
// for F feedback rows of the app, not N. The API has no per-message read:
// GET /messages shows only the rating, not the comment, and needs the
// conversation id.
//
// The listing is fetched once, lazily, on the first lookup of the run, and
// holds only end-user rows (from_source "user"): those are the rows the
// Service API writes; console ("admin") feedback on the same message is a
// separate row that the provider never manages. A message has one end-user
// row at most, because only the message's own end user can rate it.
type feedbackIndex struct {
	client feedbackAPI

	mu        sync.Mutex
	loaded    bool
	byMessage map[string]dify.AppFeedback
}

type feedbackAPI interface {
	ListAppFeedbacks(ctx context.Context, p dify.ListAppFeedbacksParams) (*dify.AppFeedbackPage, error)
}

// feedbackPageSize is within Dify's 1–101 bound for limit (docs/api §26).
const feedbackPageSize = 100

// maxFeedbackPages bounds one listing (1,000,000 rows).
const maxFeedbackPages = 10000

func newFeedbackIndex(c feedbackAPI) *feedbackIndex {
	return &feedbackIndex{client: c}
}

// Lookup returns the end-user feedback on messageID, or nil when there is
// none.
func (x *feedbackIndex) Lookup(ctx context.Context, messageID string) (*dify.AppFeedback, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.loaded {
		rows := map[string]dify.AppFeedback{}
		for p, err := range dify.AppFeedbackPages(ctx, x.client, dify.ListAppFeedbacksParams{Limit: feedbackPageSize}, maxFeedbackPages) {
			if err != nil {
				return nil, err
			}
			for _, f := range p.Data {
				if f.FromSource == dify.FeedbackFromUser {
					if _, seen := rows[f.MessageID]; !seen { // newest first: keep the newest
						rows[f.MessageID] = f
					}
				}
			}
		}
		x.byMessage, x.loaded = rows, true
	}
	if f, ok := x.byMessage[messageID]; ok {
		return &f, nil
	}
	return nil, nil
}

// Forget drops a revoked feedback, so a later lookup in the same run does
// not report it.
func (x *feedbackIndex) Forget(messageID string) {
	x.mu.Lock()
	delete(x.byMessage, messageID)
	x.mu.Unlock()
}
