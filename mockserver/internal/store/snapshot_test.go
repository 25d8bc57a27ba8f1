package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
)

// TestSnapshotCoversEveryStoreField fails when Store gains a field that
// the snapshot code (Export, Import, Reset, ResetUser in snapshot.go) has
// not been taught about: state that a reset leaves behind or an export
// loses would surprise the people who rely on them.
func TestSnapshotCoversEveryStoreField(t *testing.T) {
	handled := map[string]bool{
		"mu": true, "now": true, "seq": true, "newID": true, // machinery, not state
		"users": true, "usersID": true, "files": true, "convs": true, "messages": true, "owners": true, "feedbacks": true,
		"bytes": true, "lru": true, // memory accounting: follows the state in replace, untracked in ResetUser
		"maxBytes": true, "onEvict": true, "acct": true, // the bound: configuration, kept across replace
		"ann":      true,
		"annIndex": true, // derived from ann (its gen): a replaced ann is never matched with an old index
	}
	st := reflect.TypeOf(Store{})
	for i := range st.NumField() {
		if name := st.Field(i).Name; !handled[name] {
			t.Errorf("Store.%s is not exported, imported or reset by snapshot.go: handle it there (and in replace), then list it here", name)
		}
	}
}

func TestSnapshotRoundTripWithFeedback(t *testing.T) {
	n := 0
	ids := func() string { n++; return "id-" + string(rune('a'+n)) }
	clock := time.Unix(1700000000, 0)
	s := New(func() time.Time { clock = clock.Add(time.Second); return clock }, ids)
	u := s.EndUser("alice")
	c := s.NewConversation(u.ID, map[string]any{"city": "Lisbon"}, nil, true)
	if err := s.AddMessage(dify.Message{ID: "m1", ConversationID: c.ID, Query: "hi", Answer: "hello"}, "plain-answer"); err != nil {
		t.Fatal(err)
	}
	good := "great"
	if err := s.SetFeedback("m1", u.ID, "like", &good); err != nil {
		t.Fatal(err)
	}
	snap := s.Export()
	data, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	s2 := New(nil, ids)
	if err := s2.Import(back); err != nil {
		t.Fatal(err)
	}
	if fb := s2.ListFeedbacks(1, 10); len(fb) != 1 || fb[0].Rating != "like" || *fb[0].Content != "great" || fb[0].FromEndUserID != u.ID {
		t.Fatalf("feedback after import: %+v", fb)
	}
	msgs, _, err := s2.ListMessages(c.ID, u.ID, "", 10)
	if err != nil || len(msgs) != 1 || msgs[0].Feedback == nil || msgs[0].Feedback.Rating != "like" {
		t.Fatalf("messages after import: %+v %v", msgs, err)
	}
	again, _ := json.Marshal(s2.Export())
	var a, b Snapshot
	_ = json.Unmarshal(data, &a)
	_ = json.Unmarshal(again, &b)
	a.ExportedAt, b.ExportedAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("export → import → export changed the state:\n%s\n%s", data, again)
	}
	if err := s2.ResetUser("alice"); err != nil {
		t.Fatal(err)
	}
	if fb := s2.ListFeedbacks(1, 10); len(fb) != 0 {
		t.Fatalf("feedback survived the user's reset: %+v", fb)
	}
	s.Reset()
	if len(s.Export().EndUsers) != 0 || len(s.ListFeedbacks(1, 10)) != 0 {
		t.Fatal("reset left state")
	}
}
