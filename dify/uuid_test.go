package dify

import "testing"

func TestIsUUID(t *testing.T) {
	for s, want := range map[string]bool{
		"c0000000-0000-4000-8000-000000000001": true,
		"C0000000-0000-4000-8000-00000000000A": true,
		"c0000000000040008000000000000001":     false,
		"c0000000-0000-4000-8000-00000000000g": false,
		"":                                     false,
		"c0000000-0000-4000-8000_000000000001": false,
	} {
		if IsUUID(s) != want {
			t.Errorf("IsUUID(%q) = %v", s, !want)
		}
	}
}
