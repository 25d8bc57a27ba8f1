package mockserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

func getSigned(t *testing.T, s *Server, url string) (int, http.Header, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, rec.Header(), body
}

func wantEnvelope(t *testing.T, code int, body []byte, status int, errCode, msg string) {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(body, &e); err != nil || code != status || e.Status != status || e.Code != errCode || e.Message != msg {
		t.Fatalf("got %d %s, want %d %s %q", code, body, status, errCode, msg)
	}
}

// A URL signed by the mock for an id it holds no file for gets Dify's answer:
// FileService's 404 for an upload; for a tool file, ToolFileApi's NotFound,
// caught by its own `except Exception` and raised as 415.
func TestSignedURLUnknownFile(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	id := replay.NewUUID()
	code, _, body := getSigned(t, s, s.files.FilePreviewURL("", id, s.files.now()))
	wantEnvelope(t, code, body, 404, "not_found", "File not found or signature is invalid")
	code, _, body = getSigned(t, s, s.files.ToolFileURL("", id, "png", s.files.now()))
	wantEnvelope(t, code, body, 415, "unsupported_file_type", "File type not allowed.")
	// The id is signed, not the extension: another extension still verifies,
	// and enforce_download_for_html reads the URL's extension.
	s.files.addTools([]replay.BoundToolFile{{ID: id, Ext: "png", File: &cassette.ToolFile{
		ID: id, Extension: "png", MimeType: "text/plain", Name: "notes", Data: []byte("hi")}}})
	code, h, body := getSigned(t, s, strings.Replace(s.files.ToolFileURL("", id, "png", s.files.now()), ".png?", ".html?", 1))
	if code != 200 || string(body) != "hi" || h.Get("Content-Type") != "application/octet-stream" ||
		h.Get("Content-Disposition") != "attachment; filename*=UTF-8''notes" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("html extension: %d %v %q", code, h, body)
	}
	code, h, _ = getSigned(t, s, s.files.ToolFileURL("", id, "png", s.files.now()))
	if code != 200 || h.Get("Content-Type") != "text/plain; charset=utf-8" || h.Get("Content-Disposition") != "" {
		t.Fatalf("text tool file: %d %v", code, h)
	}
}

// The deprecated /files/{id}/image-preview: its own signature kind, and 415
// for an upload that is not an image.
func TestSignedImagePreview(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	add := func(name, ext, mimeType string) string {
		id := replay.NewUUID()
		s.store.AddFile(store.File{Result: store.FileResult{ID: id, Name: name, Extension: &ext, MimeType: &mimeType, Size: 3}, Content: []byte("abc")})
		return id
	}
	img, doc := add("a.png", "png", "image/png"), add("a.txt", "txt", "text/plain")
	url := func(kind, id string) string {
		ts, nonce, sign := s.files.params(kind, id, s.files.now())
		return "/files/" + id + "/image-preview?timestamp=" + ts + "&nonce=" + nonce + "&sign=" + pyQuotePlus(sign)
	}
	code, h, body := getSigned(t, s, url(signImagePreview, img))
	if code != 200 || string(body) != "abc" || h.Get("Content-Type") != "image/png" {
		t.Fatalf("image-preview: %d %v %q", code, h, body)
	}
	code, _, body = getSigned(t, s, url(signImagePreview, doc))
	wantEnvelope(t, code, body, 415, "unsupported_file_type", "File type not allowed.")
	// A file-preview signature is not an image-preview one.
	code, _, body = getSigned(t, s, url(signFilePreview, img))
	wantEnvelope(t, code, body, 404, "not_found", "File not found or signature is invalid")
	// And the other way round: image-preview's signature does not open file-preview.
	code, _, body = getSigned(t, s, strings.Replace(url(signImagePreview, img), "/image-preview?", "/file-preview?", 1))
	wantEnvelope(t, code, body, 404, "not_found", "File not found or signature is invalid")
	code, h, body = getSigned(t, s, "/files/"+img+"/other?timestamp=1&nonce=n&sign=s")
	if code != 404 || h.Get("Content-Type") != "text/html; charset=utf-8" { // Werkzeug's routing 404 page
		t.Fatalf("unknown action: %d %v %s", code, h, body)
	}
}

// The tool file ids a server remembers are bounded: past maxToolFileIDs the
// oldest is forgotten (its URL then answers as an unknown file).
func TestToolFileIndexIsBounded(t *testing.T) {
	f := newSignedFiles(nil)
	first := replay.NewUUID()
	f.addTools([]replay.BoundToolFile{{ID: first, Ext: "png"}})
	batch := make([]replay.BoundToolFile, maxToolFileIDs)
	for i := range batch {
		batch[i] = replay.BoundToolFile{ID: replay.NewUUID(), Ext: "png"}
	}
	f.addTools(batch)
	if _, ok := f.tool(first); ok {
		t.Error("the oldest id is still held")
	}
	if _, ok := f.tool(batch[len(batch)-1].ID); !ok || len(f.tools) != maxToolFileIDs {
		t.Errorf("holds %d ids, want %d with the newest", len(f.tools), maxToolFileIDs)
	}
}
