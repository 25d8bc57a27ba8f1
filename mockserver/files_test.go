package mockserver_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// part is one multipart part; filename "-" means no filename parameter.
type part struct {
	field, filename, contentType string
	data                         io.Reader
}

func multipartBody(t testing.TB, parts ...part) (io.Reader, string) {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for _, p := range parts {
			h := textproto.MIMEHeader{}
			cd := fmt.Sprintf(`form-data; name=%q`, p.field)
			if p.filename != "-" {
				cd += fmt.Sprintf(`; filename=%q`, p.filename)
			}
			h.Set("Content-Disposition", cd)
			if p.contentType != "" {
				h.Set("Content-Type", p.contentType)
			}
			w, err := mw.CreatePart(h)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := io.Copy(w, p.data); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	return pr, mw.FormDataContentType()
}

func (e *env) multipart(path string, parts ...part) (*http.Response, []byte) {
	e.t.Helper()
	body, ct := multipartBody(e.t, parts...)
	req, err := http.NewRequest(http.MethodPost, e.url(path), body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", e.authorization())
	req.Header.Set("Content-Type", ct)
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func (e *env) upload(user, filename, contentType string, data []byte) store.FileResult {
	e.t.Helper()
	resp, body := e.multipart("/files/upload",
		part{field: "user", filename: "-", data: strings.NewReader(user)},
		part{field: "file", filename: filename, contentType: contentType, data: bytes.NewReader(data)})
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	return decode[store.FileResult](e.t, body)
}

func TestUploadAndEndUser(t *testing.T) {
	now := time.Date(2026, 1, 16, 12, 0, 29, 0, time.UTC)
	e := newEnv(t, mockserver.Config{Now: func() time.Time { return now }})
	resp, body := e.multipart("/files/upload",
		part{field: "file", filename: "Photo.PNG", contentType: "image/png", data: strings.NewReader("not really a png")},
		part{field: "user", filename: "-", data: strings.NewReader("abc-123")})
	if resp.StatusCode != 201 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for _, k := range []string{"id", "name", "size", "extension", "mime_type", "created_by", "created_at", "preview_url",
		"source_url", "original_url", "user_id", "tenant_id", "conversation_id", "file_key", "reference"} {
		if !strings.Contains(string(body), `"`+k+`":`) {
			t.Errorf("FileResponse lacks %s: %s", k, body)
		}
	}
	f := decode[dify.FileUploadResult](t, body)
	if f.Name != "Photo.PNG" || f.Size != 16 || *f.Extension != "png" || *f.MimeType != "image/png" || f.CreatedAt != now.Unix() {
		t.Errorf("upload: %s", body)
	}
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/files/` + f.ID + `/file-preview\?timestamp=\d+&nonce=[0-9a-f]+&sign=`).MatchString(f.SourceURL) {
		t.Errorf("source_url %q", f.SourceURL)
	}
	// created_by is the end user, which GET /end-users resolves (docs/api §10).
	resp, body = e.do(http.MethodGet, "/end-users/"+*f.CreatedBy, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("end user: %d %s", resp.StatusCode, body)
	}
	u := decode[dify.EndUser](t, body)
	if u.ID != *f.CreatedBy || u.ExternalUserID != "abc-123" || u.SessionID != "abc-123" || u.Type != "service-api" ||
		u.IsAnonymous || u.CreatedAt != "2026-01-16T12:00:29" || u.UpdatedAt != u.CreatedAt || u.TenantID == "" {
		t.Errorf("end user: %s", body)
	}
	if !strings.Contains(string(body), `"name":null`) {
		t.Errorf("end user name should be null: %s", body)
	}
	resp, body = e.do(http.MethodGet, "/end-users/"+recConv, nil)
	e.wantError(resp, body, 404, "end_user_not_found", "End user not found.")
	resp, body = e.do(http.MethodGet, "/end-users/nope", nil)
	wantHTML404(t, resp, body)

	// No user: the anonymous default end user (docs/api §1.3).
	resp, body = e.multipart("/files/upload", part{field: "file", filename: "a.txt", contentType: "text/plain", data: strings.NewReader("x")})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload without a user: %d %s", resp.StatusCode, body)
	}
	anon := decode[dify.FileUploadResult](t, body)
	_, body = e.do(http.MethodGet, "/end-users/"+*anon.CreatedBy, nil)
	if u := decode[dify.EndUser](t, body); !u.IsAnonymous || u.SessionID != "DEFAULT-USER" {
		t.Errorf("default user: %s", body)
	}
}

func TestUploadErrors(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	big := bytes.Repeat([]byte("x"), 1<<20+1) // the test app's image limit is 1 MB
	cases := []struct {
		name    string
		parts   []part
		status  int
		code    string
		message string
	}{
		{"no file", []part{{field: "user", filename: "-", data: strings.NewReader("u")}}, 400, "no_file_uploaded", "Please upload your file."},
		{"file part without filename", []part{{field: "file", filename: "-", data: strings.NewReader("u")}}, 400, "no_file_uploaded", "Please upload your file."},
		{"two files", []part{
			{field: "file", filename: "a.txt", contentType: "text/plain", data: strings.NewReader("a")},
			{field: "other", filename: "b.txt", contentType: "text/plain", data: strings.NewReader("b")}}, 400, "too_many_files", "Only one file is allowed."},
		{"empty filename", []part{{field: "file", filename: "", contentType: "text/plain", data: strings.NewReader("a")}}, 400, "filename_not_exists_error", "The specified filename does not exist."},
		{"no content type", []part{{field: "file", filename: "a.txt", data: strings.NewReader("a")}}, 415, "unsupported_file_type", "File type not allowed."},
		{"bad characters", []part{{field: "file", filename: `a\b.txt`, contentType: "text/plain", data: strings.NewReader("a")}}, 400, "invalid_param", "Filename contains invalid characters"},
		{"image over its limit", []part{{field: "file", filename: "big.jpg", contentType: "image/jpeg", data: bytes.NewReader(big)}}, 413, "file_too_large", "*"},
	}
	for _, c := range cases {
		resp, body := e.multipart("/files/upload", c.parts...)
		t.Run(c.name, func(t *testing.T) { e.t = t; e.wantError(resp, body, c.status, c.code, c.message) })
	}
	e.t = t
	// The same size is fine for a document (15 MB limit).
	if f := e.upload("u", "big.txt", "text/plain", big); f.Size != int64(len(big)) {
		t.Errorf("size %d", f.Size)
	}
	resp, body := e.do(http.MethodPost, "/files/upload", map[string]any{"file": "x"})
	e.wantError(resp, body, 400, "no_file_uploaded", "Please upload your file.")
}

func TestAudio(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	audio := func(ct string, hdr string, data io.Reader) (*http.Response, []byte) {
		body, mct := multipartBody(t, part{field: "file", filename: "clip.mp3", contentType: ct, data: data}, part{field: "user", filename: "-", data: strings.NewReader("al")})
		req, _ := http.NewRequest(http.MethodPost, e.url("/audio-to-text"), body)
		req.Header.Set("Authorization", "Bearer app-test")
		req.Header.Set("Content-Type", mct)
		if hdr != "" {
			req.Header.Set(mockserver.HeaderCassette, hdr)
		}
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp, out
	}
	resp, body := audio("audio/mp3", "", strings.NewReader("ID3"))
	if resp.StatusCode != 200 || decode[dify.AudioText](t, body).Text != "count to three" {
		t.Fatalf("default cassette transcript: %d %s", resp.StatusCode, body)
	}
	_, body = audio("audio/wav", "tools", strings.NewReader("RIFF"))
	if got := decode[dify.AudioText](t, body).Text; got != `This is a placeholder transcript from dify-mock for "clip.mp3" (4 bytes).` {
		t.Fatalf("placeholder: %q", got)
	}
	resp, body = audio("video/mp4", "", strings.NewReader("x"))
	e.wantError(resp, body, 415, "unsupported_audio_type", "Audio type not allowed.")
	resp, body = audio("audio/mpeg", "", io.LimitReader(zeros{}, 30<<20+1))
	e.wantError(resp, body, 413, "audio_too_large", "Audio size larger than 30 mb")
	// No "file" part: audio.py reads request.files["file"] → Werkzeug's
	// BadRequestKeyError (the old no_audio_uploaded expectation was wrong).
	resp, body = e.multipart("/audio-to-text", part{field: "user", filename: "-", data: strings.NewReader("al")})
	e.wantError(resp, body, 400, "bad_request_key_error", "The browser (or proxy) sent a request that this server could not understand.")

	// text-to-audio: silent MPEG audio (docs/api §12).
	resp, body = e.do(http.MethodPost, "/text-to-audio", map[string]any{"text": "Hello there", "user": "al"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/mpeg" {
		t.Fatalf("tts: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if len(body) < 104 || len(body)%104 != 0 || body[0] != 0xFF || body[1] != 0xFB {
		t.Fatalf("not MPEG-1 Layer III frames: %d bytes % x", len(body), body[:4])
	}
	for i := 0; i < len(body); i += 104 {
		if body[i] != 0xFF || body[i+1]&0xE0 != 0xE0 {
			t.Fatalf("frame %d has no sync word", i/104)
		}
	}
	_, fr := e.chat(chatBody("Count to three", "al"))
	resp, _ = e.do(http.MethodPost, "/text-to-audio", map[string]any{"message_id": fr[0].str("message_id"), "user": "al"})
	if resp.StatusCode != 200 {
		t.Fatalf("tts by message: %d", resp.StatusCode)
	}
	resp, body = e.do(http.MethodPost, "/text-to-audio", map[string]any{"message_id": fr[0].str("message_id"), "user": "someone-else"})
	e.wantError(resp, body, 404, "not_found", "Message Not Exists.")
	resp, body = e.do(http.MethodPost, "/text-to-audio", map[string]any{"user": "al"})
	e.wantError(resp, body, 400, "invalid_param", "Text is required")
	resp, body = e.do(http.MethodPost, "/text-to-audio", "{")
	e.wantError(resp, body, 400, "bad_request", "The browser (or proxy) sent a request that this server could not understand.")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestDisabledFeatures(t *testing.T) {
	e := newEnv(t, mockserver.Config{Cassettes: testSet(t, disabledParams)})
	_, fr := e.chat(map[string]any{"query": "Count to three", "user": "u", "inputs": map[string]any{}})
	resp, body := e.do(http.MethodGet, "/messages/"+fr[0].str("message_id")+"/suggested?user=u", nil)
	// MessageSuggestedApi.get: AppSuggestedQuestionsAfterAnswerDisabledError
	// (403; the old 400 "Suggested Questions Is Disabled." is pre-1.x).
	e.wantError(resp, body, 403, "app_suggested_questions_after_answer_disabled", "*")
	resp, body = e.multipart("/audio-to-text", part{field: "file", filename: "a.mp3", contentType: "audio/mp3", data: strings.NewReader("x")})
	e.wantError(resp, body, 400, "speech_to_text_disabled", "Speech to text is disabled.")
	resp, body = e.do(http.MethodPost, "/text-to-audio", map[string]any{"text": "hi"})
	e.wantError(resp, body, 400, "invalid_param", "TTS is not enabled")
	_, body = e.do(http.MethodGet, "/conversations?user=u", nil)
	// MessageBasedAppGenerator._get_conversation_introduction returns
	// `introduction or ""`: a string even without an opening statement.
	if !strings.Contains(string(body), `"introduction":""`) {
		t.Errorf(`introduction should be "" without an opening statement: %s`, body)
	}
}

func TestSuggested(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	_, fr := e.chat(chatBody("Count to three", "sue"))
	msg := fr[0].str("message_id")
	resp, body := e.do(http.MethodGet, "/messages/"+msg+"/suggested?user=sue", nil)
	if resp.StatusCode != 200 || string(body) != `{"result":"success","data":["Count again?","Count to four?"]}`+"\n" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	// A cassette without questions falls back to the app's suggestions.
	_, fr = e.chat(chatBody("Use your tools", "sue"))
	_, body = e.do(http.MethodGet, "/messages/"+fr[0].str("message_id")+"/suggested?user=sue", nil)
	if string(body) != `{"result":"success","data":["What can you do?"]}`+"\n" {
		t.Fatalf("fallback: %s", body)
	}
	resp, body = e.do(http.MethodGet, "/messages/"+msg+"/suggested", nil)
	e.wantError(resp, body, 400, "invalid_param", "Arg user must be provided.")
	resp, body = e.do(http.MethodGet, "/messages/"+msg+"/suggested?user=tom", nil)
	e.wantError(resp, body, 404, "not_found", "Message Not Exists.")
	resp, body = e.do(http.MethodGet, "/messages/123/suggested?user=sue", nil)
	wantHTML404(t, resp, body)
}
