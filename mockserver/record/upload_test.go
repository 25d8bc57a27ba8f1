package record_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/lint"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// readUpload reads an upload as Dify would and notes each file part's
// field, filename, size and sha256.
func (f *fakeDify) readUpload(r *http.Request) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		f.t.Errorf("upstream: upload Content-Type: %v", err)
		return
	}
	// A body cut short is noted, not failed: the recorder aborts the
	// upstream request of an upload over its limit.
	var seen []string
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			seen = append(seen, "error: "+err.Error())
			break
		}
		h := sha256.New()
		n, err := io.Copy(h, part)
		if err != nil {
			seen = append(seen, "error: "+err.Error())
			break
		}
		if part.FileName() != "" {
			seen = append(seen, fmt.Sprintf("%s %s %d %x", part.FormName(), part.FileName(), n, h.Sum(nil)))
		}
	}
	f.mu.Lock()
	f.uploads = append(f.uploads, strings.Join(seen, ";"))
	f.mu.Unlock()
}

// generatedUpload is a multipart body with a "user" field, a "note" field
// that holds the upstream key (which must never be stored) and one file of
// size pseudo-random bytes, produced as it is read (never held whole); the
// file's sha256 is known once the body has been read.
type generatedUpload struct {
	io.Reader
	contentType string
	length      int64
	fileHash    hash.Hash
}

func newGeneratedUpload(filename, fileType string, size int64) *generatedUpload {
	const boundary = "GenB0undary"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\ntester\r\n" +
		"--" + boundary + "\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nsent with " + upstreamKey + "\r\n" +
		"--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + filename + "\"\r\n" +
		"Content-Type: " + fileType + "\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	h := sha256.New()
	content := io.TeeReader(io.LimitReader(rand.NewChaCha8([32]byte{7}), size), h)
	return &generatedUpload{
		Reader:      io.MultiReader(strings.NewReader(head), content, strings.NewReader(tail)),
		contentType: "multipart/form-data; boundary=" + boundary,
		length:      int64(len(head)) + size + int64(len(tail)),
		fileHash:    h,
	}
}

func postUpload(t *testing.T, baseURL string, body *generatedUpload) {
	t.Helper()
	if code, reply := postUploadStatus(t, baseURL, body); code != http.StatusCreated {
		t.Fatalf("upload answered %d: %s", code, reply)
	}
}

func postUploadStatus(t *testing.T, baseURL string, body *generatedUpload) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/files/upload", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = body.length
	req.Header.Set("Content-Type", body.contentType)
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(reply)
}

// TestRecordUploadStreamsWithBoundedMemory: a 64 MB upload passes through
// the recorder to the upstream intact while the process allocates a small
// fraction of it (the recorder used to read it whole, then copy it again
// into the interaction: several times its size).
func TestRecordUploadStreamsWithBoundedMemory(t *testing.T) {
	const size = 64 << 20
	up := newFakeDify(t, agentTurn("One ", "two."))
	_, srv, _, _ := recorderFor(t, up, "")
	body := newGeneratedUpload("big.bin", "application/octet-stream", size)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	postUpload(t, srv.URL, body)
	runtime.ReadMemStats(&after)

	// TotalAlloc counts every byte allocated in between (the client, the
	// recorder and the fake upstream all run in this process), so it
	// bounds the recorder's heap growth from above.
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %.1f MB while relaying a %d MB upload", float64(allocated)/(1<<20), size>>20)
	if allocated > size/8 {
		t.Errorf("relaying a %d MB upload allocated %.1f MB; the body must stream, not be buffered", size>>20, float64(allocated)/(1<<20))
	}
	want := fmt.Sprintf("file big.bin %d %x", size, body.fileHash.Sum(nil))
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.uploads) != 1 || up.uploads[0] != want {
		t.Errorf("upstream received %q, want %q", up.uploads, want)
	}
}

// uploadInteraction records one upload and a chat turn of the same user
// (which claims it) and returns the written cassette's bytes and its upload
// interaction.
func uploadInteraction(t *testing.T, keep bool, body *generatedUpload) ([]byte, *vcr.Interaction, *fakeDify) {
	t.Helper()
	up := newFakeDify(t, agentTurn("One ", "two."))
	dir := t.TempDir()
	rec, err := record.New(context.Background(), record.Config{
		Upstream: up.URL(), UpstreamKey: upstreamKey, Dir: dir, KeepUploadContents: keep,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	postUpload(t, srv.URL, body)
	chat(t, srv.URL, nil, chatBody("Count", ""))
	if err := stop(srv, rec); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "count.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cassette.Decode(path, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range lint.Bytes(path, data) {
		// The fake upstream's turn is not a complete Dify stream; only the
		// upload is checked here.
		if p.Interaction < 0 || p.Interaction >= len(f.Interactions) || !cassette.IsChat(f.Interactions[p.Interaction]) {
			t.Errorf("dify-mock lint: %v", p)
		}
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatalf("the cassette does not load for replay: %v", err)
	}
	c, ok := set.Get("count")
	if !ok || len(c.Others) != 1 {
		t.Fatalf("want one other interaction in count.yaml, got %v", c)
	}
	return data, c.Others[0], up
}

// TestRecordUploadSummarized: by default the cassette keeps the file's
// name, size, type and sha256 (and the text fields), not its bytes.
func TestRecordUploadSummarized(t *testing.T) {
	const size = 5 << 20
	body := newGeneratedUpload("report.pdf", "application/pdf", size)
	data, in, _ := uploadInteraction(t, false, body)
	if len(data) > 32<<10 {
		t.Errorf("the cassette of a %d MB upload is %d bytes; it must not hold the file", size>>20, len(data))
	}
	s, err := cassette.ParseUploadSummary(in)
	if err != nil {
		t.Fatalf("upload summary: %v\n%s", err, data)
	}
	want := cassette.UploadedPart{Field: "file", Filename: "report.pdf", ContentType: "application/pdf", Size: size,
		SHA256: hex.EncodeToString(body.fileHash.Sum(nil))}
	if len(s.Files) != 1 || s.Files[0] != want {
		t.Errorf("summary files %+v, want [%+v]", s.Files, want)
	}
	if s.Size != body.length || s.Incomplete != "" || s.Omitted != 0 {
		t.Errorf("summary size %d (want %d), incomplete %q, omitted %d", s.Size, body.length, s.Incomplete, s.Omitted)
	}
	if got := in.Request.Form.Get("user"); got != "tester" {
		t.Errorf("form field user = %q, want tester", got)
	}
	if got, want := in.Request.Form.Get("note"), "sent with "+secrets.Redacted; got != want {
		t.Errorf("form field note = %q, want %q (scrubbed)", got, want)
	}
	if bytes.Contains(data, []byte(upstreamKey)) {
		t.Error("the upstream key reached the cassette")
	}
}

// TestRecordUploadKeepContents: --keep-upload-contents stores the body byte
// for byte, as before.
func TestRecordUploadKeepContents(t *testing.T) {
	const text = "kept-contents-7f3a9c"
	head := "--K\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\ntester\r\n--K\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\nContent-Type: text/plain\r\n\r\n" + text + "\r\n--K--\r\n"
	body := &generatedUpload{Reader: strings.NewReader(head), contentType: "multipart/form-data; boundary=K", length: int64(len(head)), fileHash: sha256.New()}
	data, in, up := uploadInteraction(t, true, body)
	if cassette.IsUploadSummary(in) {
		t.Error("with KeepUploadContents the request must not be summarized")
	}
	if in.Request.Body != head {
		t.Errorf("kept request body %q, want %q", in.Request.Body, head)
	}
	if !bytes.Contains(data, []byte(text)) {
		t.Error("the file contents are not in the cassette")
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if want := fmt.Sprintf("file notes.txt %d %x", len(text), sha256.Sum256([]byte(text))); len(up.uploads) != 1 || up.uploads[0] != want {
		t.Errorf("upstream received %q, want %q", up.uploads, want)
	}
}

// TestRecordUploadOverLimit: an upload larger than the limit is cut off
// while it streams, answered 413 in Dify's shape, and not recorded.
func TestRecordUploadOverLimit(t *testing.T) {
	up := newFakeDify(t, agentTurn("One ", "two."))
	rec, srv, dir, _ := recorderFor(t, up, "")
	record.SetMaxUpload(rec, 1<<20)
	code, reply := postUploadStatus(t, srv.URL, newGeneratedUpload("big.bin", "application/octet-stream", 2<<20))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(reply, `"code":"request_entity_too_large"`) {
		t.Errorf("over the limit: %d %s, want 413 request_entity_too_large", code, reply)
	}
	up.mu.Lock()
	for _, u := range up.uploads {
		if strings.Contains(u, "big.bin 2097152") {
			t.Errorf("the upstream received the whole file: %q", u)
		}
	}
	up.mu.Unlock()
	chat(t, srv.URL, nil, chatBody("Count", ""))
	if err := stop(srv, rec); err != nil {
		t.Fatal(err)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := set.Get("count"); !ok || len(c.Others) != 0 {
		t.Errorf("the refused upload was recorded: %+v", c)
	}
}
