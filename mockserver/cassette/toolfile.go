package cassette

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
)

// MaxToolFileSize bounds the bytes one tool file in a cassette may carry
// (docs/mock/cassette-format.md#tool-files): an agent's tool output is an
// image or a short document, and every replay of the cassette serves the same
// bytes from memory, so a cassette cannot make the mock hold more than this
// per file.
const MaxToolFileSize = 4 << 20

// toolFilePath is Dify's tool file route, /files/tools/<uuid>.<extension>
// (api/controllers/files/tool_files.py), outside /v1.
var toolFilePath = regexp.MustCompile(`^/files/tools/([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})\.([^/.]+)$`)

// ToolFile is a file a tool produced, as a cassette carries it: the answer
// to a GET of its signed /files/tools URL, recorded or authored. The mock
// serves Data when a replayed turn's message_file URL names the file.
type ToolFile struct {
	ID        string // the recorded file id, lower-case
	Extension string // from the URL path, without the dot
	// MimeType is the recorded Content-Type without parameters, lower-case
	// (ToolFile.mimetype); "" when none was recorded.
	MimeType string
	// Name is the file name the recorded Content-Disposition gave, else
	// "<id>.<extension>".
	Name string
	Data []byte
}

// ToolFileURL reports whether a URL's path is a tool file's, and its id and
// extension.
func ToolFileURL(rawURL string) (id, ext string, ok bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", false
	}
	m := toolFilePath.FindStringSubmatch(u.Path)
	if m == nil {
		return "", "", false
	}
	return strings.ToLower(m[1]), m[2], true
}

// toolFile reads a GET /files/tools/… interaction; ok is false for any
// other interaction. Only a 200 answer carries a file; a recorded error is
// kept as an ordinary interaction.
func toolFile(in *vcr.Interaction) (*ToolFile, bool, error) {
	if !strings.EqualFold(in.Request.Method, http.MethodGet) {
		return nil, false, nil
	}
	id, ext, ok := ToolFileURL(in.Request.URL)
	if !ok || (in.Response.Code != 0 && in.Response.Code != http.StatusOK) {
		return nil, false, nil
	}
	if n := len(in.Response.Body); n > MaxToolFileSize {
		return nil, true, fmt.Errorf("tool file %s.%s is %d bytes, over the %d-byte limit", id, ext, n, MaxToolFileSize)
	}
	f := &ToolFile{ID: id, Extension: ext, Name: id + "." + ext, Data: []byte(in.Response.Body)}
	if ct := headerValues(in.Response.Headers, "Content-Type"); len(ct) > 0 {
		f.MimeType = Mimetype(ct[0])
	}
	if cd := headerValues(in.Response.Headers, "Content-Disposition"); len(cd) > 0 {
		if _, params, err := mime.ParseMediaType(cd[0]); err == nil && params["filename"] != "" {
			f.Name = params["filename"]
		}
	}
	return f, true, nil
}

// Mimetype is Werkzeug's FileStorage.mimetype / Response.mimetype for a
// Content-Type value: http.parse_options_header's value (the text before the
// first ";", stripped), lower-cased. Parameters are dropped; nothing else is
// checked, so "; charset=x" is "".
func Mimetype(contentType string) string {
	v, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(v))
}
