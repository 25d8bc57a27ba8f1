// Package cassette reads and writes dify-mock cassettes: go-vcr v2 cassette
// files (version 1) extended so that an SSE chat stream keeps its per-frame
// timing. The format is documented in docs/mock/cassette-format.md.
//
// A cassette file is a YAML document with go-vcr's `version` and
// `interactions` keys plus a top-level `dify_mock` block (Meta). go-vcr's own
// cassette.Load reads these files unchanged (it ignores the extra key). A chat
// interaction's response body is the recorded SSE byte stream; its response
// header X-Dify-Mock-Frames lists, per frame, "<offset-ms> <length-bytes>",
// which splits the body back into frames and says when each was sent.
package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
	"gopkg.in/yaml.v3"

	"github.com/difyops/terraform-provider-dify/dify"
)

// FormatVersion is the dify_mock.format this package writes and accepts.
const FormatVersion = 1

// Header names dify-mock keeps inside recorded interactions. They are metadata
// for the mock and are never sent to clients.
const (
	HeaderPrefix        = "X-Dify-Mock-"
	FramesHeader        = "X-Dify-Mock-Frames"
	ModelRequestsHeader = "X-Dify-Mock-Model-Requests"
)

// NameHeader names a cassette on the wire: a request to dify-mock serve
// picks the cassette to replay with it, a request to dify-mock record the
// cassette to record into, and both set it on chat responses to say which
// cassette the turn came from or went to (mockserver.HeaderCassette is the
// same header).
const NameHeader = "X-Dify-Mock-Cassette"

// Kinds of cassette.
const (
	KindChat = "chat" // chat turns (and any other interactions of that session)
	KindApp  = "app"  // the app description: GET /, /info, /parameters, /meta, /site
)

// Provenance values.
const (
	ProvenanceRecorded    = "recorded"
	ProvenanceSynthesized = "synthesized"
)

// Meta is the top-level `dify_mock` block.
type Meta struct {
	Format      int    `yaml:"format"`
	Kind        string `yaml:"kind"`
	Description string `yaml:"description,omitempty"`
	// Provenance says whether the data came from a live Dify ("recorded") or
	// was made without one ("synthesized"); Source says how.
	Provenance string `yaml:"provenance"`
	Source     string `yaml:"source,omitempty"`
	RecordedAt string `yaml:"recorded_at,omitempty"`
	// Mode is the app mode the stream belongs to: "agent" or "agent-chat".
	Mode string `yaml:"mode,omitempty"`
	// Default marks the cassette served when nothing else matches.
	Default bool `yaml:"default,omitempty"`
	// Fault is a fault spec applied to every replay of this cassette.
	Fault string `yaml:"fault,omitempty"`
	// SuggestedQuestions answer GET /messages/:id/suggested for its messages.
	SuggestedQuestions []string `yaml:"suggested_questions,omitempty"`
	// Transcript answers POST /audio-to-text when this cassette is selected.
	Transcript string `yaml:"transcript,omitempty"`
}

// File is the on-disk document.
type File struct {
	Version      int                `yaml:"version"`
	Meta         Meta               `yaml:"dify_mock"`
	Interactions []*vcr.Interaction `yaml:"interactions"`
}

// RecordedFrame is one SSE frame of a recorded stream.
type RecordedFrame struct {
	// Offset is when the frame was sent, measured from the request start.
	Offset time.Duration
	// Raw is the frame's exact bytes, terminating blank line included.
	Raw []byte
}

// RecordedTurn is one recorded POST /chat-messages interaction.
type RecordedTurn struct {
	Interaction int // index in the file, for error messages
	Request     dify.ChatRequest
	Status      int
	Header      http.Header // response headers without X-Dify-Mock-*
	Frames      []RecordedFrame
	// ModelRequests is the model-request count the turn consumes for run
	// limits; 0 means "count one per distinct agent_thought position".
	ModelRequests int
}

// Cassette is a loaded chat cassette.
type Cassette struct {
	Name  string
	Path  string
	Meta  Meta
	Turns []*RecordedTurn
	// Others are the non-chat interactions, kept as recorded.
	Others []*vcr.Interaction
	// ToolFiles are the tool files among Others (GET /files/tools/… answered
	// 200), by recorded file id.
	ToolFiles map[string]*ToolFile
	// Digest is the SHA-256 of the file the cassette was loaded from (zero
	// for one made in memory): two apps that keep the same file share its
	// compiled form.
	Digest [32]byte
}

// Response is a recorded non-streaming answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// App is a loaded app description. Responses are keyed by API path relative
// to /v1 ("/", "/info", "/parameters", "/meta", "/site").
type App struct {
	Name       string
	Path       string
	Meta       Meta
	Responses  map[string]*Response
	Info       dify.AppInfo
	Parameters dify.AppParameters
}

// AppPaths are the GETs an app description must contain.
var AppPaths = []string{"/", "/info", "/parameters", "/meta", "/site"}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// ValidName checks a cassette name: lower-case letters, digits, '.', '_',
// '-', starting with a letter or digit, at most 100 characters. Names never
// contain path separators or "..", so they cannot escape the cassette folder.
func ValidName(name string) error {
	if !nameRE.MatchString(name) || strings.Contains(name, "..") {
		return fmt.Errorf("invalid cassette name %q: use lower-case letters, digits, '.', '_' and '-' (no path separators)", name)
	}
	return nil
}

// Error locates a problem inside a cassette file.
type Error struct {
	File        string
	Interaction int // -1 when not about one interaction
	Frame       int // -1 when not about one frame
	Reason      string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Interaction >= 0 {
		fmt.Fprintf(&b, ": interaction %d", e.Interaction)
	}
	if e.Frame >= 0 {
		fmt.Fprintf(&b, ": frame %d", e.Frame)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

func fileErr(file string, reason string, args ...any) *Error {
	return &Error{File: file, Interaction: -1, Frame: -1, Reason: fmt.Sprintf(reason, args...)}
}

// Decode parses a cassette document without interpreting it.
func Decode(file string, data []byte) (*File, error) {
	var f File
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fileErr(file, "not a YAML cassette: %v", err)
	}
	if f.Version != 1 {
		return nil, fileErr(file, "go-vcr cassette version %d is not supported (want 1)", f.Version)
	}
	if f.Meta.Format == 0 {
		return nil, fileErr(file, "missing dify_mock block (format, kind, provenance)")
	}
	if f.Meta.Format != FormatVersion {
		return nil, fileErr(file, "dify_mock.format %d is not supported (want %d)", f.Meta.Format, FormatVersion)
	}
	switch f.Meta.Provenance {
	case ProvenanceRecorded, ProvenanceSynthesized:
	default:
		return nil, fileErr(file, "dify_mock.provenance must be %q or %q, got %q", ProvenanceRecorded, ProvenanceSynthesized, f.Meta.Provenance)
	}
	for i, in := range f.Interactions {
		if in == nil {
			return nil, &Error{File: file, Interaction: i, Frame: -1, Reason: "empty interaction"}
		}
	}
	return &f, nil
}

// Encode renders a cassette document (with the leading "---" go-vcr writes).
func Encode(f *File) ([]byte, error) {
	if f.Version == 0 {
		f.Version = 1
	}
	if f.Meta.Format == 0 {
		f.Meta.Format = FormatVersion
	}
	out, err := yaml.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), out...), nil
}

// APIPath returns the path of a recorded URL relative to the API root (the
// part after "/v1"), e.g. "http://x/v1/chat-messages" → "/chat-messages".
func APIPath(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	p := u.Path
	if i := strings.Index(p, "/v1"); i >= 0 && (len(p) == i+3 || p[i+3] == '/') {
		p = p[i+3:]
	}
	if p == "" {
		p = "/"
	}
	return p, nil
}

// IsChat reports whether an interaction is a POST /chat-messages.
func IsChat(in *vcr.Interaction) bool {
	p, err := APIPath(in.Request.URL)
	return err == nil && strings.EqualFold(in.Request.Method, http.MethodPost) && p == "/chat-messages"
}

// EncodeFrames returns the X-Dify-Mock-Frames values and the body for frames.
func EncodeFrames(frames []RecordedFrame) ([]string, string) {
	values := make([]string, len(frames))
	var body bytes.Buffer
	for i, f := range frames {
		values[i] = strconv.FormatFloat(float64(f.Offset.Microseconds())/1000, 'f', 3, 64) + " " + strconv.Itoa(len(f.Raw))
		body.Write(f.Raw)
	}
	return values, body.String()
}

// DecodeFrames splits body into frames using the X-Dify-Mock-Frames values.
// Offsets must be non-negative and non-decreasing; lengths must add up to the
// body length exactly.
func DecodeFrames(values []string, body string) ([]RecordedFrame, error) {
	frames := make([]RecordedFrame, 0, len(values))
	pos := 0
	var last time.Duration
	for i, v := range values {
		fields := strings.Fields(v)
		if len(fields) != 2 {
			return nil, &Error{Interaction: -1, Frame: i, Reason: fmt.Sprintf("%s value %q: want \"<offset-ms> <length>\"", FramesHeader, v)}
		}
		ms, err := strconv.ParseFloat(fields[0], 64)
		if err != nil || ms < 0 || ms > float64(24*time.Hour/time.Millisecond) {
			return nil, &Error{Interaction: -1, Frame: i, Reason: fmt.Sprintf("bad offset %q (milliseconds, 0 to 24h)", fields[0])}
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil || n <= 0 {
			return nil, &Error{Interaction: -1, Frame: i, Reason: fmt.Sprintf("bad length %q (positive byte count)", fields[1])}
		}
		off := time.Duration(ms * float64(time.Millisecond))
		if off < last {
			return nil, &Error{Interaction: -1, Frame: i, Reason: fmt.Sprintf("offset %s is before the previous frame's %s", off, last)}
		}
		last = off
		if pos+n > len(body) {
			return nil, &Error{Interaction: -1, Frame: i, Reason: fmt.Sprintf("length %d runs past the end of the body (%d bytes)", n, len(body))}
		}
		frames = append(frames, RecordedFrame{Offset: off, Raw: []byte(body[pos : pos+n])})
		pos += n
	}
	if pos != len(body) {
		return nil, &Error{Interaction: -1, Frame: -1, Reason: fmt.Sprintf("frames cover %d bytes but the body has %d", pos, len(body))}
	}
	return frames, nil
}

// stripMockHeaders copies h without X-Dify-Mock-* headers.
func stripMockHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), HeaderPrefix) {
			continue
		}
		out[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
	return out
}

func headerValues(h http.Header, name string) []string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// ParseChat interprets a decoded file of kind "chat".
func ParseChat(name, path string, f *File) (*Cassette, error) {
	c := &Cassette{Name: name, Path: path, Meta: f.Meta}
	for i, in := range f.Interactions {
		if !IsChat(in) {
			c.Others = append(c.Others, in)
			tf, ok, err := toolFile(in)
			if err != nil {
				return nil, &Error{File: path, Interaction: i, Frame: -1, Reason: err.Error()}
			}
			if ok {
				if c.ToolFiles == nil {
					c.ToolFiles = map[string]*ToolFile{}
				}
				c.ToolFiles[tf.ID] = tf
			}
			continue
		}
		t, err := parseTurn(in)
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				ce.File, ce.Interaction = path, i
				return nil, ce
			}
			return nil, &Error{File: path, Interaction: i, Frame: -1, Reason: err.Error()}
		}
		t.Interaction = i
		c.Turns = append(c.Turns, t)
	}
	if len(c.Turns) == 0 {
		return nil, fileErr(path, "no POST /chat-messages interaction")
	}
	return c, nil
}

func parseTurn(in *vcr.Interaction) (*RecordedTurn, error) {
	t := &RecordedTurn{Status: in.Response.Code, Header: stripMockHeaders(in.Response.Headers)}
	if t.Status == 0 {
		t.Status = http.StatusOK
	}
	if err := json.Unmarshal([]byte(in.Request.Body), &t.Request); err != nil {
		return nil, fmt.Errorf("request body is not a chat request: %v", err)
	}
	if v := headerValues(in.Response.Headers, ModelRequestsHeader); len(v) > 0 {
		n, err := strconv.Atoi(strings.TrimSpace(v[0]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s %q is not a non-negative integer", ModelRequestsHeader, v[0])
		}
		t.ModelRequests = n
	}
	values := headerValues(in.Response.Headers, FramesHeader)
	if t.Status != http.StatusOK {
		// A recorded pre-stream error: the body is a JSON error, not frames.
		t.Frames = []RecordedFrame{{Raw: []byte(in.Response.Body)}}
		return t, nil
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("200 chat response without %s header", FramesHeader)
	}
	frames, err := DecodeFrames(values, in.Response.Body)
	if err != nil {
		return nil, err
	}
	t.Frames = frames
	return t, nil
}

// ParseApp interprets a decoded file of kind "app".
func ParseApp(name, path string, f *File) (*App, error) {
	a := &App{Name: name, Path: path, Meta: f.Meta, Responses: map[string]*Response{}}
	for i, in := range f.Interactions {
		p, err := APIPath(in.Request.URL)
		if err != nil || !strings.EqualFold(in.Request.Method, http.MethodGet) {
			return nil, &Error{File: path, Interaction: i, Frame: -1, Reason: fmt.Sprintf("app descriptions hold GETs only, got %s %s", in.Request.Method, in.Request.URL)}
		}
		code := in.Response.Code
		if code == 0 {
			code = http.StatusOK
		}
		a.Responses[p] = &Response{Status: code, Header: stripMockHeaders(in.Response.Headers), Body: []byte(in.Response.Body)}
	}
	for _, p := range AppPaths {
		if _, ok := a.Responses[p]; !ok {
			return nil, fileErr(path, "app description lacks GET %s", p)
		}
	}
	if err := json.Unmarshal(a.Responses["/info"].Body, &a.Info); err != nil {
		return nil, fileErr(path, "GET /info body: %v", err)
	}
	if err := json.Unmarshal(a.Responses["/parameters"].Body, &a.Parameters); err != nil {
		return nil, fileErr(path, "GET /parameters body: %v", err)
	}
	return a, nil
}
