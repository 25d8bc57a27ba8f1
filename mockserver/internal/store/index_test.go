package store

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
)

var sortOrders = []string{dify.SortCreatedAt, dify.SortCreatedAtDesc, dify.SortUpdatedAt, dify.SortUpdatedAtDesc}

// scanList is the listing by a walk over every stored conversation (what
// ListConversations did before the per-owner index): the reference the index
// must agree with.
func scanList(s *Store, ownerID, lastID string, limit int, sortBy string) ([]ListedConversation, bool, error) {
	desc := len(sortBy) > 0 && sortBy[0] == '-'
	byUpdated := sortBy == dify.SortUpdatedAt || sortBy == dify.SortUpdatedAtDesc
	sortKey := func(c *Conversation) key {
		if byUpdated {
			return c.updated
		}
		return c.created
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var rows []*Conversation
	for _, c := range s.convs {
		if !c.deleted && c.OwnerID == ownerID {
			rows = append(rows, c)
		}
	}
	if lastID != "" {
		last, ok := s.convs[lastID]
		if !ok || last.deleted || last.OwnerID != ownerID {
			return nil, false, ErrLastNotFound
		}
		lk := sortKey(last)
		kept := rows[:0]
		for _, c := range rows {
			k := sortKey(c)
			if (desc && k.less(lk)) || (!desc && lk.less(k)) {
				kept = append(kept, c)
			}
		}
		rows = kept
	}
	sort.Slice(rows, func(i, j int) bool {
		if desc {
			return sortKey(rows[j]).less(sortKey(rows[i]))
		}
		return sortKey(rows[i]).less(sortKey(rows[j]))
	})
	hasMore := len(rows) > limit
	if hasMore {
		rows = rows[:limit]
	}
	// Each row's JSON made afresh, not through the listing cache.
	out := make([]ListedConversation, len(rows))
	for i, c := range rows {
		data, err := json.Marshal(c.Conversation)
		if err != nil {
			return nil, false, err
		}
		out[i] = ListedConversation{ID: c.ID, Name: c.Name, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, JSON: data}
	}
	return out, hasMore, nil
}

// jumpyClock ticks forward in small steps, often stays in the same second
// and sometimes goes back, so rows tie on created_at/updated_at and the
// index has to insert in the middle.
type jumpyClock struct {
	t   time.Time
	rnd *rand.Rand
}

func (c *jumpyClock) now() time.Time {
	switch c.rnd.IntN(10) {
	case 0:
		c.t = c.t.Add(-time.Duration(c.rnd.IntN(3000)) * time.Millisecond)
	case 1, 2, 3:
		// same instant
	default:
		c.t = c.t.Add(time.Duration(c.rnd.IntN(800)) * time.Millisecond)
	}
	return c.t
}

func seqIDs(prefix string) func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("%s-%06d", prefix, n)
	}
}

// names are the rows' ids and names, and their JSON as listed.
func names(rows []ListedConversation) []string {
	out := make([]string, len(rows))
	for i, c := range rows {
		out[i] = c.ID + "/" + c.Name + " " + string(c.JSON)
	}
	return out
}

// TestListConversationsIndexMatchesScan runs random creates, messages,
// renames and deletes over many users and checks, after each step and for
// every sort order, that every user's listing (first pages, pages after
// each row, every limit edge) equals the full-scan reference, that it holds
// only that user's conversations, and that paging to the end yields each
// live conversation exactly once in order.
func TestListConversationsIndexMatchesScan(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	clock := &jumpyClock{t: time.Unix(1_700_000_000, 0), rnd: rnd}
	s := New(clock.now, seqIDs("id"))
	const users = 40
	owners := make([]string, users)
	for i := range owners {
		owners[i] = s.EndUser(fmt.Sprintf("user-%d", i)).ID
	}
	live := map[string]string{} // conversation id -> owner id
	var all []string
	check := func(step int) {
		t.Helper()
		for _, owner := range owners {
			var want []string
			for id, o := range live {
				if o == owner {
					want = append(want, id)
				}
			}
			for _, order := range sortOrders {
				full, more, err := s.ListConversations(owner, "", 1000, order)
				ref, refMore, refErr := scanList(s, owner, "", 1000, order)
				if err != nil || refErr != nil || more || refMore || !slices.Equal(names(full), names(ref)) {
					t.Fatalf("step %d %s %s: index %v %v %v, scan %v %v %v", step, owner, order, names(full), more, err, names(ref), refMore, refErr)
				}
				got := make([]string, len(full))
				for i, c := range full {
					if live[c.ID] != owner {
						t.Fatalf("step %d: %s lists %s of %q", step, owner, c.ID, live[c.ID])
					}
					got[i] = c.ID
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("step %d %s %s: listed %v, own %v", step, owner, order, got, want)
				}
				// Paging after every row with a few limits, and to the end.
				for _, limit := range []int{0, 1, 2, 3, 100} {
					last := ""
					for i := 0; i <= len(full); i++ {
						a, am, ae := s.ListConversations(owner, last, limit, order)
						b, bm, be := scanList(s, owner, last, limit, order)
						if ae != be || am != bm || !slices.Equal(names(a), names(b)) {
							t.Fatalf("step %d %s %s last=%q limit %d: index %v %v %v, scan %v %v %v", step, owner, order, last, limit, names(a), am, ae, names(b), bm, be)
						}
						if i < len(full) {
							last = full[i].ID
						}
					}
				}
				var paged []string
				last := ""
				for {
					page, more, err := s.ListConversations(owner, last, 3, order)
					if err != nil {
						t.Fatal(err)
					}
					paged = append(paged, names(page)...)
					if !more {
						break
					}
					last = page[len(page)-1].ID
				}
				if !slices.Equal(paged, names(full)) {
					t.Fatalf("step %d %s %s: paged %v, want %v", step, owner, order, paged, names(full))
				}
			}
		}
	}
	for step := 0; step < 600; step++ {
		owner := owners[rnd.IntN(users)]
		switch op := rnd.IntN(10); {
		case op < 4 || len(all) == 0:
			c := s.NewConversation(owner, nil, nil, rnd.IntN(2) == 0)
			live[c.ID] = owner
			all = append(all, c.ID)
		case op < 7:
			id := all[rnd.IntN(len(all))]
			s.ContinueConversation(id) // a follow-up's start moves updated_at
			err := s.AddMessage(dify.Message{ID: fmt.Sprintf("m-%d", step), ConversationID: id, Query: fmt.Sprintf("query %d", step)}, "c")
			if _, ok := live[id]; ok != (err == nil) {
				t.Fatalf("step %d: AddMessage(%s) = %v, live %v", step, id, err, ok)
			}
		case op < 9:
			id := all[rnd.IntN(len(all))]
			o := live[id]
			if o == "" || rnd.IntN(4) == 0 {
				o = owner // often not the owner: must fail
			}
			_, err := s.Rename(id, o, fmt.Sprintf("name %d", step), false)
			if ok := live[id] == o; ok != (err == nil) {
				t.Fatalf("step %d: Rename(%s by %s) = %v", step, id, o, err)
			}
		default:
			id := all[rnd.IntN(len(all))]
			o := live[id]
			if o == "" || rnd.IntN(4) == 0 {
				o = owner
			}
			err := s.Delete(id, o)
			if ok := live[id] == o; ok != (err == nil) {
				t.Fatalf("step %d: Delete(%s by %s) = %v", step, id, o, err)
			}
			if err == nil {
				delete(live, id)
			}
		}
		if step%50 == 49 {
			check(step)
		}
	}
	check(600)
	// A deleted conversation or another user's is no last_id.
	for id, o := range live {
		other := owners[0]
		if other == o {
			other = owners[1]
		}
		if _, _, err := s.ListConversations(other, id, 10, dify.SortCreatedAt); err != ErrLastNotFound {
			t.Fatalf("last_id of another user: %v", err)
		}
		if err := s.Delete(id, o); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.ListConversations(o, id, 10, dify.SortCreatedAt); err != ErrLastNotFound {
			t.Fatalf("deleted last_id: %v", err)
		}
	}
	if len(s.owners) != 0 {
		t.Errorf("%d owner indexes left with nothing live", len(s.owners))
	}
}

// TestListConversationsOrderAndHasMore pins the docs/api §5 semantics on a small
// fixed example: sort orders, strict-inequality paging and has_more.
func TestListConversationsOrderAndHasMore(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	tick := 0
	s := New(func() time.Time { tick++; return base.Add(time.Duration(tick/2) * time.Second) }, seqIDs("c"))
	u := s.EndUser("u").ID
	other := s.EndUser("other").ID
	a := s.NewConversation(u, nil, nil, false)
	s.NewConversation(other, nil, nil, false)
	b := s.NewConversation(u, nil, nil, false)
	c := s.NewConversation(u, nil, nil, false)
	if _, err := s.Rename(a.ID, u, "renamed", false); err != nil { // a is now the most recently updated
		t.Fatal(err)
	}
	ids := func(rows []ListedConversation) string {
		out := ""
		for _, r := range rows {
			switch r.ID {
			case a.ID:
				out += "a"
			case b.ID:
				out += "b"
			case c.ID:
				out += "c"
			default:
				out += "?"
			}
		}
		return out
	}
	for _, tc := range []struct {
		sortBy, last string
		limit        int
		want         string
		more         bool
	}{
		{dify.SortCreatedAt, "", 10, "abc", false},
		{dify.SortCreatedAtDesc, "", 10, "cba", false},
		{dify.SortUpdatedAt, "", 10, "bca", false},
		{dify.SortUpdatedAtDesc, "", 10, "acb", false},
		{dify.SortUpdatedAtDesc, "", 2, "ac", true},
		{dify.SortUpdatedAtDesc, "", 3, "acb", false},
		{dify.SortUpdatedAtDesc, c.ID, 1, "b", false},
		{dify.SortCreatedAt, a.ID, 1, "b", true},
		{dify.SortCreatedAt, c.ID, 5, "", false},
		{dify.SortCreatedAtDesc, b.ID, 5, "a", false},
	} {
		rows, more, err := s.ListConversations(u, tc.last, tc.limit, tc.sortBy)
		if err != nil || ids(rows) != tc.want || more != tc.more {
			t.Errorf("%s last=%s limit %d: %q more=%v %v, want %q more=%v", tc.sortBy, ids([]ListedConversation{{ID: tc.last}}), tc.limit, ids(rows), more, err, tc.want, tc.more)
		}
	}
}

func TestListMessagesFirstID(t *testing.T) {
	s := New(nil, seqIDs("x"))
	u := s.EndUser("u").ID
	c1 := s.NewConversation(u, nil, nil, false)
	c2 := s.NewConversation(u, nil, nil, false)
	for i := range 5 {
		for _, c := range []Conversation{c1, c2} {
			if err := s.AddMessage(dify.Message{ID: fmt.Sprintf("%s-m%d", c.ID, i), ConversationID: c.ID}, "k"); err != nil {
				t.Fatal(err)
			}
		}
	}
	msgs, more, err := s.ListMessages(c1.ID, u, c1.ID+"-m3", 2)
	if err != nil || !more || len(msgs) != 2 || msgs[0].ID != c1.ID+"-m1" || msgs[1].ID != c1.ID+"-m2" {
		t.Fatalf("%v %v %v", msgs, more, err)
	}
	// The store keeps the parent it is given: which parent a turn has is
	// the chat store phase's decision (UUID_NIL for every Service API turn).
	if msgs[0].ParentMessageID != nil {
		t.Errorf("parent %v, want none given and none made up", msgs[0].ParentMessageID)
	}
	if msgs, more, err := s.ListMessages(c1.ID, u, c1.ID+"-m1", 5); err != nil || more || len(msgs) != 1 {
		t.Errorf("%v %v %v", msgs, more, err)
	}
	if _, _, err := s.ListMessages(c1.ID, u, c2.ID+"-m3", 2); err != ErrFirstNotFound {
		t.Errorf("first_id of another conversation: %v", err)
	}
	if _, _, err := s.ListMessages(c1.ID, u, "nope", 2); err != ErrFirstNotFound {
		t.Errorf("unknown first_id: %v", err)
	}
	if _, _, err := s.ListMessages(c1.ID, s.EndUser("v").ID, "", 2); err != ErrConversationNotFound {
		t.Errorf("another user: %v", err)
	}
}

// crowdedStore holds 10,000 conversations of 100 other users (as the
// bench's crowded row) plus mine of the listing user, each with a message.
func crowdedStore(b *testing.B, mine int) (*Store, string) {
	s := New(nil, seqIDs("b"))
	for u := range 100 {
		owner := s.EndUser(fmt.Sprintf("other-%d", u)).ID
		for i := range 100 {
			c := s.NewConversation(owner, map[string]any{"i": i}, nil, false)
			if err := s.AddMessage(dify.Message{ID: c.ID + "-m", ConversationID: c.ID, Query: "q"}, "k"); err != nil {
				b.Fatal(err)
			}
		}
	}
	me := s.EndUser("me").ID
	for range mine {
		c := s.NewConversation(me, nil, nil, false)
		if err := s.AddMessage(dify.Message{ID: c.ID + "-m", ConversationID: c.ID, Query: "q"}, "k"); err != nil {
			b.Fatal(err)
		}
	}
	return s, me
}

// BenchmarkListConversationsCrowded lists 20 conversations of one user
// (default order, -updated_at) while 10,000 of other users are stored:
// "index" is ListConversations, "scan" the walk over every conversation it
// replaced.
func BenchmarkListConversationsCrowded(b *testing.B) {
	for _, mine := range []int{20, 1000} {
		s, me := crowdedStore(b, mine)
		for _, impl := range []struct {
			name string
			list func(*Store, string, string, int, string) ([]ListedConversation, bool, error)
		}{{"index", (*Store).ListConversations}, {"scan", scanList}} {
			b.Run(fmt.Sprintf("%s/mine=%d", impl.name, mine), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					rows, _, err := impl.list(s, me, "", 20, dify.SortUpdatedAtDesc)
					if err != nil || len(rows) != 20 {
						b.Fatal(len(rows), err)
					}
				}
			})
		}
	}
}

// generateNameRunes is GenerateName as first written (over a []rune), the
// reference for the allocation-light version.
func generateNameRunes(query string) string {
	var b []rune
	space := false
	for _, r := range query {
		if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
			space = len(b) > 0
			continue
		}
		if space {
			b = append(b, ' ')
			space = false
		}
		b = append(b, r)
	}
	if len(b) == 0 {
		return DefaultConversationName
	}
	if len(b) > 50 {
		return string(b[:47]) + "..."
	}
	return string(b)
}

func FuzzGenerateName(f *testing.F) {
	for _, s := range []string{"", " ", "Plan a trip", "  a \n b\t\tc  ", strings.Repeat("가 ", 30), strings.Repeat("x", 46) + " y" + strings.Repeat("z", 10), strings.Repeat("w ", 26), "\xff\xfe bad utf8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := GenerateName(s), generateNameRunes(s); got != want {
			t.Fatalf("GenerateName(%q) = %q, want %q", s, got, want)
		}
	})
}
