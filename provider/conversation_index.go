package provider

import (
	"context"
	"sync"

	"github.com/difyops/terraform-provider-dify/dify"
)

// Reading one conversation is the awkward part of the API: there is no
// get-by-id (docs/api §22). conversationIndex makes a refresh of N conversations
// cost O(N) requests at most:
//
//   - For each end user, GET /conversations (sort_by=-created_at, limit=100)
//     is paged lazily and memoised for the provider's lifetime (one graph
//     walk). A Read first looks in the pages fetched so far and fetches the
//     next page only when the id is not there yet, up to pageBudget pages per
//     user. N conversations of one user that is used only by Terraform cost
//     ceil(N/100) listing requests in total.
//   - An id the listing did not show (created after the pages were fetched,
//     skipped by Dify's strict-inequality cursor (docs/api §5), older than the page
//     budget, or deleted) is settled by one probe,
//     GET /messages?conversation_id=…&limit=1, which answers 404 for a
//     conversation that does not exist for this user (docs/api §6). Absence from a
//     listing alone never removes a resource from state.
//
// So a refresh costs at most pageBudget×users + N requests, and usually
// ceil(N/100) + (conversations deleted outside Terraform).
type conversationIndex struct {
	client     conversationAPI
	pageBudget int

	mu    sync.Mutex
	users map[string]*userListing
}

// conversationAPI is the part of *dify.Client the index uses.
type conversationAPI interface {
	ListConversations(ctx context.Context, p dify.ListConversationsParams) (*dify.ConversationPage, error)
	ListMessages(ctx context.Context, p dify.ListMessagesParams) (*dify.MessagePage, error)
}

// defaultListingPageBudget bounds the listing at 1000 conversations per user;
// conversations older than that are checked by a probe each.
const defaultListingPageBudget = 10

// listingPageSize is the largest page GET /conversations allows (docs/api §5).
const listingPageSize = 100

type userListing struct {
	mu      sync.Mutex
	byID    map[string]dify.Conversation
	lastID  string
	pages   int
	stopped bool // the end was reached, the budget spent, or the cursor broke
}

func newConversationIndex(c conversationAPI, pageBudget int) *conversationIndex {
	return &conversationIndex{client: c, pageBudget: pageBudget, users: map[string]*userListing{}}
}

func (x *conversationIndex) listing(user string) *userListing {
	x.mu.Lock()
	defer x.mu.Unlock()
	l, ok := x.users[user]
	if !ok {
		l = &userListing{byID: map[string]dify.Conversation{}}
		x.users[user] = l
	}
	return l
}

// lookupResult is what the index knows about one conversation.
type lookupResult struct {
	Exists bool
	// Conversation is set when the listing showed it (so Name is current);
	// nil when only the probe vouched for its existence.
	Conversation *dify.Conversation
}

// Lookup tells whether conversation id exists for user, with its listing
// entry when one was seen.
func (x *conversationIndex) Lookup(ctx context.Context, user, id string) (lookupResult, error) {
	l := x.listing(user)
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.byID[id]; ok {
		return lookupResult{Exists: true, Conversation: &c}, nil
	}
	if !l.stopped && l.pages < x.pageBudget {
		// The listing resumes where the previous lookup left it.
		p := dify.ListConversationsParams{User: user, LastID: l.lastID, Limit: listingPageSize, SortBy: dify.SortCreatedAtDesc}
		for page, err := range dify.ConversationPages(ctx, x.client, &p, x.pageBudget-l.pages) {
			if err != nil {
				if dify.IsNotFound(err) && l.lastID != "" {
					// "Last Conversation Not Exists." (docs/api §5): the cursor row was
					// deleted meanwhile. Stop listing; probes settle the rest.
					l.stopped = true
					break
				}
				return lookupResult{}, err
			}
			l.pages++
			for _, c := range page.Data {
				l.byID[c.ID] = c
			}
			l.lastID, l.stopped = p.LastID, page.Last()
			if c, ok := l.byID[id]; ok {
				return lookupResult{Exists: true, Conversation: &c}, nil
			}
		}
	}
	exists, err := x.Probe(ctx, user, id)
	return lookupResult{Exists: exists}, err
}

// Probe checks existence with one GET /messages?limit=1 (404 = gone, docs/api §6).
func (x *conversationIndex) Probe(ctx context.Context, user, id string) (bool, error) {
	_, err := x.client.ListMessages(ctx, dify.ListMessagesParams{ConversationID: id, User: user, Limit: 1})
	if err == nil {
		return true, nil
	}
	if dify.IsNotFound(err) {
		return false, nil
	}
	return false, err
}

// Remember records a conversation this provider created or renamed, so later
// lookups in the same walk see its current name.
func (x *conversationIndex) Remember(user string, c dify.Conversation) {
	l := x.listing(user)
	l.mu.Lock()
	l.byID[c.ID] = c
	l.mu.Unlock()
}

// Forget drops a deleted conversation.
func (x *conversationIndex) Forget(user, id string) {
	l := x.listing(user)
	l.mu.Lock()
	delete(l.byID, id)
	l.mu.Unlock()
}

// FindFresh looks for a just-created conversation on the newest page of the
// listing, ignoring the memo (it may predate the conversation).
func (x *conversationIndex) FindFresh(ctx context.Context, user, id string) (*dify.Conversation, error) {
	page, err := x.client.ListConversations(ctx, dify.ListConversationsParams{
		User: user, Limit: 20, SortBy: dify.SortCreatedAtDesc,
	})
	if err != nil {
		return nil, err
	}
	for _, c := range page.Data {
		if c.ID == id {
			x.Remember(user, c)
			return &c, nil
		}
	}
	return nil, nil
}
