package cassette

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
)

// UploadSummaryHeader marks a recorded multipart request (POST /files/upload,
// POST /audio-to-text) whose body is stored as an UploadSummary instead of
// its bytes: the recorder streams uploads to the upstream and keeps only
// what describes them. Its value is UploadSummaryVersion. The non-file form
// fields are kept in the interaction's request form.
const UploadSummaryHeader = "X-Dify-Mock-Upload-Summary"

// UploadSummaryVersion is the value of UploadSummaryHeader this package
// writes and accepts.
const UploadSummaryVersion = "1"

// UploadSummary is the stored request body of a summarized upload.
type UploadSummary struct {
	// Size is the whole multipart body's size in bytes, as sent upstream.
	Size int64 `json:"size"`
	// Files are the file parts, in request order. A text field too large
	// to keep (over MaxUploadFieldValue bytes) is summarized as a file
	// part without a filename.
	Files []UploadedPart `json:"files"`
	// Omitted counts parts beyond the summary's bound (neither listed here
	// nor kept as form fields).
	Omitted int `json:"omitted,omitempty"`
	// Incomplete says the body could not be read to its end (the client or
	// upstream stopped, or it is not well-formed multipart): the listed
	// parts are what was seen.
	Incomplete string `json:"incomplete,omitempty"`
}

// UploadedPart describes one file part of a summarized upload.
type UploadedPart struct {
	Field       string `json:"field"`
	Filename    string `json:"filename,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"` // hex of the part's content
}

// Bounds of an upload summary: how many parts are described, and how long
// a text field may be to be kept as a form value.
const (
	MaxUploadSummaryParts = 256
	MaxUploadFieldValue   = 64 << 10
)

// IsUploadSummary reports whether in's request body is an upload summary.
func IsUploadSummary(in *vcr.Interaction) bool {
	return len(headerValues(in.Request.Headers, UploadSummaryHeader)) > 0
}

// ParseUploadSummary decodes and checks the summary stored in in's request
// body.
func ParseUploadSummary(in *vcr.Interaction) (*UploadSummary, error) {
	v := headerValues(in.Request.Headers, UploadSummaryHeader)
	if len(v) != 1 || v[0] != UploadSummaryVersion {
		return nil, fmt.Errorf("%s must be %q, got %q", UploadSummaryHeader, UploadSummaryVersion, v)
	}
	dec := json.NewDecoder(strings.NewReader(in.Request.Body))
	dec.DisallowUnknownFields()
	var s UploadSummary
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("upload summary body: %v", err)
	}
	if s.Size < 0 || s.Omitted < 0 {
		return nil, fmt.Errorf("upload summary: negative size or omitted count")
	}
	var sum int64
	for i, p := range s.Files {
		// An empty Field is allowed: it records a part whose
		// Content-Disposition has no name, as a client sent it.
		if p.Size < 0 {
			return nil, fmt.Errorf("upload summary file %d: negative size", i)
		}
		if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 || strings.ToLower(p.SHA256) != p.SHA256 {
			return nil, fmt.Errorf("upload summary file %d: sha256 must be 64 lowercase hex digits, got %q", i, p.SHA256)
		}
		sum += p.Size
	}
	if s.Incomplete == "" && sum > s.Size {
		return nil, fmt.Errorf("upload summary: the file parts hold %d bytes, more than the body's %d", sum, s.Size)
	}
	return &s, nil
}
