//go:build !race

// Allocation figures: the race detector makes sync.Pool drop what it is
// given, so encoding/json's pooled encoder state is allocated anew.

package store

import (
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
)

// jsonSize keeps no copy of the encoding: what it allocates (the encoder,
// the boxed value, the map's sorted keys) is a fraction of the size.
func TestJSONSizeKeepsNoCopy(t *testing.T) {
	m := dify.Message{ID: "m1", ConversationID: "c1", Query: "<b>&é\u2028</b>", Answer: strings.Repeat("answer ", 300),
		Inputs: map[string]any{"k": []any{1, "x", nil}}}
	size := jsonSize(m)
	r := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			jsonSize(m)
		}
	})
	if got := r.AllocedBytesPerOp(); got > size/2 {
		t.Errorf("jsonSize allocates %d bytes for a %d-byte encoding, want at most half", got, size)
	}
}
