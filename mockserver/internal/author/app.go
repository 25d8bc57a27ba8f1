package author

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"gopkg.in/yaml.v3"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// AppScenario describes the app a cassette set impersonates: the bodies of
// GET /info, /parameters, /meta and /site (docs/api §13–§16), written as YAML and
// rendered as compact JSON in the order the keys are written.
type AppScenario struct {
	Kind        string `yaml:"kind"`
	Description string `yaml:"description"`
	// ServerVersion is reported by GET / (docs/api §1.1).
	ServerVersion string    `yaml:"server_version"`
	Info          yaml.Node `yaml:"info"`
	Parameters    yaml.Node `yaml:"parameters"`
	Meta          yaml.Node `yaml:"meta"`
	Site          yaml.Node `yaml:"site"`
}

// ParseAppScenario decodes an app scenario strictly.
func ParseAppScenario(file string, data []byte) (*AppScenario, error) {
	if len(data) > MaxScenarioSize {
		return nil, fmt.Errorf("%s: scenario is %d bytes, over the %d-byte limit", file, len(data), MaxScenarioSize)
	}
	var a AppScenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty scenario", file)
		}
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if a.Kind != cassette.KindApp {
		return nil, fmt.Errorf("%s: an app scenario needs kind: app", file)
	}
	if a.ServerVersion == "" {
		return nil, fmt.Errorf("%s: server_version is required (GET / reports it)", file)
	}
	for _, part := range []struct {
		key string
		n   *yaml.Node
	}{{"info", &a.Info}, {"parameters", &a.Parameters}, {"meta", &a.Meta}, {"site", &a.Site}} {
		v, err := nodeValue(part.n)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", file, part.key, err)
		}
		if _, ok := v.(object); !ok {
			return nil, fmt.Errorf("%s: %s must be a mapping (the JSON body of GET /%s)", file, part.key, part.key)
		}
	}
	return &a, nil
}

// GenerateApp renders an app scenario as the app description cassette and
// checks that the mock can load it.
func GenerateApp(a *AppScenario, opt Options) (*cassette.File, error) {
	f := &cassette.File{
		Version: 1,
		Meta: cassette.Meta{
			Format:      cassette.FormatVersion,
			Kind:        cassette.KindApp,
			Description: a.Description,
			Provenance:  cassette.ProvenanceSynthesized,
			Source:      provenanceNote(opt.Source),
		},
	}
	bodies := []struct {
		path string
		body any
	}{
		{"/", object{{"welcome", "Dify OpenAPI"}, {"api_version", "v1"}, {"server_version", a.ServerVersion}}},
	}
	for _, part := range []struct {
		path string
		n    *yaml.Node
	}{{"/info", &a.Info}, {"/parameters", &a.Parameters}, {"/meta", &a.Meta}, {"/site", &a.Site}} {
		v, err := nodeValue(part.n)
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, struct {
			path string
			body any
		}{part.path, v})
	}
	for _, b := range bodies {
		u := BaseURL + b.path
		if b.path == "/" {
			u = BaseURL + "/"
		}
		f.Interactions = append(f.Interactions, cassette.Exchange{
			Method: http.MethodGet, URL: u, RequestHeader: http.Header{},
			Status: http.StatusOK, ResponseHeader: http.Header{"Content-Type": {"application/json"}}, Body: []byte(encode(b.body, styleCompact)),
		}.Interaction())
	}
	if _, err := cassette.ParseApp(cassette.AppName, "generated app description", f); err != nil {
		return nil, err
	}
	return f, nil
}
