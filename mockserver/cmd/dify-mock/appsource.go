package main

import (
	"log/slog"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// loadAppSource loads what --cassettes and --app name: a cassette folder,
// a Dify app DSL file, or a folder whose app description is a DSL file
// (mockserver.LoadApp, docs/mock/dsl.md). The DSL's warnings are logged, one
// line each; they name keys and lines, never values.
func loadAppSource(path string, logger *slog.Logger) (*cassette.Set, error) {
	set, warnings, err := mockserver.LoadApp(path)
	for _, w := range warnings {
		logger.Warn("app DSL: "+w.Message, "file", w.File, "line", w.Line)
	}
	return set, err
}
