package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
)

// fakeConversations is an in-memory GET /conversations + GET /messages that
// counts requests.
type fakeConversations struct {
	mu        sync.Mutex
	byUser    map[string][]dify.Conversation // newest first
	lists     int
	probes    int
	listErr   error
	breakNext bool // the next listing with a cursor answers 404 (cursor row deleted)
}

func (f *fakeConversations) ListConversations(_ context.Context, p dify.ListConversationsParams) (*dify.ConversationPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.listErr != nil {
		return nil, f.listErr
	}
	if p.SortBy != dify.SortCreatedAtDesc {
		return nil, fmt.Errorf("unexpected sort %q", p.SortBy)
	}
	all := f.byUser[p.User]
	start := 0
	if p.LastID != "" {
		if f.breakNext {
			return nil, &dify.APIError{Status: 404, Code: "not_found", Message: "Last Conversation Not Exists."}
		}
		start = -1
		for i, c := range all {
			if c.ID == p.LastID {
				start = i + 1
			}
		}
		if start < 0 {
			return nil, &dify.APIError{Status: 404, Code: "not_found", Message: "Last Conversation Not Exists."}
		}
	}
	end := min(start+p.Limit, len(all))
	return &dify.ConversationPage{Limit: p.Limit, HasMore: end < len(all), Data: all[start:end]}, nil
}

func (f *fakeConversations) ListMessages(_ context.Context, p dify.ListMessagesParams) (*dify.MessagePage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes++
	for _, c := range f.byUser[p.User] {
		if c.ID == p.ConversationID {
			return &dify.MessagePage{Limit: p.Limit}, nil
		}
	}
	return nil, &dify.APIError{Status: 404, Code: "not_found", Message: "Conversation Not Exists."}
}

func makeConversations(user string, n int) []dify.Conversation {
	out := make([]dify.Conversation, n)
	for i := range out {
		out[i] = dify.Conversation{ID: fmt.Sprintf("%s-%04d", user, i), Name: fmt.Sprintf("name %d", i)}
	}
	return out
}

func TestIndexOneListingForManyConversations(t *testing.T) {
	f := &fakeConversations{byUser: map[string][]dify.Conversation{"u": makeConversations("u", 250)}}
	x := newConversationIndex(f, defaultListingPageBudget)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 250 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("u-%04d", i)
			res, err := x.Lookup(ctx, "u", id)
			if err != nil || !res.Exists || res.Conversation == nil || res.Conversation.Name != fmt.Sprintf("name %d", i) {
				t.Errorf("lookup %s: %+v, %v", id, res, err)
			}
		}()
	}
	wg.Wait()
	if f.lists != 3 || f.probes != 0 {
		t.Fatalf("250 lookups cost %d listings and %d probes; want 3 (pages of 100) and 0", f.lists, f.probes)
	}
}

func TestIndexLazyPagingStopsAtTheFoundPage(t *testing.T) {
	f := &fakeConversations{byUser: map[string][]dify.Conversation{"u": makeConversations("u", 500)}}
	x := newConversationIndex(f, defaultListingPageBudget)
	if res, _ := x.Lookup(context.Background(), "u", "u-0005"); !res.Exists {
		t.Fatal("not found")
	}
	if f.lists != 1 {
		t.Fatalf("a conversation on the first page cost %d listings", f.lists)
	}
}

func TestIndexMissingConversationIsProbed(t *testing.T) {
	f := &fakeConversations{byUser: map[string][]dify.Conversation{"u": makeConversations("u", 3)}}
	x := newConversationIndex(f, defaultListingPageBudget)
	ctx := context.Background()
	res, err := x.Lookup(ctx, "u", "gone")
	if err != nil || res.Exists {
		t.Fatalf("deleted conversation: %+v, %v", res, err)
	}
	// A conversation made after the listing was fetched is not in the memo,
	// yet exists: the probe vouches for it, without a name.
	f.byUser["u"] = append([]dify.Conversation{{ID: "late", Name: "late"}}, f.byUser["u"]...)
	res, err = x.Lookup(ctx, "u", "late")
	if err != nil || !res.Exists || res.Conversation != nil {
		t.Fatalf("late conversation: %+v, %v", res, err)
	}
	if f.lists != 1 || f.probes != 2 {
		t.Fatalf("lists=%d probes=%d, want 1 and 2", f.lists, f.probes)
	}
}

func TestIndexUsersAreSeparate(t *testing.T) {
	f := &fakeConversations{byUser: map[string][]dify.Conversation{
		"a": makeConversations("a", 2), "b": makeConversations("b", 2)}}
	x := newConversationIndex(f, defaultListingPageBudget)
	ctx := context.Background()
	if res, _ := x.Lookup(ctx, "a", "b-0000"); res.Exists {
		t.Fatal("user a sees user b's conversation")
	}
	if res, _ := x.Lookup(ctx, "b", "b-0000"); !res.Exists {
		t.Fatal("user b's conversation not found")
	}
	if f.lists != 2 {
		t.Fatalf("lists=%d, want one per user", f.lists)
	}
}

func TestIndexPageBudgetBoundsListing(t *testing.T) {
	f := &fakeConversations{byUser: map[string][]dify.Conversation{"u": makeConversations("u", 1000)}}
	x := newConversationIndex(f, 2)
	res, err := x.Lookup(context.Background(), "u", "u-0999")
	if err != nil || !res.Exists {
		t.Fatalf("old conversation: %+v, %v", res, err)
	}
	if f.lists != 2 || f.probes != 1 {
		t.Fatalf("lists=%d probes=%d, want 2 (budget) and 1", f.lists, f.probes)
	}
}

func TestIndexBrokenCursorFallsBackToProbe(t *testing.T) {
	f := &fakeConversations{byUser: map[string][]dify.Conversation{"u": makeConversations("u", 150)}, breakNext: true}
	x := newConversationIndex(f, defaultListingPageBudget)
	res, err := x.Lookup(context.Background(), "u", "u-0120")
	if err != nil || !res.Exists {
		t.Fatalf("lookup after a broken cursor: %+v, %v", res, err)
	}
	if f.probes != 1 {
		t.Fatalf("probes=%d, want 1", f.probes)
	}
}

func TestIndexListingErrorIsReturned(t *testing.T) {
	f := &fakeConversations{listErr: &dify.APIError{Status: 503, Code: "unavailable"}}
	x := newConversationIndex(f, defaultListingPageBudget)
	_, err := x.Lookup(context.Background(), "u", "x")
	var apiErr *dify.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 503 {
		t.Fatalf("got %v, want the 503", err)
	}
}

func TestIndexRememberAndForget(t *testing.T) {
	f := &fakeConversations{byUser: map[string][]dify.Conversation{"u": makeConversations("u", 1)}}
	x := newConversationIndex(f, defaultListingPageBudget)
	ctx := context.Background()
	x.Remember("u", dify.Conversation{ID: "u-0000", Name: "renamed"})
	res, _ := x.Lookup(ctx, "u", "u-0000")
	if res.Conversation == nil || res.Conversation.Name != "renamed" || f.lists != 0 {
		t.Fatalf("remembered entry not used: %+v lists=%d", res, f.lists)
	}
	x.Forget("u", "u-0000")
	f.byUser["u"] = nil
	if res, _ := x.Lookup(ctx, "u", "u-0000"); res.Exists {
		t.Fatal("forgotten conversation still exists")
	}
}
