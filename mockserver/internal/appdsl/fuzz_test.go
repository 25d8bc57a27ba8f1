package appdsl_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/appdsl"
)

// FuzzParse: no input makes Parse panic, and whatever it accepts is an app
// description the mock loads, of a mode it impersonates.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("kind: app\napp: {mode: agent-chat}\nmodel_config: {pre_prompt: '', user_input_form: [{select: {variable: a, options: [x]}}]}\n"))
	f.Add([]byte("a: &a [x]\nb: [*a, *a]\nkind: app\napp: {mode: agent}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		app, _, err := appdsl.Parse(data, "fuzz.yml")
		if err != nil {
			return
		}
		for _, p := range cassette.AppPaths {
			if app.Responses[p] == nil {
				t.Fatalf("accepted, but no GET %s", p)
			}
		}
		if app.Info.Mode != dify.ModeAgent && app.Info.Mode != dify.ModeAgentChat {
			t.Fatalf("accepted mode %q", app.Info.Mode)
		}
	})
}
