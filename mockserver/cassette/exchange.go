package cassette

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"
)

// Exchange is one request and its answer, the shape every interaction of a
// cassette is built from: by the recorder (live turns, uploads, dify-mock
// verify's captures), the console's save-from-journal and the author.
// Exchange.Interaction is the one place that turns it into go-vcr's form.
type Exchange struct {
	Method        string
	URL           string
	RequestHeader http.Header
	RequestBody   []byte
	// Form is the request's form fields as go-vcr keeps them (uploads).
	Form url.Values
	// UploadSummary says RequestBody is an UploadSummary (JSON) in place
	// of the multipart bytes: the interaction gets UploadSummaryHeader.
	UploadSummary  bool
	Status         int
	ResponseHeader http.Header
	// HeadersAt is when the response headers arrived, from the request start.
	HeadersAt time.Duration
	// Frames are the frames of a streamed answer (offsets from the request
	// start); Body is any other answer.
	Frames []RecordedFrame
	Body   []byte
}

// Interaction is x as a cassette interaction. A streamed answer's frames
// become the body and the FramesHeader values (EncodeFrames); any other
// answer is kept as the body. The headers are used as they are (not
// copied): build x from headers the caller owns.
func (x Exchange) Interaction() *vcr.Interaction {
	form := x.Form
	if form == nil {
		form = url.Values{}
	}
	respHeader := x.ResponseHeader
	if respHeader == nil {
		respHeader = http.Header{}
	}
	in := &vcr.Interaction{
		Request: vcr.Request{
			Body:    string(x.RequestBody),
			Form:    form,
			Headers: x.RequestHeader,
			URL:     x.URL,
			Method:  x.Method,
		},
		Response: vcr.Response{
			Body:     string(x.Body),
			Headers:  respHeader,
			Status:   fmt.Sprintf("%d %s", x.Status, http.StatusText(x.Status)),
			Code:     x.Status,
			Duration: x.HeadersAt,
		},
	}
	if x.UploadSummary {
		if in.Request.Headers == nil {
			in.Request.Headers = http.Header{}
		}
		in.Request.Headers.Set(UploadSummaryHeader, UploadSummaryVersion)
	}
	if len(x.Frames) > 0 {
		values, body := EncodeFrames(x.Frames)
		in.Response.Headers[FramesHeader] = values
		in.Response.Body = body
	}
	return in
}
