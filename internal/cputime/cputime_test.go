//go:build unix

package cputime

import "testing"

// Work done in this process shows in Self.
func TestSelfCountsThisProcessesWork(t *testing.T) {
	before := Self()
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	if after := Self(); after <= before {
		t.Fatalf("CPU time %v after a busy loop (%d), %v before", after, x, before)
	}
}
