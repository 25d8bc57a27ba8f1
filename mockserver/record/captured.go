package record

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Capture is one request and its answer captured outside the recording
// proxy (dify-mock verify captures the live answers of the cases that
// differ). SaveCaptured turns captures into a cassette through the same
// scrubbing and save-time check as a recording.
type Capture struct {
	Method         string
	URL            string
	RequestHeader  http.Header
	RequestBody    []byte
	Status         int
	ResponseHeader http.Header
	// HeadersAt is when the response headers arrived, from the request start.
	HeadersAt time.Duration
	// Frames are the frames of a streamed answer (offsets from the request
	// start); Body is any other answer.
	Frames []cassette.RecordedFrame
	Body   []byte
}

// SaveCaptured writes captures as a new chat cassette dir/<name>.yaml (or
// <name>-2.yaml, … when the name is taken; an existing file is never
// replaced) and returns its path. Every capture passes through the
// recorder's scrubber: credential headers dropped, the key and the built-in
// secret patterns redacted, then rules. The encoded file must decode, load
// as a chat cassette (so captures must include a POST /chat-messages) and
// pass the secret check, or nothing is written and the error is a
// *SaveRefusedError.
func SaveCaptured(dir, name string, meta cassette.Meta, key string, rules []Rule, captures []Capture) (string, error) {
	if err := cassette.ValidName(name); err != nil {
		return "", err
	}
	if name == cassette.AppName {
		return "", fmt.Errorf("cassette name %q is reserved for the app description", name)
	}
	r := &Recorder{scrub: newScrubber(key, rules)}
	f := &cassette.File{Meta: meta, Interactions: make([]*vcr.Interaction, 0, len(captures))}
	for i, c := range captures {
		in, err := r.captured(c)
		if err != nil {
			return "", &SaveRefusedError{Cassette: name, Findings: []string{fmt.Sprintf("capture %d: %v", i, err)}}
		}
		f.Interactions = append(f.Interactions, in)
	}
	f.Meta.Description = r.scrub.string(f.Meta.Description)
	data, err := cassette.Encode(f)
	if err != nil {
		return "", err
	}
	if err := r.check(name, data, cassette.KindChat); err != nil {
		return "", err
	}
	for n := 1; n <= maxNameTries; n++ {
		path, err := cassette.WriteNew(dir, candidateName(name, n), data)
		if errors.Is(err, cassette.ErrExists) {
			continue
		}
		return path, err
	}
	return "", fmt.Errorf("no free name from %s.yaml to %s.yaml", name, candidateName(name, maxNameTries))
}

// captured is the scrubbed interaction of c. Stream frames are scrubbed one
// by one, as turnInteraction does for recorded turns.
func (r *Recorder) captured(c Capture) (*vcr.Interaction, error) {
	in := &vcr.Interaction{
		Request: vcr.Request{
			Body:    r.scrub.string(string(c.RequestBody)),
			Form:    url.Values{},
			Headers: r.scrub.header(c.RequestHeader),
			URL:     r.scrub.url(c.URL),
			Method:  c.Method,
		},
		Response: vcr.Response{
			Headers:  r.scrub.header(c.ResponseHeader),
			Status:   fmt.Sprintf("%d %s", c.Status, http.StatusText(c.Status)),
			Code:     c.Status,
			Duration: c.HeadersAt,
		},
	}
	if len(c.Frames) == 0 {
		in.Response.Body = r.scrub.string(string(c.Body))
		return in, nil
	}
	clean := make([]cassette.RecordedFrame, len(c.Frames))
	for i, f := range c.Frames {
		raw := r.scrub.bytes(f.Raw)
		if endsFrame(f.Raw) && !endsFrame(raw) {
			return nil, fmt.Errorf("a redaction rule removed the blank line that ends frame %d", i)
		}
		clean[i] = cassette.RecordedFrame{Offset: f.Offset, Raw: raw}
	}
	values, encoded := cassette.EncodeFrames(clean)
	in.Response.Headers[cassette.FramesHeader] = values
	in.Response.Body = encoded
	return in, nil
}
