package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// multipartBoundary returns the boundary of a multipart/form-data request,
// "" for any other request.
func multipartBoundary(req *http.Request) string {
	ct, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || ct != "multipart/form-data" {
		return ""
	}
	return params["boundary"]
}

// errUploadAborted ends the summary of a body the transport stopped reading.
var errUploadAborted = errors.New("the upstream request ended before the body did")

// teeBody is the upstream request body of a streamed upload: every chunk
// the transport reads from the client is also written to the summarizer's
// pipe, so the body is never held whole. The pipe is closed when the body
// ends or the transport closes it.
type teeBody struct {
	src  io.Reader
	pipe *io.PipeWriter

	// The transport may still read in its own goroutine after RoundTrip
	// returns.
	mu  sync.Mutex
	n   int64
	err error // the first read error other than io.EOF
}

// result is how many bytes were read and the first read error.
func (b *teeBody) result() (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n, b.err
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.src.Read(p)
	b.mu.Lock()
	b.n += int64(n)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
	if n > 0 {
		if _, werr := b.pipe.Write(p[:n]); werr != nil {
			// The summarizer always drains; a write error means the pipe was
			// closed below, after a read error.
			_ = werr
		}
	}
	if err == io.EOF {
		b.pipe.Close()
	} else if err != nil {
		b.pipe.CloseWithError(err)
	}
	return n, err
}

func (b *teeBody) Close() error {
	b.pipe.CloseWithError(errUploadAborted) // no-op after the body ended
	return nil
}

// summarize reads a multipart body from r and describes it: for each file
// part its field, filename, content type, size and sha256; the non-file
// fields' values go to form. Only one part is read at a time, through
// fixed-size buffers. It always reads r to its end, so the writer never
// blocks.
func summarize(r io.Reader, boundary string) (*cassette.UploadSummary, url.Values) {
	defer io.Copy(io.Discard, r) //nolint:errcheck // drain whatever the parser left
	s := &cassette.UploadSummary{Files: []cassette.UploadedPart{}}
	form := url.Values{}
	mr := multipart.NewReader(r, boundary)
	parts := 0
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return s, form
		}
		if err != nil {
			s.Incomplete = err.Error()
			return s, form
		}
		parts++
		if parts > cassette.MaxUploadSummaryParts {
			s.Omitted++
			if _, err := io.Copy(io.Discard, part); err != nil {
				s.Incomplete = err.Error()
				return s, form
			}
			continue
		}
		field := part.FormName()
		if part.FileName() == "" {
			// A text field: kept as a form value unless it is too long.
			var buf bytes.Buffer
			h := sha256.New()
			n, err := io.Copy(io.MultiWriter(h, &limitedBuffer{buf: &buf, max: cassette.MaxUploadFieldValue}), part)
			if err != nil {
				s.Incomplete = err.Error()
				return s, form
			}
			if n <= cassette.MaxUploadFieldValue {
				form.Add(field, buf.String())
				continue
			}
			s.Files = append(s.Files, cassette.UploadedPart{Field: field, ContentType: part.Header.Get("Content-Type"),
				Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
			continue
		}
		h := sha256.New()
		n, err := io.Copy(h, part)
		s.Files = append(s.Files, cassette.UploadedPart{Field: field, Filename: part.FileName(),
			ContentType: part.Header.Get("Content-Type"), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
		if err != nil {
			s.Incomplete = err.Error()
			return s, form
		}
	}
}

// limitedBuffer keeps the first max bytes written to it (and one more, so
// an overflow shows) and discards the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int64
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max + 1 - int64(l.buf.Len()); room > 0 {
		if int64(len(p)) > room {
			l.buf.Write(p[:room])
		} else {
			l.buf.Write(p)
		}
	}
	return len(p), nil
}

// UploadSummarizer streams a multipart request body to whoever reads Body
// while describing it (cassette.UploadSummary: each file's field, name,
// type, size and sha256, and the text fields), so the body is never held
// whole. The recorder's streamed uploads and dify-mock verify's captured
// uploads both use it: upload contents are not stored.
type UploadSummarizer struct {
	body *teeBody
	pw   *io.PipeWriter
	done chan summarized
}

type summarized struct {
	s    *cassette.UploadSummary
	form url.Values
}

// NewUploadSummarizer starts summarizing src, a multipart body with the
// given boundary. Read the body through Body, then call Finish once.
func NewUploadSummarizer(src io.Reader, boundary string) *UploadSummarizer {
	pr, pw := io.Pipe()
	u := &UploadSummarizer{body: &teeBody{src: src, pipe: pw}, pw: pw, done: make(chan summarized, 1)}
	go func() {
		s, form := summarize(pr, boundary)
		u.done <- summarized{s, form}
	}()
	return u
}

// Body is the request body to send.
func (u *UploadSummarizer) Body() io.ReadCloser { return u.body }

// Finish ends the summary (a body not read to its end is marked
// incomplete) and returns it with the text fields, the bytes read and the
// first read error.
func (u *UploadSummarizer) Finish() (summary *cassette.UploadSummary, form url.Values, size int64, readErr error) {
	u.pw.CloseWithError(errUploadAborted) // no-op when the body was read to its end
	sum := <-u.done
	size, readErr = u.body.result()
	sum.s.Size = size
	return sum.s, sum.form, size, readErr
}

// serveUpload proxies a multipart request (an upload, a speech-to-text
// audio file) without buffering it: the client's body streams to the
// upstream while a summarizer hashes it, and the recorded interaction
// stores the summary (cassette.UploadSummary) and the text fields instead
// of the bytes. Only the upstream's (small, JSON) answer is held.
func (r *Recorder) serveUpload(w http.ResponseWriter, req *http.Request, p, boundary string) {
	requested, ok := requestedName(w, req)
	if !ok {
		return
	}
	up := NewUploadSummarizer(http.MaxBytesReader(w, req.Body, r.maxUpload), boundary)
	out, err := r.outbound(req.Context(), req, p, nil)
	if err != nil {
		up.Finish()
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	out.Body = up.Body()
	out.ContentLength = req.ContentLength
	if out.ContentLength == 0 {
		out.ContentLength = -1 // unknown (chunked): the body may still hold bytes
	}
	start := time.Now()
	resp, err := r.transport.RoundTrip(out)
	var reply []byte
	if err == nil {
		reply, err = io.ReadAll(io.LimitReader(resp.Body, maxJSONReply+1))
		resp.Body.Close()
		if err == nil && len(reply) > maxJSONReply {
			err = fmt.Errorf("the upstream answer is larger than %d bytes", maxJSONReply)
		}
	}
	sumS, sumForm, _, readErr := up.Finish()
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(readErr, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "request_entity_too_large", "The data value transmitted exceeds the capacity limit.")
			return
		}
		r.upstreamFailed(w, req, err)
		return
	}
	copyResponseHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(reply)

	summary, err := json.Marshal(sumS)
	if err != nil {
		r.logf("upload summary of %s %s: %v", req.Method, p, err)
		return
	}
	in, err := r.scrub.exchange(cassette.Exchange{
		Method: out.Method, URL: out.URL.String(), RequestHeader: out.Header, RequestBody: summary, Form: sumForm, UploadSummary: true,
		Status: resp.StatusCode, ResponseHeader: resp.Header, HeadersAt: time.Since(start), Body: reply,
	})
	if err != nil { // only frames can be refused, and an upload answer has none
		r.logf("upload of %s %s: %v", req.Method, p, err)
		return
	}
	ids := idsOf(req, p, nil)
	if ids.user == "" {
		ids.user = sumForm.Get("user")
	}
	r.file(in, requested, ids, p == "/files/upload")
}
