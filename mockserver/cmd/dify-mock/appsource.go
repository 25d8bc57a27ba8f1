package main

import (
	"log/slog"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/appdsl"
)

// loadAppSource loads what --cassettes names: a cassette folder, a Dify app
// DSL file, or a folder whose app description is a DSL file
// (appdsl.Load, docs/mock/dsl.md). The DSL's warnings are logged, one line
// each; they name keys and lines, never values.
func loadAppSource(path string, logger *slog.Logger) (*cassette.Set, error) {
	set, warnings, err := appdsl.Load(path)
	for _, w := range warnings {
		logger.Warn("app DSL: "+w.Message, "file", w.File, "line", w.Line)
	}
	return set, err
}
