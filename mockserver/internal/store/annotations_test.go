package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Annotations and the reply setting survive export/import (dify-mock
// serve --state-file, the control API); Reset forgets them; reply jobs
// are transient.
func TestSnapshotRoundTripWithAnnotations(t *testing.T) {
	n := 0
	ids := func() string { n++; return "id-" + strings.Repeat("x", n) }
	clock := time.Unix(1700000000, 0)
	s := New(func() time.Time { clock = clock.Add(time.Second); return clock }, ids)
	a, _ := s.AddAnnotation("What are your opening hours?", "9 to 5.")
	_, _ = s.AddAnnotation("Where?", "Berlin.")
	s.StartAnnotationJob(ActionEnable, AnnotationSetting{ScoreThreshold: 0.8, EmbeddingProviderName: "openai", EmbeddingModelName: "m"}, 0)
	if _, _, ok := s.MatchAnnotation(a.Question); !ok {
		t.Fatal("no match while enabled")
	}
	data, err := json.Marshal(s.Export())
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
	rows, total := s2.ListAnnotations(1, 10, "")
	if total != 2 || rows[1].ID != a.ID || rows[1].HitCount != 1 || rows[0].Question != "Where?" {
		t.Fatalf("annotations after import: %+v", rows)
	}
	if st, ok := s2.AnnotationReplySetting(); !ok || st.ScoreThreshold != 0.8 || st.EmbeddingModelName != "m" {
		t.Fatalf("setting after import: %+v %v", st, ok)
	}
	back.Annotations = append(back.Annotations, back.Annotations[0])
	if err := s2.Import(back); err == nil || !strings.Contains(err.Error(), "duplicate id") {
		t.Errorf("duplicate annotation id: %v", err)
	}
	s2.Reset()
	if _, total := s2.ListAnnotations(1, 10, ""); total != 0 {
		t.Error("Reset kept annotations")
	}
	if _, ok := s2.AnnotationReplySetting(); ok {
		t.Error("Reset kept annotation reply enabled")
	}
}

// The matcher follows every change of the annotations (its index is
// rebuilt for each new generation) and counts hits on the row it found.
func TestMatchAnnotationFollowsChanges(t *testing.T) {
	n := 0
	s := New(nil, func() string { n++; return "id-" + strings.Repeat("x", n) })
	s.StartAnnotationJob(ActionEnable, AnnotationSetting{ScoreThreshold: 0.9, EmbeddingProviderName: "p", EmbeddingModelName: "m"}, 0)
	if _, _, ok := s.MatchAnnotation("opening hours"); ok {
		t.Fatal("match with no annotations")
	}
	a, _ := s.AddAnnotation("What are your opening hours?", "9 to 5.")
	if got, sc, ok := s.MatchAnnotation("what are YOUR opening hours"); !ok || got.ID != a.ID || sc != 1 || got.HitCount != 1 {
		t.Fatalf("after add: %+v %v %v", got, sc, ok)
	}
	if _, err := s.UpdateAnnotation(a.ID, "Where is the office?", "Berlin."); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := s.MatchAnnotation("What are your opening hours?"); ok {
		t.Fatal("the old question still matches after an update")
	}
	if got, _, ok := s.MatchAnnotation("where is the office"); !ok || got.HitCount != 2 || got.Answer != "Berlin." {
		t.Fatalf("after update: %+v %v", got, ok)
	}
	b, _ := s.AddAnnotation("Where is the office?", "Lisbon.")
	if got, _, _ := s.MatchAnnotation("where is the office"); got.ID != b.ID {
		t.Fatalf("a tie went to %s, want the newest %s", got.ID, b.ID)
	}
	if err := s.DeleteAnnotation(b.ID); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.MatchAnnotation("where is the office"); got.ID != a.ID {
		t.Fatalf("after delete: %s, want %s", got.ID, a.ID)
	}
	s.Reset()
	_, _ = s.AddAnnotation("Where is the office?", "Porto.")
	if _, _, ok := s.MatchAnnotation("where is the office"); ok {
		t.Fatal("matched after Reset disabled reply")
	}
}

// Matching a long query against many annotations holds the store's lock
// only to read the setting and count the hit: other requests go on. The
// bounds are generous (a loaded machine); `make bench` reports real times.
func TestMatchAnnotationDoesNotHoldTheLock(t *testing.T) {
	s := New(nil, nil)
	n := 0
	s.newID = func() string { n++; return strings.Repeat("0", 8) + string(rune('a'+n%26)) + strings.Repeat("x", n/26) }
	for i := range 20000 {
		_, _ = s.AddAnnotation("what are the opening hours of shop "+strings.Repeat("z", i%50+1), "9 to 5.")
	}
	s.StartAnnotationJob(ActionEnable, AnnotationSetting{ScoreThreshold: 0.5, EmbeddingProviderName: "p", EmbeddingModelName: "m"}, 0)
	query := strings.Repeat("what are the opening hours of shop z ", 2800) // ≈ 100 KB
	start := time.Now()
	if _, _, ok := s.MatchAnnotation(query); !ok {
		t.Fatal("no match")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("first match (index build included) took %v", took)
	}
	// While a match runs, the lock is free: a writer gets it at once.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			s.MatchAnnotation(query)
		}
	}()
	var worst time.Duration
	for {
		select {
		case <-done:
			if worst > 500*time.Millisecond {
				t.Fatalf("a store write waited %v behind annotation matching", worst)
			}
			return
		default:
		}
		t0 := time.Now()
		s.EndUser("someone-else")
		worst = max(worst, time.Since(t0))
	}
}
