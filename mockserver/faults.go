package mockserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/rawstream"
)

// Fault injection (docs/mock/faults.md). Which spec applies is decided
// with the rest of what plays: for POST /chat-messages by the steer phase
// (chat_steer.go, header > rule > cassette > server), for every other route
// by withFaults (header > rule > server). Response faults (slow-headers,
// status, empty-response, …) act right after authentication on every route
// but POST /chat-messages, where they act once the request is checked and
// its turn steered (chat_admit.go); stream faults act inside chat streams
// (replay.Play) and are ignored elsewhere.

// beforeResponse runs spec's delay and response fault. It reports whether
// the handler should go on to answer normally.
func (s *appServer) beforeResponse(w http.ResponseWriter, r *http.Request, spec fault.Spec, stream bool) bool {
	if spec.Delay == 0 && spec.Before == nil {
		return true
	}
	s.log.Info("fault", "method", r.Method, "path", r.URL.Path, "fault", spec.String())
	if spec.Delay > 0 && !s.delay(r.Context(), spec.Delay) {
		return false // the client left
	}
	if spec.Before == nil {
		w.Header().Set(fault.Header, spec.String())
		return true
	}
	s.replaceResponse(w, r, spec, stream)
	return false
}

// delay waits d; it returns false when the client went away first. Shutdown
// ends the wait early and lets the request proceed (a chat request then gets
// 503, like any chat request during shutdown).
func (s *appServer) delay(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.closing:
		return true
	case <-ctx.Done():
		return false
	}
}

// replaceResponse answers with spec.Before instead of the real response.
func (s *appServer) replaceResponse(w http.ResponseWriter, r *http.Request, spec fault.Spec, stream bool) {
	b := spec.Before
	if b.Kind == fault.Status {
		h := w.Header()
		h.Set(fault.Header, spec.String())
		if b.RetryAfter != "" {
			h.Set("Retry-After", b.RetryAfter)
		}
		if page := nginxPage(b); page != nil {
			h.Set("Content-Type", "text/html")
			h.Set("Content-Length", strconv.Itoa(len(page)))
			w.WriteHeader(b.Status)
			_, _ = w.Write(page)
			return
		}
		writeError(w, statusError(b))
		return
	}
	// The rest take the connection over. Reading the request body first
	// makes a close a clean FIN: closing with unread input would reset.
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil { // HTTP/2 or a writer that cannot hijack: abort the response
		panic(http.ErrAbortHandler)
	}
	switch b.Kind {
	case fault.EmptyResponse:
		_ = conn.Close()
	case fault.ConnectionResetByPeer:
		rawstream.ResetConn(conn)
	case fault.RandomDataThenClose:
		_, _ = buf.Write(randomData)
		_ = buf.Flush()
		_ = conn.Close()
	case fault.MalformedResponseChunk:
		h := w.Header().Clone()
		ct := "application/json"
		if stream {
			ct = "text/event-stream; charset=utf-8"
		}
		h.Set("Content-Type", ct)
		h.Set("Transfer-Encoding", "chunked")
		h.Set(fault.Header, spec.String())
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\n")
		_ = h.Write(buf)
		_, _ = buf.WriteString("\r\n" + brokenChunk)
		_ = buf.Flush()
		_ = conn.Close()
	}
}

// resetAfterStream resets the connection of a response that is under way
// (a stream fault asked for it). Buffered frames are flushed first.
func resetAfterStream(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	rawstream.ResetConn(conn)
}

// randomData is random-data-then-close's payload: 256 bytes from a fixed
// seed, so every run sends the same garbage.
var randomData = func() []byte {
	rng := rand.New(rand.NewPCG(0xd1f7, 0xfa17))
	out := make([]byte, 256)
	for i := range out {
		out[i] = byte(rng.UintN(256))
	}
	return out
}()

// brokenChunk is not a chunk: its size line is not hexadecimal.
const brokenChunk = "not-a-chunk-size\r\n{\"event\":\"agent_mess"

// Default Dify envelopes for status faults (docs/api §1.4, §2.3): Dify's own
// codes where the reference names one, else werkzeug's code and text.
var statusDefaults = map[int]*apiError{
	http.StatusBadRequest:            newError(http.StatusBadRequest, "bad_request", "The browser (or proxy) sent a request that this server could not understand."),
	http.StatusUnauthorized:          newError(http.StatusUnauthorized, "unauthorized", msgAuthInvalid),
	http.StatusForbidden:             newError(http.StatusForbidden, "forbidden", "The app's API service has been disabled."),
	http.StatusNotFound:              errNotFound,
	http.StatusMethodNotAllowed:      errMethodNotAllowed,
	http.StatusRequestEntityTooLarge: errTooLarge,
	http.StatusTooManyRequests:       newError(http.StatusTooManyRequests, "too_many_requests", "Too many requests. Please try again later."),
	http.StatusInternalServerError:   errInternal,
	http.StatusServiceUnavailable:    newError(http.StatusServiceUnavailable, "service_unavailable", "The server is temporarily unable to service your request due to maintenance downtime or capacity problems. Please try again later."),
}

// statusError is a status fault's envelope: the status's default, with
// the spec's code and message when given.
func statusError(b *fault.Before) *apiError {
	e := apiError{Status: b.Status}
	if d, ok := statusDefaults[b.Status]; ok {
		e.Code, e.Message = d.Code, d.Message
	} else {
		// werkzeug's style: the snake-cased reason phrase.
		text := http.StatusText(b.Status)
		e.Code, e.Message = "unknown", "Unknown error."
		if text != "" {
			e.Code = strings.Trim(strings.Map(func(r rune) rune {
				switch {
				case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
					return r
				case r >= 'A' && r <= 'Z':
					return r + 'a' - 'A'
				case r == ' ' || r == '-':
					return '_'
				}
				return -1
			}, text), "_")
			e.Message = text + "."
		}
	}
	if b.Code != "" {
		e.Code = b.Code
	}
	if b.Message != "" {
		e.Message = b.Message
	}
	return &e
}

// nginxPage is the page Dify's bundled nginx answers 502 and 504 with (the
// API behind it is down or too slow), unless the spec asks for an envelope.
func nginxPage(b *fault.Before) []byte {
	if b.Code != "" || b.Message != "" {
		return nil
	}
	var title string
	switch b.Status {
	case http.StatusBadGateway:
		title = "502 Bad Gateway"
	case http.StatusGatewayTimeout:
		title = "504 Gateway Time-out"
	default:
		return nil
	}
	var p bytes.Buffer
	fmt.Fprintf(&p, "<html>\r\n<head><title>%s</title></head>\r\n<body>\r\n<center><h1>%s</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", title, title)
	return p.Bytes()
}
