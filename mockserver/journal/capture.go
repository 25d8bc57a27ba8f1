package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/internal/bufpool"
	"github.com/difyops/terraform-provider-dify/internal/freshstack"
	"github.com/difyops/terraform-provider-dify/internal/unwrap"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/detach"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
)

// MaxBody is how much of a request body the journal keeps.
const MaxBody = 64 << 10

// maxField bounds a kept multipart text field, maxFields all of them.
const (
	maxField  = 4 << 10
	maxFields = 16 << 10
)

// maxParts bounds the multipart parts the journal looks at; the rest of the
// body is passed over without parsing (a body of a million tiny parts costs
// the journal nothing).
const maxParts = 64

// Middleware journals every request that reaches next. Request headers are
// never kept (they carry API keys); bodies and query strings are redacted.
func (j *Journal) Middleware(next http.Handler) http.Handler {
	return j.MiddlewareFor("", next)
}

// MiddlewareFor is Middleware for the requests of one app: their entries
// carry its name (Entry.App).
func (j *Journal) MiddlewareFor(app string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := requestOf(r)
		req.App = app
		rec := j.Start(req)
		body := newBodyCapture(r)
		if body != nil {
			r.Body = body
		}
		cw := &captureWriter{ResponseWriter: w, rec: rec, body: body}
		defer func() {
			if body != nil {
				body.finish(rec)
			}
			// A stream that outlives the handler (mockserver/internal/detach)
			// finishes its entry when it ends.
			if t := detach.Of(w); t == nil || !finishLater(t, rec, cw.status) {
				rec.Finish(cw.status)
			}
		}()
		// The handlers find the record through the writer (Of), not the
		// request's context: r.WithContext copies the whole request, two
		// allocations on every request only three handlers look at.
		next.ServeHTTP(cw, r)
	})
}

// requestOf is what the journal keeps of r when it starts, cut before it
// is redacted (the redaction's cost is bounded per request).
func requestOf(r *http.Request) Request {
	var cut []string
	raw := clip(r.URL.RawQuery, MaxQuery, &cut, "query")
	req := Request{
		Method: r.Method,
		Path:   redactText(clip(r.URL.Path, MaxPath, &cut, "path")),
		Query:  redact(raw),
		Origin: redactText(clip(r.Header.Get("Origin"), MaxOrigin, &cut, "origin")),
		User:   redactID(queryValue(raw, "user")),
	}
	if c := pathConversation(req.Path); c != "" {
		req.Conversation = redactID(c)
	} else {
		req.Conversation = redactID(queryValue(raw, "conversation_id"))
	}
	req.Truncated = cut
	return req
}

// finishLater leaves the entry's Finish for the end of a detached stream.
func finishLater(t *detach.Tail, rec *Record, status int) bool {
	return t.Later(func() { rec.Finish(status) })
}

// queryValue is url.ParseQuery(raw).Get(key) without building the map:
// the journal reads two keys of every request's query.
func queryValue(raw, key string) string {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(pair, "=")
		if escaped(k) {
			var err error
			if k, err = url.QueryUnescape(k); err != nil {
				continue
			}
		}
		if k != key || strings.Contains(pair, ";") {
			continue
		}
		if u, err := url.QueryUnescape(v); err == nil {
			return u
		}
	}
	return ""
}

// escaped reports whether a query key holds '%', '+' or ';' (a byte loop:
// strings.ContainsAny builds a set on every call, for every request).
func escaped(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c == '%' || c == '+' || c == ';' {
			return true
		}
	}
	return false
}

// pathConversation is the :conversation_id of /v1/conversations/:id[/…].
func pathConversation(p string) string {
	rest := strings.Trim(p, "/")
	for rest != "" {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if seg == "conversations" && rest != "" {
			id, _, _ := strings.Cut(rest, "/")
			return id
		}
	}
	return ""
}

// redactID is a user, conversation id or origin as the journal keeps it:
// cut to MaxID bytes, then redacted like a body (a key-shaped user=
// value is as secret in the user field as in the query).
func redactID(s string) string {
	if s == "" {
		return ""
	}
	return secrets.RedactString(clip(s, MaxID, nil, ""))
}

// redactText redacts a path's segments (a key pasted into a route) or an
// Origin.
func redactText(p string) string {
	if p == "" {
		return ""
	}
	return secrets.RedactString(p)
}

func redact(s string) string {
	if s == "" {
		return ""
	}
	// The query/form pattern wants a leading "?" or "&" before a name.
	return strings.TrimPrefix(secrets.RedactString("?"+s), "?")
}

// captureWriter remembers the status; Unwrap keeps http.ResponseController
// (Flush, Hijack) working through it.
type captureWriter struct {
	http.ResponseWriter
	status int
	rec    *Record
	body   *bodyCapture // nil for a request without a body
}

// WriteHeader shows the status in the entry when the headers go out, and
// the body the handler has read (user, conversation) so far: a request in
// flight (a 30 s agent turn) is not a blank row meanwhile. Informational
// 1xx answers are passed through.
func (w *captureWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
		if b := w.body; b != nil && b.boundary == "" {
			if dify.IsEventStream(w.Header()) {
				// On another goroutine: storing the body redacts it, deep
				// enough to double the stack of a chat's connection
				// goroutine for the whole stream (mockserver/stack.go).
				freshstack.Run(func() { b.finish(w.rec) })
			} else {
				// A response that is not a stream is done in a moment and
				// its goroutine's stack shrinks again: the hand-over to
				// another goroutine (a wake-up on another CPU) cost more
				// than the redaction (BenchmarkRenameRequest).
				b.finish(w.rec)
			}
		}
		w.rec.Headers(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Of returns the live record of the request that w answers (looking
// through wrappers that have an Unwrap method, as http.ResponseController
// does), nil when the request is not journaled.
func Of(w http.ResponseWriter) *Record {
	if cw, ok := unwrap.Find[*captureWriter](w); ok {
		return cw.rec
	}
	return nil
}

// bodyCapture tees what the handler reads from the body: the first MaxBody
// bytes of a plain body, or, for multipart/form-data, each file part's
// name, size and SHA-256 and the text fields (a small body is held until
// the request ends to be parsed, a large one parsed as it arrives; the
// journal's entry never keeps a file's contents).
type bodyCapture struct {
	io.ReadCloser
	finished  bool // finish ran (when the headers went out, or at the end)
	size      int64
	kept      bytes.Buffer
	truncated bool
	ctype     string

	// multipart: the body is kept (in kept) while it is small and parsed
	// when the request ends; past maxHeldMultipart its bytes go through
	// a pipe to a parser goroutine instead.
	boundary   string
	pw         *io.PipeWriter
	parsed     chan struct{}
	mu         sync.Mutex
	uploads    []Upload
	fields     map[string]string
	fieldBytes int
	fieldsCut  bool
}

func newBodyCapture(r *http.Request) *bodyCapture {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b := &bodyCapture{ReadCloser: r.Body}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	b.ctype = mt
	if err == nil && mt == "multipart/form-data" && params["boundary"] != "" {
		b.boundary = params["boundary"]
	}
	return b
}

// maxHeldMultipart is how much of a multipart body is kept to be parsed
// when the request ends. A small upload, the usual one, is parsed on the
// request's goroutine; a pipe to a parser goroutine handed every chunk
// over between two goroutines, which cost a 1 KiB upload more than the
// parsing (BenchmarkUploadRequest).
const maxHeldMultipart = 64 << 10

// stream starts the parser goroutine for a multipart body too large to
// keep, and gives it what was kept so far.
func (b *bodyCapture) stream() {
	pr, pw := io.Pipe()
	b.pw, b.parsed = pw, make(chan struct{})
	go func() {
		defer close(b.parsed)
		b.parseMultipart(multipart.NewReader(pr, b.boundary), pr)
	}()
	_, _ = pw.Write(b.kept.Bytes())
	b.kept = bytes.Buffer{}
}

func (b *bodyCapture) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.size += int64(n)
		if b.boundary != "" && b.pw == nil && b.kept.Len()+n > maxHeldMultipart {
			b.stream()
		}
		if b.pw != nil {
			_, _ = b.pw.Write(p[:n]) // the parser drains everything
		} else if b.boundary != "" {
			b.kept.Write(p[:n])
		} else if room := MaxBody - b.kept.Len(); room > 0 {
			b.kept.Write(p[:min(n, room)])
			b.truncated = b.truncated || n > room
		} else {
			b.truncated = true
		}
	}
	return n, err
}

// parseMultipart reads the parts' names, sizes and digests from mr, then
// drains body (mr's source) so that a pipe's writer never blocks.
func (b *bodyCapture) parseMultipart(mr *multipart.Reader, body io.Reader) {
	defer func() { _, _ = io.Copy(io.Discard, body) }()
	for range maxParts {
		part, err := mr.NextPart()
		if err != nil {
			return
		}
		if part.FileName() != "" {
			h := sha256.New()
			n, _ := bufpool.Copy(h, part)
			b.mu.Lock()
			b.uploads = append(b.uploads, Upload{
				Field: part.FormName(), Filename: part.FileName(), ContentType: part.Header.Get("Content-Type"),
				Size: n, SHA256: hex.EncodeToString(h.Sum(nil)),
			})
			b.mu.Unlock()
			continue
		}
		v, _ := io.ReadAll(io.LimitReader(part, maxField))
		_, _ = io.Copy(io.Discard, part)
		name := part.FormName()
		val := string(secrets.Redact(v))
		if secrets.IsCredentialName(name) {
			val = secrets.Redacted
		}
		name = clip(name, maxField, nil, "")
		b.mu.Lock()
		if b.fieldBytes+len(name)+len(val) > maxFields {
			b.fieldsCut = true
		} else {
			if b.fields == nil {
				b.fields = map[string]string{}
			}
			b.fields[name] = val
			b.fieldBytes += len(name) + len(val)
		}
		b.mu.Unlock()
	}
}

// finish stores what was captured in rec, once: a plain body when the
// response headers go out (the handler has read it by then), else at the
// end of the request.
func (b *bodyCapture) finish(rec *Record) {
	if b.finished {
		return
	}
	b.finished = true
	if b.boundary != "" {
		if b.pw != nil {
			_ = b.pw.Close()
			<-b.parsed
		} else {
			held := bytes.NewReader(b.kept.Bytes())
			b.parseMultipart(multipart.NewReader(held, b.boundary), held)
		}
		b.mu.Lock()
		uploads, fields, cost, cut := b.uploads, b.fields, b.fieldBytes, b.fieldsCut
		b.mu.Unlock()
		for _, u := range uploads {
			cost += 128 + len(u.Field) + len(u.Filename) + len(u.ContentType)
		}
		if !rec.charge(int64(cost)) {
			return
		}
		rec.Update(func(e *Entry) {
			e.BodySize, e.Uploads, e.Fields = b.size, uploads, fields
			if cut {
				e.Truncated = append(e.Truncated, "fields")
			}
			if u := fields["user"]; u != "" && e.User == "" {
				e.User = clip(u, MaxID, nil, "")
			}
		})
		return
	}
	data := secrets.Redact(b.kept.Bytes())
	if !rec.charge(int64(len(data))) {
		return
	}
	rec.Update(func(e *Entry) {
		if b.truncated {
			e.Truncated = append(e.Truncated, "body")
		}
		e.BodySize, e.BodyTruncated = b.size, b.truncated
		if len(data) == 0 {
			return
		}
		if !b.truncated && json.Valid(data) {
			e.Body = append(json.RawMessage(nil), data...)
			var ids struct {
				User         *string `json:"user"`
				Conversation *string `json:"conversation_id"`
			}
			if json.Unmarshal(data, &ids) == nil {
				if ids.User != nil && *ids.User != "" {
					e.User = clip(*ids.User, MaxID, nil, "") // data is redacted
				}
				if ids.Conversation != nil && *ids.Conversation != "" {
					e.Conversation = strings.ToLower(clip(*ids.Conversation, MaxID, nil, ""))
				}
			}
			return
		}
		e.BodyText = strings.ToValidUTF8(string(data), "\uFFFD")
	})
}
