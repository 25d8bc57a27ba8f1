package mockserver

import (
	"math"
	"testing"
)

// The offline stand-in for the vector search of Dify's
// AnnotationReplyFeature.query (docs/api §29.1): scores in [0, 1], 1 for the
// same words whatever the case, order and punctuation.
func TestAnnotationScore(t *testing.T) {
	for _, tc := range []struct {
		query, question string
		want            float64
	}{
		{"What are your opening hours?", "what are your opening hours", 1},
		{"  HOURS opening your are what!!", "What are your opening hours?", 1},
		{"What's your opening hours", "What are your opening hours?", 0.8},                                 // {what s your opening hours}·{what are your opening hours} = 4/5
		{"What are the opening hours of the museum?", "What are your opening hours?", 4 / math.Sqrt(10*5)}, // docs/mock/annotations.md: ≈ 0.57
		{"Where is the office?", "What are your opening hours?", 0},
		{"", "What are your opening hours?", 0},
		{"?!", "?!", 0},
		{"营业时间", "营业时间是什么", 4 / math.Sqrt(4*7)},
		{"Café Ünïcode", "café ünïcode", 1},
	} {
		got := annotationScore(tc.query, tc.question)
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("annotationScore(%q, %q) = %v, want %v", tc.query, tc.question, got, tc.want)
		}
		if back := annotationScore(tc.question, tc.query); math.Abs(back-got) > 1e-12 {
			t.Errorf("not symmetric: %v vs %v", got, back)
		}
	}
}

func FuzzAnnotationScore(f *testing.F) {
	f.Add("What are your opening hours?", "opening hours")
	f.Add("营业时间", "\xff\xfe")
	f.Fuzz(func(t *testing.T, a, b string) {
		s := annotationScore(a, b)
		if s < 0 || s > 1 || math.IsNaN(s) {
			t.Fatalf("annotationScore(%q, %q) = %v, outside [0, 1]", a, b, s)
		}
		if a != "" && len(words(a)) > 0 && annotationScore(a, a) < 1-1e-9 {
			t.Fatalf("annotationScore(%q, itself) = %v, want 1", a, annotationScore(a, a))
		}
	})
}
