package cassette

import (
	"bytes"

	"gopkg.in/yaml.v3"
)

// ProvenanceDSL marks an app description that dify-mock derived from a Dify
// app DSL file (mockserver/internal/appdsl) rather than recorded or authored: it only
// exists in memory, so Decode never accepts it in a cassette file.
const ProvenanceDSL = "dsl"

// IsAppDSL reports whether data is a Dify app DSL document, the YAML file
// Dify's "Export DSL" writes (api/services/app_dsl_service.py): a top-level
// mapping with `kind: app` and an `app` block, and no dify_mock block. The
// loader skips such files (mockserver/internal/appdsl reads them); an author app
// scenario (`kind: app` with info/parameters) has no `app` block, so it is
// not one.
func IsAppDSL(data []byte) bool {
	// Cheap tests first, so a cassette folder does not cost a second YAML
	// parse per file: every cassette has a top-level dify_mock key (at
	// the start of a line; block scalars are indented).
	if bytes.HasPrefix(data, []byte("dify_mock:")) || bytes.Contains(data, []byte("\ndify_mock:")) ||
		!bytes.Contains(data, []byte("kind")) || !bytes.Contains(data, []byte("app")) {
		return false
	}
	var probe struct {
		Kind     any `yaml:"kind"`
		App      any `yaml:"app"`
		DifyMock any `yaml:"dify_mock"`
	}
	if yaml.Unmarshal(data, &probe) != nil {
		return false
	}
	kind, _ := probe.Kind.(string)
	_, app := probe.App.(map[string]any)
	return kind == KindApp && app && probe.DifyMock == nil
}
