package mockserver

import (
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/appdsl"
)

// AppWarning is something in an app's Dify DSL file that the mock ignored
// or read differently from what its author may expect (an unknown key or
// version, a switch the mock does not serve). It never quotes a value from
// the file: a DSL may carry secrets.
type AppWarning struct {
	File    string
	Line    int // 1-based; 0 when it is not about one place
	Message string
}

// LoadApp loads an app as `dify-mock serve --app NAME=PATH` and
// `--cassettes PATH` do (docs/mock/apps.md, docs/mock/dsl.md):
//   - a Dify app DSL file (Studio's Export DSL, *.yml or *.yaml): the app it
//     describes, with the built-in chat cassettes;
//   - a folder holding one DSL file: that app, with the folder's chat
//     cassettes, or the built-in ones when it has none;
//   - any other folder: its app.yaml and chat cassettes (cassette.LoadDir).
//
// The set goes into AppConfig.Cassettes (or Config.Cassettes).
func LoadApp(path string) (*cassette.Set, []AppWarning, error) {
	set, ws, err := appdsl.Load(path)
	out := make([]AppWarning, len(ws))
	for i, w := range ws {
		out[i] = AppWarning{File: w.File, Line: w.Line, Message: w.Message}
	}
	return set, out, err
}
