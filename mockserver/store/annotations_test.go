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
	a := s.AddAnnotation("What are your opening hours?", "9 to 5.")
	s.AddAnnotation("Where?", "Berlin.")
	s.StartAnnotationJob(ActionEnable, AnnotationSetting{ScoreThreshold: 0.8, EmbeddingProviderName: "openai", EmbeddingModelName: "m"}, 0)
	exact := func(q, question string) float64 {
		if q == question {
			return 1
		}
		return 0
	}
	if _, _, ok := s.MatchAnnotation(a.Question, exact); !ok {
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
