package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
)

func boundTestStore() *Store {
	n := 0
	clock := time.Unix(1700000000, 0)
	return New(func() time.Time { clock = clock.Add(time.Second); return clock }, func() string { n++; return fmt.Sprintf("id-%04d", n) })
}

// Eviction order: deleted conversations first, then the least recently
// changed; the record just changed is kept; every index forgets what goes.
func TestEvictionOrder(t *testing.T) {
	s := boundTestStore()
	var evicted []string
	u := s.EndUser("alice")
	add := func(c Conversation, q string) {
		t.Helper()
		if err := s.AddMessage(dify.Message{ID: s.newID(), ConversationID: c.ID, Query: q, Answer: "ok"}, "x"); err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("q", 10_000)
	a := s.NewConversation(u.ID, nil, nil, false)
	add(a, big)
	b := s.NewConversation(u.ID, nil, nil, false)
	add(b, big)
	c := s.NewConversation(u.ID, nil, nil, false)
	add(c, big)
	if err := s.Delete(b.ID, u.ID); err != nil {
		t.Fatal(err)
	}
	used, _ := s.Usage()
	s.SetMaxBytes(used-1, func(ev Eviction) { evicted = append(evicted, ev.IDs...) })
	if len(evicted) != 1 || evicted[0] != b.ID {
		t.Fatalf("evicted %v, want the deleted %s first", evicted, b.ID)
	}
	used, _ = s.Usage()
	s.SetMaxBytes(used, func(ev Eviction) { evicted = append(evicted, ev.IDs...) })
	add(a, big) // a is now the most recently changed; c the least
	if len(evicted) != 2 || evicted[1] != c.ID {
		t.Fatalf("evicted %v, want %s (least recently changed) next", evicted, c.ID)
	}
	if _, err := s.Conversation(c.ID, u.ID); err == nil {
		t.Error("evicted conversation still readable")
	}
	if rows, _, _ := s.ListConversations(u.ID, "", 100, "-updated_at"); len(rows) != 1 || rows[0].ID != a.ID {
		t.Errorf("listing after eviction: %+v", rows)
	}
	if len(s.messages) != 2 || len(s.convs) != 1 {
		t.Errorf("indexes keep evicted records: %d messages, %d conversations", len(s.messages), len(s.convs))
	}
	// A record larger than the bound is kept, alone.
	s.SetMaxBytes(100, nil)
	huge := s.NewConversation(u.ID, nil, nil, false)
	add(huge, big+big)
	if _, err := s.Conversation(huge.ID, u.ID); err != nil || len(s.convs) != 1 {
		t.Errorf("the record just added was evicted (%v) or others kept (%d)", err, len(s.convs))
	}
}

// The accounting follows Reset, ResetUser and an export/import round trip.
func TestUsageFollowsSnapshots(t *testing.T) {
	s := boundTestStore()
	for _, who := range []string{"alice", "bob"} {
		u := s.EndUser(who)
		c := s.NewConversation(u.ID, map[string]any{"city": "Oslo"}, nil, false)
		if err := s.AddMessage(dify.Message{ID: s.newID(), ConversationID: c.ID, Query: strings.Repeat("q", 5000), Answer: "a"}, "x"); err != nil {
			t.Fatal(err)
		}
		mime := "text/plain"
		s.AddFile(File{Result: FileResult{ID: s.newID(), Name: "a.txt", MimeType: &mime}, OwnerID: u.ID})
	}
	before, _ := s.Usage()
	if err := s.Import(s.Export()); err != nil {
		t.Fatal(err)
	}
	if after, _ := s.Usage(); after < before*9/10 || after > before*11/10 {
		t.Errorf("usage %d after an export/import round trip, %d before", after, before)
	}
	if err := s.ResetUser("alice"); err != nil {
		t.Fatal(err)
	}
	if half, _ := s.Usage(); half <= 0 || half >= before*6/10 {
		t.Errorf("usage %d after forgetting one of two equal users, %d before", half, before)
	}
	s.Reset()
	if zero, _ := s.Usage(); zero != 0 {
		t.Errorf("usage %d after Reset", zero)
	}
}

// An import far larger than the bound is cut down before the store's lock
// is taken, in linear time, and reported as one summary: 10^6 conversations
// used to be evicted one by one under the lock (~550/s, each shifting the
// owner's index, each logged).
func TestLargeImportNeverStallsTheStore(t *testing.T) {
	const n = 60_000
	snap := Snapshot{Version: SnapshotVersion, EndUsers: []SnapUser{{ID: "u1", Session: "alice", CreatedAt: time.Unix(1700000000, 0)}}}
	for i := range n {
		snap.Conversations = append(snap.Conversations, SnapConvers{
			Conversation: dify.Conversation{ID: fmt.Sprintf("c-%06d", i), Name: "x", CreatedAt: 1700000000 + int64(i), UpdatedAt: 1700000000 + int64(i) + 2*int64(n-i)},
			OwnerID:      "u1",
		})
	}
	s := boundTestStore()
	var passes, evicted int
	s.SetMaxBytes(256<<10, func(ev Eviction) { passes++; evicted += ev.Count() })

	// A reader measures the longest wait for the store's lock meanwhile.
	stop := make(chan struct{})
	worst := make(chan time.Duration)
	go func() {
		var w time.Duration
		for {
			select {
			case <-stop:
				worst <- w
				return
			default:
			}
			t0 := time.Now()
			s.Usage()
			w = max(w, time.Since(t0))
			time.Sleep(time.Millisecond)
		}
	}()
	start := time.Now()
	if err := s.Import(snap); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	close(stop)
	w := <-worst
	t.Logf("import of %d conversations into a 256 KiB bound: %s, longest lock wait %s, %d evicted in %d pass(es)", n, took, w, evicted, passes)
	if used, maxBytes := s.Usage(); used > maxBytes {
		t.Errorf("after the import %d bytes of %d", used, maxBytes)
	}
	if passes != 1 || evicted < n/2 {
		t.Errorf("%d eviction passes, %d evicted; want one summary of most of %d", passes, evicted, n)
	}
	if w > time.Second {
		t.Errorf("a reader waited %s for the lock during the import", w)
	}
	rows, _, err := s.ListConversations("u1", "", 100, "-updated_at")
	if err != nil || len(rows) == 0 {
		t.Fatalf("listing after the import: %d rows, %v", len(rows), err)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].UpdatedAt > rows[i-1].UpdatedAt {
			t.Fatalf("listing out of order at %d", i)
		}
	}
}

// jsonSize counts what json.Marshal would give, HTML escapes included,
// without keeping the bytes.
func TestJSONSizeIsTheMarshalledLength(t *testing.T) {
	m := dify.Message{ID: "m1", ConversationID: "c1", Query: "<b>&é\u2028</b>", Answer: strings.Repeat("answer ", 300),
		Inputs: map[string]any{"k": []any{1, "x", nil}}}
	for _, v := range []any{m, Conversation{}, "", map[string]any{}, []int{1, 2}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonSize(v); got != int64(len(b)) {
			t.Errorf("jsonSize(%T) = %d, want %d", v, got, len(b))
		}
	}
	if got := jsonSize(func() {}); got != 0 {
		t.Errorf("jsonSize of what JSON cannot encode = %d, want 0", got)
	}
}

// Stores sharing an Account are bounded together: the one whose write
// goes over evicts its own records; Reset and Import keep the account's
// total equal to the sum of the stores'.
func TestSharedAccount(t *testing.T) {
	a, b := boundTestStore(), boundTestStore()
	big := strings.Repeat("q", 10_000)
	fill := func(s *Store, user string, n int) []string {
		t.Helper()
		u := s.EndUser(user)
		var ids []string
		for range n {
			c := s.NewConversation(u.ID, nil, nil, false)
			if err := s.AddMessage(dify.Message{ID: s.newID(), ConversationID: c.ID, Query: big, Answer: "ok"}, "x"); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, c.ID)
		}
		return ids
	}
	fill(a, "alice", 3)
	one, _ := a.Usage()
	acct := NewAccount(2 * one) // room for about six conversations in all
	var evictedA, evictedB int
	a.SetAccount(acct, func(ev Eviction) { evictedA += ev.Count() })
	b.SetAccount(acct, func(ev Eviction) { evictedB += ev.Count() })
	if used, max := acct.Usage(); used != one || max != 2*one {
		t.Fatalf("account after a joined: %d of %d, want %d of %d", used, max, one, 2*one)
	}
	sum := func() int64 {
		x, _ := a.Usage()
		y, _ := b.Usage()
		return x + y
	}
	fill(b, "bob", 3)
	if used, _ := acct.Usage(); used != sum() || used > 2*one {
		t.Fatalf("after b's writes: account %d, stores %d, bound %d", used, sum(), 2*one)
	}
	fill(b, "bob", 3) // b goes over: b evicts its own
	if evictedA != 0 || evictedB == 0 {
		t.Errorf("evicted: a %d, b %d; want only b's (b's writes went over)", evictedA, evictedB)
	}
	if used, _ := acct.Usage(); used != sum() || used > 2*one {
		t.Errorf("after b went over: account %d, stores %d, bound %d", used, sum(), 2*one)
	}
	snap := a.Export()
	a.Reset()
	if used, _ := acct.Usage(); used != sum() {
		t.Errorf("after a's reset: account %d, stores %d", used, sum())
	}
	if err := a.Import(snap); err != nil {
		t.Fatal(err)
	}
	if used, _ := acct.Usage(); used != sum() || used > 2*one {
		t.Errorf("after a's import: account %d, stores %d, bound %d", used, sum(), 2*one)
	}
}
