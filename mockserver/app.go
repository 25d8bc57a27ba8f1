package mockserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"

	"github.com/julienschmidt/httprouter"
)

// serverInfo is GET /v1/ (docs/api §1.1), unauthenticated.
func (s *appServer) serverInfo() httprouter.Handle {
	resp := s.recordedAppResponse("/", nil)
	return func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) { resp.write(w) }
}

// appResponse serves /info, /parameters, /meta and /site byte for byte from
// the app description (docs/api §13–§16), so a recorded app replays as itself.
func (s *appServer) appResponse(path string) httprouter.Handle {
	var body []byte
	if path == "/info" {
		body = s.info
	}
	resp := s.recordedAppResponse(path, body)
	return func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) { resp.write(w) }
}

// fixedResponse is a response whose status, headers and body never change,
// made ready once: these routes are what load tests poll, and copying and
// canonicalising the recorded headers and formatting Content-Length were a
// third of their handler's cost.
type fixedResponse struct {
	status int
	header http.Header // canonical keys; the values are shared, never written
	body   []byte
}

// recordedAppResponse is the app description's response for path, with
// body in place of the recorded body when it is not nil.
func (s *appServer) recordedAppResponse(path string, body []byte) *fixedResponse {
	resp := s.app.Responses[path]
	if body == nil {
		body = resp.Body
	}
	h := http.Header{}
	copyRecordedHeader(h, resp.Header)
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	for k, v := range h {
		// Every response shares these values: a handler's Add must copy,
		// not append into the shared array.
		h[k] = slices.Clip(v)
	}
	return &fixedResponse{status: resp.Status, header: h, body: body}
}

func (f *fixedResponse) write(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range f.header {
		h[k] = v
	}
	w.WriteHeader(f.status)
	_, _ = w.Write(f.body)
}

var modeRE = regexp.MustCompile(`("mode"\s*:\s*)"[^"]*"`)

// patchMode rewrites /info's mode when the server is told to impersonate a
// different mode than the recorded app (--mode); the rest stays byte for byte.
func patchMode(info []byte, recorded, mode string) []byte {
	if recorded == mode {
		return info
	}
	if modeRE.Match(info) {
		return modeRE.ReplaceAll(info, []byte(`${1}"`+mode+`"`))
	}
	return info
}

// formField is one /parameters.user_input_form entry (docs/api §14), read from the
// raw body so validation does not depend on any decoder's view of it.
type formField struct {
	Control   string
	Variable  string
	Required  bool
	MaxLength int
	Options   []string
	// Default is the form's `default`, decoded with json.Number so an
	// integer default stays an integer; nil when the form has none.
	Default any
}

func parseForm(params []byte) ([]formField, error) {
	var raw struct {
		Form []map[string]json.RawMessage `json:"user_input_form"`
	}
	if err := json.Unmarshal(params, &raw); err != nil {
		return nil, err
	}
	var out []formField
	for i, item := range raw.Form {
		for control, body := range item {
			var f struct {
				Variable  string   `json:"variable"`
				Required  bool     `json:"required"`
				MaxLength *int     `json:"max_length"`
				Options   []string `json:"options"`
				Default   any      `json:"default"`
			}
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			if err := dec.Decode(&f); err != nil {
				return nil, fmt.Errorf("item %d (%s): %v", i, control, err)
			}
			ff := formField{Control: control, Variable: f.Variable, Required: f.Required, Options: f.Options, Default: f.Default}
			if f.MaxLength != nil {
				ff.MaxLength = *f.MaxLength
			}
			out = append(out, ff)
		}
	}
	return out, nil
}

// copyRecordedHeader copies a recorded response's headers into h, leaving out
// those that describe the original connection or would replay a cookie, and
// defaults the Content-Type to JSON as Dify's error and app bodies are.
func copyRecordedHeader(h, recorded http.Header) {
	for k, v := range recorded {
		k = http.CanonicalHeaderKey(k)
		switch k {
		case "Content-Length", "Transfer-Encoding", "Connection", "Date", "Set-Cookie":
			continue
		}
		h[k] = v
	}
	if ct := h["Content-Type"]; len(ct) == 0 || ct[0] == "" {
		h["Content-Type"] = []string{"application/json"}
	}
}
