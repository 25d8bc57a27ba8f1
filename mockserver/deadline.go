package mockserver

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// DefaultBodyReadTimeout is Config.BodyReadTimeout's default: long enough
// for the largest upload Dify accepts (100 MB of video) over a slow link,
// short enough that connections dribbling a body are reclaimed.
const DefaultBodyReadTimeout = 2 * time.Minute

// errRequestTimeout is Werkzeug's RequestTimeout, in Dify's envelope.
var errRequestTimeout = newError(http.StatusRequestTimeout, "request_timeout",
	"The server closed the network connection because the browser didn't finish the request within the specified time.")

// armBodyDeadline bounds the time a client may take to send its request body.
// The deadline is set on the connection when the handler starts and cleared
// the moment the body is read to its end (net/http clears it too when it
// starts watching for the client going away), so it never cuts a long SSE
// response: a chat stream starts only after its JSON body is complete. It is
// per request, unlike http.Server.ReadTimeout, so the limit can be a library
// option and keep-alive requests each get their own. Header reads are
// bounded by the http.Server's ReadHeaderTimeout, idle keep-alive
// connections by its IdleTimeout (both set by `dify-mock serve`).
func (s *appServer) armBodyDeadline(w http.ResponseWriter, r *http.Request) {
	if s.cfg.BodyReadTimeout <= 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout)) != nil {
		return // not a net/http connection (e.g. a recorder in tests)
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
}

// deadlineBody clears the read deadline at the end of the body and reports
// an expired deadline as errBodyTimeout.
type deadlineBody struct {
	io.ReadCloser
	once  sync.Once
	clear func()
}

// errBodyTimeout: the client did not send its whole body in time.
var errBodyTimeout = errors.New("request body not received in time")

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.once.Do(b.clear)
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		err = errBodyTimeout
	}
	return n, err
}
