package dify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"path"
	"strings"
	"sync"
)

// Upload describes a multipart upload streamed from Reader (docs/api §9.1, §11).
// The content is never buffered whole: only the multipart headers are built
// in memory. When the Reader's remaining size can be known (bytes.Reader,
// strings.Reader, a regular *os.File or any io.Seeker) the request carries a
// Content-Length; otherwise it is sent chunked.
type Upload struct {
	// Filename is the name Dify stores; its extension selects the file
	// category and size limit. Dify rejects names containing / or \.
	Filename string
	// ContentType is the part's MIME type; empty means derived from the
	// extension (application/octet-stream when unknown).
	ContentType string
	// Reader supplies the content; it is read once, from its current
	// position.
	Reader io.Reader
	// User is the end user the file belongs to; empty means the client's
	// default user, or Dify's default end user when that is empty too.
	User string
}

// audioExtensions are the extensions Dify's audio-to-text accepts as
// "audio/<ext>" (docs/api §11, both the stored source list and the docs list).
var audioExtensions = map[string]bool{
	"mp3": true, "mp4": true, "mpeg": true, "mpga": true, "m4a": true, "wav": true, "webm": true, "amr": true,
}

// partContentType picks the file part's Content-Type.
func partContentType(up Upload, audio bool) string {
	if up.ContentType != "" {
		return up.ContentType
	}
	ext := strings.ToLower(path.Ext(up.Filename))
	if audio && audioExtensions[strings.TrimPrefix(ext, ".")] {
		return "audio/" + strings.TrimPrefix(ext, ".")
	}
	if ext != "" {
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
	}
	return "application/octet-stream"
}

func (c *Client) upload(ctx context.Context, apiPath string, up Upload, audio bool, out any) error {
	if up.Reader == nil {
		return fmt.Errorf("dify: POST %s: Upload.Reader is nil", apiPath)
	}
	if strings.ContainsAny(up.Filename, "\r\n") {
		return fmt.Errorf("dify: POST %s: Upload.Filename contains a line break", apiPath)
	}
	body, err := newUploadBody(c.userOr(up.User), up, partContentType(up, audio))
	if err != nil {
		return fmt.Errorf("dify: POST %s: %w", apiPath, err)
	}
	return c.do(ctx, &request{method: http.MethodPost, path: apiPath, body: body, class: retryUnsentOnly}, out)
}

// uploadBody is a multipart/form-data body made of an in-memory prefix (the
// user field and the file part's headers), the caller's reader, and an
// in-memory suffix (the closing boundary). Concatenating readers streams
// the file without a goroutine or a pipe and lets the length be known in
// advance when the reader's size is.
type uploadBody struct {
	ctype          string
	prefix, suffix []byte
	src            io.Reader
	size           int64 // of src; -1 if unknown

	mu      sync.Mutex
	touched bool  // some body byte was read by the transport
	srcErr  error // the caller's reader failed
}

func newUploadBody(user string, up Upload, partType string) (*uploadBody, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if user != "" {
		if err := mw.WriteField("user", user); err != nil {
			return nil, err
		}
	}
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", multipart.FileContentDisposition("file", up.Filename))
	h.Set("Content-Type", partType)
	if _, err := mw.CreatePart(h); err != nil {
		return nil, err
	}
	prefixLen := buf.Len()
	if err := mw.Close(); err != nil {
		return nil, err
	}
	all := buf.Bytes()
	b := &uploadBody{
		ctype:  mw.FormDataContentType(),
		prefix: all[:prefixLen:prefixLen],
		suffix: all[prefixLen:],
		src:    up.Reader,
		size:   remainingSize(up.Reader),
	}
	if b.size >= 0 {
		// Send exactly the announced length even if a file grows meanwhile.
		b.src = io.LimitReader(up.Reader, b.size)
	}
	return b, nil
}

// remainingSize returns how many bytes r will yield, or -1 when that cannot
// be known without reading.
func remainingSize(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Len() int }:
		return int64(v.Len())
	case interface{ Stat() (fs.FileInfo, error) }:
		fi, err := v.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
	}
	s, ok := r.(io.Seeker)
	if !ok {
		return -1
	}
	cur, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	end, err := s.Seek(0, io.SeekEnd)
	if _, rerr := s.Seek(cur, io.SeekStart); err != nil || rerr != nil || end < cur {
		return -1
	}
	return end - cur
}

func (b *uploadBody) open() (io.Reader, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.touched {
		return nil, 0, errors.New("upload body was already sent and cannot be replayed")
	}
	length := int64(-1)
	if b.size >= 0 {
		length = int64(len(b.prefix)) + b.size + int64(len(b.suffix))
	}
	r := io.MultiReader(bytes.NewReader(b.prefix), srcReader{b}, bytes.NewReader(b.suffix))
	return touchReader{b, r}, length, nil
}

func (b *uploadBody) contentType() string { return b.ctype }

func (b *uploadBody) replayable() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.touched
}

func (b *uploadBody) readErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.srcErr
}

// touchReader records that the transport started reading the body: from
// then on the attempt may have reached the server and the caller's reader
// has moved, so the body is no longer replayable.
type touchReader struct {
	b *uploadBody
	r io.Reader
}

func (t touchReader) Read(p []byte) (int, error) {
	t.b.mu.Lock()
	t.b.touched = true
	t.b.mu.Unlock()
	return t.r.Read(p)
}

// srcReader records failures of the caller's reader so they are reported
// as such instead of as a network error, and never retried.
type srcReader struct{ b *uploadBody }

func (s srcReader) Read(p []byte) (int, error) {
	n, err := s.b.src.Read(p)
	if err != nil && err != io.EOF {
		s.b.mu.Lock()
		if s.b.srcErr == nil {
			s.b.srcErr = err
		}
		s.b.mu.Unlock()
	}
	return n, err
}
