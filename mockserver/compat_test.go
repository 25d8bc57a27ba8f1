package mockserver_test

// Requests exactly as real third-party Dify clients put them on the wire
// (captured with a logging proxy; docs/mock/compatibility.md lists the
// clients and versions). Each case failing here means one of those clients
// breaks against the mock.

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// TestAttachmentTypeIsNotCrossChecked: dify-ai-provider 1.1.1 uploads every
// attachment and then declares it "image" for image/* and "document" for
// everything else, whatever the extension (here an MP3 it named
// "file.mpeg"). Dify checks declared against detected types only for
// Workflow/Chatflow apps, and New Agent hands file references to the agent
// unparsed (docs/api §2.1), so the turn must play and keep the declared type.
func TestAttachmentTypeIsNotCrossChecked(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	for _, c := range []struct{ filename, mime, declared string }{
		{"file.mpeg", "audio/mpeg", "document"},
		{"memo.mp3", "audio/mpeg", "document"},
		{"file.svg+xml", "image/svg+xml", "image"},
		{"file.vnd.openxmlformats-officedocument.wordprocessingml.document", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "document"},
		{"clip.mp4", "video/mp4", "document"},
	} {
		up := e.upload("aip-user", c.filename, c.mime, []byte("abc"))
		// dify-ai-provider's body: no conversation_id key, files last.
		_, frames := e.chat(map[string]any{
			"inputs": map[string]any{"city": "Seoul"}, "query": "Hello", "response_mode": "streaming", "user": "aip-user",
			"files": []map[string]any{{"type": c.declared, "transfer_method": "local_file", "upload_file_id": up.ID}},
		})
		last := frames[len(frames)-1]
		if last.event() != "message_end" {
			t.Fatalf("%s: stream ended with %q", c.filename, last.raw)
		}
		_, body := e.do(http.MethodGet, "/messages?user=aip-user&conversation_id="+last.str("conversation_id"), nil)
		m := decode[dify.MessagePage](t, body).Data[0]
		if len(m.MessageFiles) != 1 || m.MessageFiles[0].Type != c.declared || m.MessageFiles[0].Filename != c.filename {
			t.Errorf("%s: stored files %s", c.filename, body)
		}
	}
}

// TestRepeatedSlashesRedirect: with a base URL ending in "/", dify-client
// 2.3.2 and dify-ai-provider request "/v1//chat-messages". Dify's Werkzeug
// router merges the slashes and answers 308 to the merged URL (query kept,
// before auth); both clients follow it.
func TestRepeatedSlashesRedirect(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct{ method, path, want string }{
		{http.MethodPost, "/v1//chat-messages", "/v1/chat-messages"},
		{http.MethodGet, "/v1//conversations?user=u&first_id=&limit=1&pinned=false", "/v1/conversations?user=u&first_id=&limit=1&pinned=false"},
		{http.MethodGet, "//v1///parameters", "/v1/parameters"},
		{http.MethodGet, "/v1//", "/v1/"},
	} {
		req, _ := http.NewRequest(c.method, e.ts.URL+c.path, nil) // no key: routing comes first
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != c.want {
			t.Errorf("%s %s: %d Location %q, want 308 %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Location"), c.want)
		}
		cors := resp.Header.Get("Access-Control-Allow-Origin") == "*" || !strings.HasPrefix(c.path, "/v1")
		if !cors || !strings.Contains(string(body), "Redirecting...") {
			t.Errorf("%s %s: CORS %q body %q", c.method, c.path, resp.Header.Get("Access-Control-Allow-Origin"), body)
		}
	}
	// Following the redirect re-sends the POST body, as axios and fetch do.
	body := `{"inputs":{"city":"Seoul"},"query":"Hello","user":"slash","response_mode":"streaming","files":null}`
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/v1//chat-messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer app-test")
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	frames := readFrames(t, resp.Body, start, nil)
	resp.Body.Close()
	if resp.StatusCode != 200 || frames[len(frames)-1].event() != "message_end" {
		t.Fatalf("followed redirect: %d, %d frames", resp.StatusCode, len(frames))
	}
	// Merged paths that name no route (or not for this method) are not
	// redirected.
	for _, c := range []struct{ method, path string }{{http.MethodGet, "/v1//nope"}, {http.MethodGet, "/v1//chat-messages"}} {
		req, _ := http.NewRequest(c.method, e.ts.URL+c.path, nil)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusPermanentRedirect {
			t.Errorf("%s %s redirected to %s", c.method, c.path, resp.Header.Get("Location"))
		}
	}
}

// wireRequest is one request as a client library sent it.
type wireRequest struct {
	client      string
	method      string
	path        string
	contentType string // "" = header absent
	body        string
	want        int
}

// TestRealClientRequestShapes replays request shapes captured from
// dify-client 1.0.3/2.3.2 (axios), the TypeScript dify-client (fetch) and
// dify-ai-provider 1.1.1, including the quirks Dify tolerates: JSON
// Content-Type on GETs without a body, files: null, a camelCase
// responseMode that Dify ignores (so the turn streams), unknown query
// parameters, a JSON body on DELETE, name: null with auto_generate.
func TestRealClientRequestShapes(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	_, frames := e.chat(chatBody("Hello", "shape"))
	conv, msg := frames[0].str("conversation_id"), frames[0].str("message_id")
	for _, c := range []wireRequest{
		{"dify-client 2.3.2", "GET", "/parameters?user=shape", "application/json", "", 200},
		{"dify-client 2.3.2", "POST", "/chat-messages", "application/json", `{"inputs":{"city":"Seoul"},"query":"Hello","user":"shape","response_mode":"streaming","files":null}`, 200},
		// Follow-ups repeat the app's required inputs: Dify validates them
		// on every turn (AppGenerator._prepare_user_inputs).
		{"dify-client 2.3.2", "POST", "/chat-messages", "application/json", `{"inputs":{"city":"Seoul"},"query":"Hello","user":"shape","response_mode":"streaming","files":null,"conversation_id":"` + conv + `"}`, 200},
		{"dify-client 2.3.2", "POST", "/chat-messages", "application/json", `{"inputs":{"city":"Seoul"},"query":"Hello","user":"shape","response_mode":"blocking","files":null}`, 400},
		{"dify-client 1.0.3", "POST", "/chat-messages", "application/json", `{"inputs":{"city":"Seoul"},"query":"Hello","user":"shape","responseMode":"blocking"}`, 200},
		{"dify-client 2.3.2", "GET", "/conversations?user=shape&first_id=" + conv + "&limit=1&pinned=false", "application/json", "", 200},
		{"TS dify-client", "GET", "/conversations?user=shape&last_id=" + conv + "&limit=1&pinned=true", "", "", 200},
		{"dify-client 2.3.2", "GET", "/messages?user=shape&conversation_id=" + conv + "&first_id=" + msg + "&limit=1", "application/json", "", 200},
		{"dify-client 2.3.2", "POST", "/conversations/" + conv + "/name", "application/json", `{"name":null,"user":"shape","auto_generate":true}`, 200},
		{"TS dify-client", "POST", "/conversations/" + conv + "/name", "application/json", `{"user":"shape","auto_generate":false,"name":"Trip"}`, 200},
		{"TS dify-client", "GET", "/messages/" + msg + "/suggested?user=shape", "", "", 200},
		{"TS dify-client", "POST", "/text-to-audio", "application/json", `{"text":"Hello there","user":"shape","streaming":false}`, 200},
		{"TS dify-client", "POST", "/text-to-audio", "application/json", `{"message_id":"` + msg + `","user":"shape","streaming":true}`, 200},
		{"TS dify-client", "POST", "/chat-messages/" + frames[0].str("task_id") + "/stop", "application/json", `{"user":"shape"}`, 200},
		{"TS dify-client", "GET", "/info?user=shape", "", "", 200},
		{"dify-client 2.3.2", "DELETE", "/conversations/" + conv, "application/json", `{"user":"shape"}`, 204},
	} {
		req, err := http.NewRequest(c.method, e.url(c.path), strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer app-test")
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s %s: %d %s, want %d", c.client, c.method, c.path, resp.StatusCode, data, c.want)
		}
	}
}

// TestRealClientUploads: the multipart bodies of axios (spec FormData and
// the form-data package) and undici (fetch): parts in either order, a Blob
// without a type arriving as application/octet-stream, non-ASCII file
// names sent as raw UTF-8.
func TestRealClientUploads(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	for _, c := range []struct {
		name, filename, partType string
		userFirst                bool
		route                    string
		want                     int
	}{
		{"axios spec FormData", "itinerary.txt", "text/plain", false, "/files/upload", 201},
		{"undici Blob without type", "raw.bin", "application/octet-stream", false, "/files/upload", 201},
		{"form-data package, type from name", "notes.md", "text/markdown", false, "/files/upload", 201},
		{"raw UTF-8 name", "일정표.txt", "text/plain", true, "/files/upload", 201},
		{"browser recorder audio", "rec.webm", "audio/webm;codecs=opus", false, "/audio-to-text", 200},
		{"axios audio", "voice.mp3", "audio/mp3", false, "/audio-to-text", 200},
	} {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		user := func() { _ = mw.WriteField("user", "uploader") }
		if c.userFirst {
			user()
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="`+c.filename+`"`)
		h.Set("Content-Type", c.partType)
		pw, _ := mw.CreatePart(h)
		_, _ = pw.Write([]byte("some bytes"))
		if !c.userFirst {
			user()
		}
		_ = mw.Close()
		req, _ := http.NewRequest(http.MethodPost, e.url(c.route), &buf)
		req.Header.Set("Authorization", "Bearer app-test")
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, data)
			continue
		}
		if c.want == 201 && decode[dify.FileUploadResult](t, data).Name != c.filename {
			t.Errorf("%s: name not kept: %s", c.name, data)
		}
	}
}
