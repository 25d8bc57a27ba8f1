package dify_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
)

// fakeListings serves every listing from fixed rows and records each
// request's parameters.
type fakeListings struct {
	conversations []string // ids, newest first
	messages      []string // ids, oldest first
	feedbacks     int
	annotations   int
	hasMoreLies   bool // annotations: has_more true on an exactly full last page
	failAt        int  // fail the n-th request (1-based); 0: never
	requests      []string
}

var errFake = errors.New("fake failure")

func (f *fakeListings) fail() bool { return f.failAt > 0 && len(f.requests) == f.failAt }

func (f *fakeListings) ListConversations(_ context.Context, p dify.ListConversationsParams) (*dify.ConversationPage, error) {
	f.requests = append(f.requests, fmt.Sprintf("last_id=%s limit=%d", p.LastID, p.Limit))
	if f.fail() {
		return nil, errFake
	}
	start := 0
	for i, id := range f.conversations {
		if id == p.LastID {
			start = i + 1
		}
	}
	end := min(start+p.Limit, len(f.conversations))
	page := &dify.ConversationPage{Limit: p.Limit, HasMore: end < len(f.conversations)}
	for _, id := range f.conversations[start:end] {
		page.Data = append(page.Data, dify.Conversation{ID: id})
	}
	return page, nil
}

func (f *fakeListings) ListMessages(_ context.Context, p dify.ListMessagesParams) (*dify.MessagePage, error) {
	f.requests = append(f.requests, "first_id="+p.FirstID)
	end := len(f.messages)
	for i, id := range f.messages {
		if id == p.FirstID {
			end = i
		}
	}
	start := max(end-p.Limit, 0)
	page := &dify.MessagePage{Limit: p.Limit, HasMore: start > 0}
	for _, id := range f.messages[start:end] {
		page.Data = append(page.Data, dify.Message{ID: id})
	}
	return page, nil
}

func (f *fakeListings) ListAppFeedbacks(_ context.Context, p dify.ListAppFeedbacksParams) (*dify.AppFeedbackPage, error) {
	f.requests = append(f.requests, fmt.Sprintf("page=%d", p.Page))
	if f.fail() {
		return nil, errFake
	}
	limit := p.Limit
	if limit == 0 {
		limit = 20
	}
	page := &dify.AppFeedbackPage{Data: []dify.AppFeedback{}}
	for i := (p.Page - 1) * limit; i < min(p.Page*limit, f.feedbacks); i++ {
		page.Data = append(page.Data, dify.AppFeedback{ID: fmt.Sprint(i)})
	}
	return page, nil
}

func (f *fakeListings) ListAnnotations(_ context.Context, p dify.ListAnnotationsParams) (*dify.AnnotationPage, error) {
	f.requests = append(f.requests, fmt.Sprintf("page=%d", p.Page))
	page := &dify.AnnotationPage{Data: []dify.Annotation{}, Total: f.annotations, Page: p.Page, Limit: p.Limit}
	for i := (p.Page - 1) * p.Limit; i < min(p.Page*p.Limit, f.annotations); i++ {
		page.Data = append(page.Data, dify.Annotation{ID: fmt.Sprint(i)})
	}
	page.HasMore = p.Page*p.Limit < f.annotations || (f.hasMoreLies && len(page.Data) == p.Limit)
	return page, nil
}

func TestConversationPagesFollowLastIDAndResume(t *testing.T) {
	f := &fakeListings{conversations: []string{"c5", "c4", "c3", "c2", "c1"}}
	p := dify.ListConversationsParams{Limit: 2}
	var got []string
	for page, err := range dify.ConversationPages(context.Background(), f, &p, 0) {
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Data {
			got = append(got, c.ID)
		}
		if len(got) == 2 {
			p.Limit = 1 // the body may shrink the next request
		}
	}
	want := []string{"last_id= limit=2", "last_id=c4 limit=1", "last_id=c3 limit=1", "last_id=c2 limit=1"}
	if !reflect.DeepEqual(got, f.conversations) || !reflect.DeepEqual(f.requests, want) {
		t.Errorf("rows %v requests %v", got, f.requests)
	}

	// Stopped early, the walk resumes from the parameters; a bound stops it.
	f.requests = nil
	p = dify.ListConversationsParams{Limit: 2}
	for range dify.ConversationPages(context.Background(), f, &p, 0) {
		break
	}
	if p.LastID != "c4" {
		t.Errorf("cursor after one page %q", p.LastID)
	}
	n := 0
	for range dify.ConversationPages(context.Background(), f, &p, 1) {
		n++
	}
	if n != 1 || p.LastID != "c2" || len(f.requests) != 2 {
		t.Errorf("bounded resume: %d page(s), cursor %q, requests %v", n, p.LastID, f.requests)
	}
}

func TestMessagePagesWalkBackToTheOldest(t *testing.T) {
	f := &fakeListings{messages: []string{"m1", "m2", "m3", "m4", "m5"}}
	p := dify.ListMessagesParams{Limit: 2}
	var pages [][]string
	for page, err := range dify.MessagePages(context.Background(), f, &p, 0) {
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		pages = append(pages, ids)
	}
	want := [][]string{{"m4", "m5"}, {"m2", "m3"}, {"m1"}}
	if !reflect.DeepEqual(pages, want) || !reflect.DeepEqual(f.requests, []string{"first_id=", "first_id=m4", "first_id=m2"}) {
		t.Errorf("pages %v requests %v", pages, f.requests)
	}
}

// GET /app/feedbacks has no has_more: a short page ends the walk, and an
// exactly full last page costs one empty page more.
func TestAppFeedbackPagesEndAtAShortPage(t *testing.T) {
	for rows, wantRequests := range map[int]int{0: 1, 3: 1, 4: 2, 9: 3} {
		f := &fakeListings{feedbacks: rows}
		seen := 0
		for page, err := range dify.AppFeedbackPages(context.Background(), f, dify.ListAppFeedbacksParams{Limit: 4}, 0) {
			if err != nil {
				t.Fatal(err)
			}
			seen += len(page.Data)
		}
		if seen != rows || len(f.requests) != wantRequests {
			t.Errorf("%d rows: saw %d in requests %v", rows, seen, f.requests)
		}
	}
	// The server's default limit (20) counts when none is sent.
	f := &fakeListings{feedbacks: 20}
	for range dify.AppFeedbackPages(context.Background(), f, dify.ListAppFeedbacksParams{}, 0) {
	}
	if !reflect.DeepEqual(f.requests, []string{"page=1", "page=2"}) {
		t.Errorf("default limit: requests %v", f.requests)
	}
}

// has_more of released servers is true on an exactly full last page; the
// walk trusts total instead.
func TestAnnotationPagesTrustTotalNotHasMore(t *testing.T) {
	f := &fakeListings{annotations: 6, hasMoreLies: true}
	seen := 0
	for page, err := range dify.AnnotationPages(context.Background(), f, dify.ListAnnotationsParams{Limit: 3}, 0) {
		if err != nil {
			t.Fatal(err)
		}
		seen += len(page.Data)
	}
	if seen != 6 || !reflect.DeepEqual(f.requests, []string{"page=1", "page=2"}) {
		t.Errorf("saw %d in requests %v", seen, f.requests)
	}
}

func TestPagesYieldTheErrorOnceAndStop(t *testing.T) {
	f := &fakeListings{feedbacks: 100, failAt: 2}
	var errs, pages int
	for page, err := range dify.AppFeedbackPages(context.Background(), f, dify.ListAppFeedbacksParams{Limit: 10}, 0) {
		if err != nil {
			errs++
			if page != nil || !errors.Is(err, errFake) {
				t.Errorf("error yield: %v %v", page, err)
			}
			continue
		}
		pages++
	}
	if pages != 1 || errs != 1 || len(f.requests) != 2 {
		t.Errorf("%d page(s), %d error(s), requests %v", pages, errs, f.requests)
	}
}
