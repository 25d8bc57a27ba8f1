package store

import (
	"strings"
	"testing"
)

func TestGenerateName(t *testing.T) {
	long := strings.Repeat("word ", 20)
	for in, want := range map[string]string{
		"Plan a trip":           "Plan a trip",
		"  Plan \n a\ttrip  ":   "Plan a trip",
		"":                      DefaultConversationName,
		" \n ":                  DefaultConversationName,
		strings.Repeat("가", 50): strings.Repeat("가", 50),
		strings.Repeat("가", 51): strings.Repeat("가", 47) + "...",
		long:                    strings.TrimSpace(long)[:47] + "...",
	} {
		if got := GenerateName(in); got != want {
			t.Errorf("GenerateName(%q) = %q, want %q", in, got, want)
		}
	}
}
