package store

import (
	"errors"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
)

// ErrNoFeedback is a revoke (rating null) of a message without feedback
// (Dify's MessageService.create_feedback raises ValueError then, docs/api §25).
var ErrNoFeedback = errors.New("rating cannot be None when feedback not exists")

// Feedback is one end user's rating of a message (Dify's MessageFeedback
// with from_source "user", docs/api §25–§26). The mock has no console, so every
// row is an end user's.
type Feedback struct {
	ID             string
	MessageID      string
	ConversationID string
	Rating         string
	Content        *string
	FromEndUserID  string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// SetFeedback rates a message for its owner, as MessageService.create_feedback
// does (docs/api §25): a rating on a message without feedback inserts a row; a
// rating on one with feedback overwrites rating and content (created_at and
// updated_at are kept: the model has no onupdate); rating "" deletes the
// row, or fails with ErrNoFeedback when there is none. The message must
// belong to ownerID and its conversation must be live, else
// ErrMessageNotFound.
func (s *Store) SetFeedback(messageID, ownerID, rating string, content *string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.messages[messageID]
	if !ok || sm.ownerID != ownerID {
		return ErrMessageNotFound
	}
	c, ok := s.convs[sm.msg.ConversationID]
	if !ok || c.deleted {
		return ErrMessageNotFound
	}
	// The feedback row counts against the state bound with its
	// conversation (a comment may be megabytes long).
	before := feedbackSize(sm.feedback)
	defer func() {
		if delta := feedbackSize(sm.feedback) - before; delta != 0 {
			s.grow(c.elem, delta)
			s.evict(c.elem)
		}
	}()
	if content != nil {
		v := *content
		content = &v
	}
	switch {
	case rating == "" && sm.feedback == nil:
		return ErrNoFeedback
	case rating == "":
		for i, f := range s.feedbacks {
			if f == sm.feedback {
				s.feedbacks = append(s.feedbacks[:i], s.feedbacks[i+1:]...)
				break
			}
		}
		sm.feedback = nil
		sm.msg.Feedback = nil
		return nil
	case sm.feedback == nil:
		now := s.now()
		sm.feedback = &Feedback{
			ID: s.newID(), MessageID: messageID, ConversationID: sm.msg.ConversationID, Rating: rating,
			Content: content, FromEndUserID: ownerID, CreatedAt: now, UpdatedAt: now,
		}
		s.feedbacks = append(s.feedbacks, sm.feedback)
	default:
		sm.feedback.Rating, sm.feedback.Content = rating, content
	}
	// A new value, never a change in place: copies of the message handed
	// out earlier keep their own pointer.
	sm.msg.Feedback = &dify.Feedback{Rating: rating}
	return nil
}

// ListFeedbacks pages every feedback of the app, newest first, as
// MessageService.get_all_messages_feedbacks does (docs/api §26): offset
// (page-1)*limit. Feedback on deleted conversations is gone with them.
func (s *Store) ListFeedbacks(page, limit int) []Feedback {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []Feedback{}
	if page < 1 || limit < 1 || page-1 > len(s.feedbacks)/limit {
		return out // past the end (and no overflow computing the offset)
	}
	skip := (page - 1) * limit
	// s.feedbacks is in creation order; Dify orders created_at DESC.
	for i := len(s.feedbacks) - 1; i >= 0 && len(out) < limit; i-- {
		f := s.feedbacks[i]
		if c, ok := s.convs[f.ConversationID]; !ok || c.deleted {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		cp := *f
		if f.Content != nil {
			v := *f.Content
			cp.Content = &v
		}
		out = append(out, cp)
	}
	return out
}
