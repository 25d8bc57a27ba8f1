package verify

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// maxCapture bounds the bytes kept of one answer (the conformance runner
// reads at most 4 MiB of a JSON body; streams of one turn are far smaller).
const maxCapture = 8 << 20

// exchange is one request and answer as they crossed the wire, kept so
// verify can compare headers and per-event fields, and write the live
// answer of a differing case as a cassette.
type exchange struct {
	method    string
	url       string
	reqHeader http.Header
	reqBody   []byte
	// A multipart body is kept as its summary (reqBody is then the
	// UploadSummary JSON, form its text fields): upload contents are never
	// held or written (a 20 MB case body went into --record-diff files).
	form       url.Values
	upload     bool
	status     int
	respHeader http.Header
	headersAt  time.Duration

	mu     sync.Mutex
	body   []byte
	arrive []arrival // when each read of the body ended
}

type arrival struct {
	end int // len(body) after the read
	at  time.Duration
}

// capturing is an http.RoundTripper that records every exchange in order.
type capturing struct {
	base http.RoundTripper

	mu   sync.Mutex
	list []*exchange
}

func (c *capturing) RoundTrip(req *http.Request) (*http.Response, error) {
	ex := &exchange{method: req.Method, url: req.URL.String(), reqHeader: req.Header.Clone()}
	var up *record.UploadSummarizer
	if boundary := multipartBoundary(req.Header); boundary != "" && req.Body != nil && req.Body != http.NoBody {
		up = record.NewUploadSummarizer(req.Body, boundary)
		req.Body = up.Body()
	} else if req.Body != nil && req.Body != http.NoBody {
		data, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		ex.reqBody = data
		req.Body = io.NopCloser(bytes.NewReader(data))
	}
	c.mu.Lock()
	c.list = append(c.list, ex)
	c.mu.Unlock()
	start := time.Now()
	resp, err := c.base.RoundTrip(req)
	if up != nil {
		sum, form, _, _ := up.Finish()
		data, _ := json.Marshal(sum)
		ex.reqBody, ex.form, ex.upload = data, form, true
	}
	if err != nil {
		return nil, err
	}
	ex.status, ex.respHeader, ex.headersAt = resp.StatusCode, resp.Header.Clone(), time.Since(start)
	resp.Body = &teeBody{rc: resp.Body, ex: ex, start: start}
	return resp, nil
}

// count is the number of exchanges so far; since returns those from n on.
func (c *capturing) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.list)
}

func (c *capturing) since(n int) []*exchange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*exchange(nil), c.list[n:]...)
}

type teeBody struct {
	rc    io.ReadCloser
	ex    *exchange
	start time.Time
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 {
		t.ex.mu.Lock()
		if len(t.ex.body)+n <= maxCapture {
			t.ex.body = append(t.ex.body, p[:n]...)
			t.ex.arrive = append(t.ex.arrive, arrival{end: len(t.ex.body), at: time.Since(t.start)})
		}
		t.ex.mu.Unlock()
	}
	return n, err
}

func (t *teeBody) Close() error { return t.rc.Close() }

func multipartBoundary(h http.Header) string {
	mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return ""
	}
	return params["boundary"]
}

// bodyBytes is what has been read of the answer so far.
func (ex *exchange) bodyBytes() []byte {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return append([]byte(nil), ex.body...)
}

func (ex *exchange) isStream() bool {
	return dify.IsEventStream(ex.respHeader)
}

// frames splits a streamed answer into SSE frames, each stamped with the
// time its last byte arrived.
func (ex *exchange) frames() []cassette.RecordedFrame {
	ex.mu.Lock()
	body := append([]byte(nil), ex.body...)
	arrive := append([]arrival(nil), ex.arrive...)
	ex.mu.Unlock()
	var out []cassette.RecordedFrame
	fr := dify.NewFrameReader(bytes.NewReader(body))
	pos, k := 0, 0
	for {
		f, err := fr.Next()
		if len(f.Raw) > 0 {
			pos += len(f.Raw)
			for k < len(arrive)-1 && arrive[k].end < pos {
				k++
			}
			var at time.Duration
			if k < len(arrive) {
				at = arrive[k].at
			}
			out = append(out, cassette.RecordedFrame{Offset: at, Raw: append([]byte(nil), f.Raw...)})
		}
		if err != nil { // io.EOF, or a cut or oversized frame: keep what came whole
			return out
		}
	}
}

// capture converts ex for record.SaveCaptured.
func (ex *exchange) capture() cassette.Exchange {
	c := cassette.Exchange{
		Method: ex.method, URL: ex.url, RequestHeader: ex.reqHeader, RequestBody: ex.reqBody, Form: ex.form, UploadSummary: ex.upload,
		Status: ex.status, ResponseHeader: ex.respHeader, HeadersAt: ex.headersAt,
	}
	if ex.status == http.StatusOK && ex.isStream() {
		c.Frames = ex.frames()
	} else {
		c.Body = ex.bodyBytes()
	}
	return c
}
