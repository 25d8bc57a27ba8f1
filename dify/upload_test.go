package dify

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// multipartSeen is what the server parsed from an upload.
type multipartSeen struct {
	contentLength int64
	chunked       bool
	user          []string
	fileName      string
	fileType      string
	content       []byte
	parts         int
}

func parseUpload(t *testing.T, r *http.Request) multipartSeen {
	t.Helper()
	seen := multipartSeen{contentLength: r.ContentLength}
	for _, te := range r.TransferEncoding {
		seen.chunked = seen.chunked || te == "chunked"
	}
	mr, err := r.MultipartReader()
	if err != nil {
		t.Errorf("not multipart: %v", err)
		return seen
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return seen
		}
		if err != nil {
			t.Errorf("next part: %v", err)
			return seen
		}
		seen.parts++
		b, _ := io.ReadAll(p)
		switch p.FormName() {
		case "user":
			seen.user = append(seen.user, string(b))
		case "file":
			seen.fileName, seen.fileType, seen.content = p.FileName(), p.Header.Get("Content-Type"), b
		default:
			t.Errorf("unexpected part %q", p.FormName())
		}
	}
}

const uploadReply = `{"id":"f-1","name":"a.png","size":5,"extension":"png","mime_type":"image/png","created_by":"eu-1","created_at":1705407629,"preview_url":null,"source_url":"http://x/files/f-1/file-preview?sign=s","original_url":null,"user_id":null,"tenant_id":"t","conversation_id":null,"file_key":null}`

func TestUploadFile(t *testing.T) {
	var seen multipartSeen
	srv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v1/files/upload" || r.Header.Get("Authorization") != "Bearer "+testKey ||
			r.Header.Get("User-Agent") != DefaultUserAgent() {
			t.Errorf("request %s %s auth=%q ua=%q", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("User-Agent"))
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
			t.Errorf("Content-Type = %q", r.Header.Get("Content-Type"))
		}
		seen = parseUpload(t, r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, uploadReply)
	})
	c := newTestClient(t, srv)

	res, err := c.UploadFile(testContext(t), Upload{Filename: "a.png", Reader: strings.NewReader("PNG!!")})
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != "f-1" || *res.Extension != "png" || *res.CreatedBy != "eu-1" || res.UserID != nil {
		t.Errorf("result = %+v", res)
	}
	if seen.fileName != "a.png" || seen.fileType != "image/png" || string(seen.content) != "PNG!!" ||
		len(seen.user) != 1 || seen.user[0] != "user-1" || seen.parts != 2 {
		t.Errorf("server saw %+v", seen)
	}
	// A strings.Reader has a known size: the body has a Content-Length.
	if seen.chunked || seen.contentLength <= 5 {
		t.Errorf("sized reader: chunked=%v length=%d", seen.chunked, seen.contentLength)
	}

	// Unknown size: sent chunked; explicit content type and user win;
	// awkward filenames are encoded, not mangled.
	_, err = c.UploadFile(testContext(t), Upload{Filename: `re "port".bin`, ContentType: "application/x-custom", User: "u2",
		Reader: iotest.OneByteReader(strings.NewReader("0123456789"))})
	if err != nil {
		t.Fatal(err)
	}
	if seen.fileName != `re "port".bin` || seen.fileType != "application/x-custom" || string(seen.content) != "0123456789" ||
		seen.user[0] != "u2" || !seen.chunked {
		t.Errorf("server saw %+v", seen)
	}

	// A regular file: sized from Stat/Seek, read from its current offset.
	path := filepath.Join(t.TempDir(), "notes.zzz-unknown")
	if err := os.WriteFile(path, []byte("skip:payload"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(5, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	cl, _ := NewClient(c.BaseURL(), testKey) // no default user: no user part at all
	if _, err := cl.UploadFile(testContext(t), Upload{Filename: "notes.zzz-unknown", Reader: f}); err != nil {
		t.Fatal(err)
	}
	if string(seen.content) != "payload" || seen.fileType != "application/octet-stream" || seen.user != nil || seen.chunked {
		t.Errorf("server saw %+v", seen)
	}
}

func TestAudioToText(t *testing.T) {
	var seen multipartSeen
	srv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v1/audio-to-text" || r.Header.Get("Authorization") != "Bearer "+testKey ||
			r.Header.Get("User-Agent") != DefaultUserAgent() {
			t.Errorf("request %s %s auth=%q ua=%q", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("User-Agent"))
		}
		seen = parseUpload(t, r)
		jsonReply(200, `{"text":"hello world"}`)(w, r, 0)
	})
	c := newTestClient(t, srv)
	got, err := c.AudioToText(testContext(t), Upload{Filename: "Voice.MP3", Reader: strings.NewReader("ID3")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "hello world" {
		t.Errorf("text = %q", got.Text)
	}
	// Dify checks audio/<ext> (docs/api §11), not mime's audio/mpeg.
	if seen.fileType != "audio/mp3" || seen.user[0] != "user-1" || string(seen.content) != "ID3" {
		t.Errorf("server saw %+v", seen)
	}
}

func TestPartContentType(t *testing.T) {
	for _, tc := range []struct {
		up    Upload
		audio bool
		want  string
	}{
		{Upload{Filename: "a.PNG"}, false, "image/png"},
		{Upload{Filename: "a.png", ContentType: "image/x-mine"}, false, "image/x-mine"},
		{Upload{Filename: "noext"}, false, "application/octet-stream"},
		{Upload{Filename: "a.qqqq"}, false, "application/octet-stream"},
		{Upload{Filename: "a.m4a"}, true, "audio/m4a"},
		{Upload{Filename: "a.wav"}, true, "audio/wav"},
		{Upload{Filename: "a.png"}, true, "image/png"},
	} {
		if got := partContentType(tc.up, tc.audio); got != tc.want {
			t.Errorf("partContentType(%q, audio=%v) = %q, want %q", tc.up.Filename, tc.audio, got, tc.want)
		}
	}
}

// gatedReader yields its first chunk, then blocks until the server has
// received that chunk. A client that buffered the whole body before
// sending would never get past the gate.
type gatedReader struct {
	first, rest []byte
	gate        chan struct{}
	step        int
}

func (g *gatedReader) Read(p []byte) (int, error) {
	switch g.step {
	case 0:
		g.step++
		return copy(p, g.first), nil
	case 1:
		select {
		case <-g.gate:
		case <-time.After(10 * time.Second):
			return 0, errors.New("server never saw the first chunk: the upload was buffered")
		}
		g.step++
		return copy(p, g.rest), nil
	}
	return 0, io.EOF
}

func TestUploadStreamsWithoutBuffering(t *testing.T) {
	first := bytes.Repeat([]byte("a"), 4096)
	gr := &gatedReader{first: first, rest: []byte("tail"), gate: make(chan struct{})}
	srv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		if err != nil {
			t.Error(err)
			return
		}
		var content []byte
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			if p.FormName() != "file" {
				continue
			}
			buf := make([]byte, 1024)
			opened := false
			for {
				n, err := p.Read(buf)
				content = append(content, buf[:n]...)
				if !opened && len(content) >= len(first) {
					close(gr.gate)
					opened = true
				}
				if err != nil {
					break
				}
			}
		}
		if string(content) != string(first)+"tail" {
			t.Errorf("content = %d bytes", len(content))
		}
		jsonReply(201, uploadReply)(w, r, 0)
	})
	c := newTestClient(t, srv)
	if _, err := c.UploadFile(testContext(t), Upload{Filename: "big.bin", Reader: gr}); err != nil {
		t.Fatal(err)
	}
}

func TestUploadInputErrors(t *testing.T) {
	rec := &recorder{respond: jsonReply(201, uploadReply)}
	c := newTestClient(t, rec)
	if _, err := c.UploadFile(testContext(t), Upload{Filename: "a.png"}); err == nil || !strings.Contains(err.Error(), "Reader is nil") {
		t.Errorf("nil reader: %v", err)
	}
	if _, err := c.UploadFile(testContext(t), Upload{Filename: "a\r\nX-Evil: 1", Reader: strings.NewReader("x")}); err == nil {
		t.Error("line break in filename accepted")
	}
	// The caller's reader failing is reported as such and never retried.
	boom := errors.New("disk on fire")
	_, err := c.UploadFile(testContext(t), Upload{Filename: "a.bin", Reader: io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom))})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "reading upload") {
		t.Errorf("reader failure: %v", err)
	}
	if n := rec.count(); n > 1 {
		t.Errorf("server saw %d requests for a failing reader", n)
	}
}

// The prefix/suffix split must produce exactly what multipart.Writer would.
func TestUploadBodyIsValidMultipart(t *testing.T) {
	b, err := newUploadBody("u", Upload{Filename: "x.txt", Reader: strings.NewReader("hello")}, "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	r, n, err := b.open()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(r)
	if int64(len(raw)) != n {
		t.Errorf("announced %d bytes, produced %d", n, len(raw))
	}
	_, params, _ := mime.ParseMediaType(b.contentType())
	mr := multipart.NewReader(bytes.NewReader(raw), params["boundary"])
	form, err := mr.ReadForm(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if form.Value["user"][0] != "u" || form.File["file"][0].Filename != "x.txt" || form.File["file"][0].Size != 5 {
		t.Errorf("form = %+v", form)
	}
	if _, _, err := b.open(); err == nil {
		t.Error("a consumed upload body opened again")
	}
}
