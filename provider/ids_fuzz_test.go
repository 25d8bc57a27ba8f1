package provider

import (
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
)

// FuzzImportID: an import id is accepted only when it ends in a UUID, and
// then user and id put back together are the id as given (trimmed); a
// refusal always says what form to use. Nothing panics.
func FuzzImportID(f *testing.F) {
	const id = "c0000000-0000-4000-8000-000000000001"
	for _, s := range []string{id, "alice/" + id, "team/alice/" + id, "frontdesk/" + id + "/extra", "/" + id, "alice/", "", " ", "a/b/c", id + "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		user, got, err := parseUserScopedID(raw, "conversation", "USER/CONVERSATION_ID")
		if err != nil {
			if !strings.Contains(err.Error(), "USER/CONVERSATION_ID") && !strings.Contains(err.Error(), "conversation id") {
				t.Fatalf("%q: refusal without the form: %v", raw, err)
			}
			return
		}
		if !dify.IsUUID(got) {
			t.Fatalf("%q: accepted id %q is not a UUID", raw, got)
		}
		back := got
		if user != "" {
			back = user + "/" + got
		}
		if back != strings.TrimSpace(raw) {
			t.Fatalf("%q: split into %q and %q", raw, user, got)
		}
	})
}
