package mockserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// Fuzz targets for the request decoders, driven through the whole handler
// (auth, routing, validation, replay) with httptest.NewRecorder. Whatever
// the input: no panic and no 500 (the recoverer would turn a panic into a
// 500 and an ERROR log line), every error is Dify's envelope with a status
// matching the response's, and a 200 chat is a complete SSE stream.

// fuzzServer is the mock with replays at full speed and logs captured.
func fuzzServer(f *testing.F) (*mockserver.Server, *lockedBuffer) {
	f.Helper()
	logs := &lockedBuffer{}
	srv, err := mockserver.New(mockserver.Config{
		Cassettes: testSet(f, testParams),
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		f.Fatal(err)
	}
	return srv, logs
}

// serve runs one request, failing (with every goroutine's stack) if the
// handler does not return in time: a hang is a bug too, and the fuzzer
// has no per-input timeout of its own.
func serve(t *testing.T, srv http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeHTTP(rec, req)
	}()
	select {
	case <-done:
		return rec
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("%s %s did not return within 10s:\n%s", req.Method, req.URL, buf[:runtime.Stack(buf, true)])
		return nil
	}
}

// checkResponse holds for every fuzzed request.
func checkResponse(t *testing.T, rec *httptest.ResponseRecorder, logs *lockedBuffer) {
	t.Helper()
	// The one 500 Dify gives on purpose: a JSON body that is not an object
	// reaches validate_app_token's request.get_json().get("user") and
	// becomes libs/external_api.py's unhandled-exception answer.
	unhandled := `{"code":"unknown","message":"Internal Server Error","status":500}` + "\n"
	if rec.Code >= 500 && !(rec.Code == 500 && rec.Body.String() == unhandled) {
		t.Fatalf("HTTP %d: %s\nlogs: %s", rec.Code, rec.Body.Bytes(), logs.String())
	}
	if l := logs.String(); strings.Contains(l, "panic") || strings.Contains(l, "level=ERROR") {
		t.Fatalf("logged: %s", l)
	}
	if rec.Code < 300 {
		return
	}
	var env struct {
		Code    *string `json:"code"`
		Message *string `json:"message"`
		Status  int     `json:"status"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Code == nil || env.Message == nil || env.Status != rec.Code {
		t.Fatalf("HTTP %d without a Dify envelope: %q (%v)", rec.Code, rec.Body.Bytes(), err)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
}

// FuzzChatRequest: arbitrary POST /chat-messages bodies and cassette
// headers. The speed header stays 0 so every accepted request replays at
// once.
func FuzzChatRequest(f *testing.F) {
	srv, logs := fuzzServer(f)
	seeds := []string{
		`{"query":"Count to three","inputs":{"city":"Seoul"},"user":"u","response_mode":"streaming"}`,
		`{"query":"Use your tools","inputs":{"city":"Seoul","budget":"low"},"user":"u","auto_generate_name":false}`,
		`{"query":"Read my file","inputs":{"city":"x"},"user":"u","files":[{"type":"document","transfer_method":"local_file","upload_file_id":"f0000000-0000-4000-8000-000000000031"}]}`,
		`{"query":"q","inputs":{"city":"x"},"user":"u","files":[{"type":"image","transfer_method":"remote_url","url":"https://x/a.png?b=c"}]}`,
		`{"query":"Second question","inputs":{},"user":"u","conversation_id":"C0000000-0000-4000-8000-000000000001"}`,
		`{"query":"Refuse me","inputs":{"city":"x"},"user":"u","response_mode":"blocking"}`,
		`{"query":"Think hard","inputs":{"city":"x"},"user":"u","files":null}`,
		`{"query":"\u0000","inputs":{"city":1e400},"user":"u"}`,
		`{"query":`, `[]`, `null`, ``,
	}
	for i, s := range seeds {
		cassette := ""
		if i%3 == 1 {
			cassette = "two-turn"
		}
		f.Add([]byte(s), cassette)
	}
	f.Fuzz(func(t *testing.T, body []byte, cassette string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat-messages", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer app-fuzz")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(mockserver.HeaderSpeed, "0")
		if cassette != "" && !strings.ContainsAny(cassette, "\r\n\x00") {
			req.Header.Set(mockserver.HeaderCassette, cassette)
		}
		rec := serve(t, srv, req)
		checkResponse(t, rec, logs)
		if rec.Code != http.StatusOK {
			return
		}
		// A 200 is a whole stream: frames end with message_end or error.
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("200 with Content-Type %q", ct)
		}
		turn, err := dify.Collect(dify.NewChatStream(bytes.NewReader(rec.Body.Bytes())))
		if _, inStream := dify.AsAPIError(err); err != nil && !inStream {
			t.Fatalf("stream does not decode: %v\n%s", err, rec.Body.Bytes())
		}
		if err == nil && !turn.Completed {
			t.Fatalf("stream without an end: %s", rec.Body.Bytes())
		}
	})
}

// FuzzUploadMultipart: arbitrary multipart bodies and boundaries for POST
// /files/upload (and the same reader behind /audio-to-text).
func FuzzUploadMultipart(f *testing.F) {
	srv, logs := fuzzServer(f)
	for _, b := range []rawBody{
		multipartBytes(userPart("u"), filePart("notes.txt", "text/plain", "hello")),
		multipartBytes(filePart("a.png", "image/png", "\x89PNG"), filePart("b.png", "image/png", "x")),
		multipartBytes(filePart("", "text/plain", "x")),
		multipartBytes(filePart("a.txt", "", "x")),
		multipartBytes(filePart(`a\b.txt`, "text/plain", "x"), userPart("u")),
		multipartBytes(part{field: "file", filename: "-", data: strings.NewReader("no filename")}),
		multipartBytes(filePart("clip.mp3", "audio/mpeg", "ID3")),
		{ctype: "multipart/form-data; boundary=XYZ", data: []byte("--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nabc\r\n--XYZ--")},
	} {
		_, params, _ := strings.Cut(b.ctype, "boundary=")
		f.Add(b.data, params, false)
		f.Add(b.data, params, true)
	}
	f.Fuzz(func(t *testing.T, body []byte, boundary string, audio bool) {
		path := "/v1/files/upload"
		if audio {
			path = "/v1/audio-to-text"
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer app-fuzz")
		if !strings.ContainsAny(boundary, "\r\n\x00") {
			req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
		}
		rec := serve(t, srv, req)
		checkResponse(t, rec, logs)
		switch {
		case audio && rec.Code == http.StatusOK:
			var v dify.AudioText
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || v.Text == "" {
				t.Fatalf("transcript %s (%v)", rec.Body.Bytes(), err)
			}
		case !audio && rec.Code == http.StatusCreated:
			var v struct {
				ID   string `json:"id"`
				Size int64  `json:"size"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || v.ID == "" || v.Size < 0 || v.Size > int64(len(body)) {
				t.Fatalf("upload result %s for a %d-byte body (%v)", rec.Body.Bytes(), len(body), err)
			}
		case rec.Code < 300:
			t.Fatalf("unexpected success %d: %s", rec.Code, rec.Body.Bytes())
		}
	})
}

// FuzzJSONRoutes: arbitrary bodies and query strings for the other routes
// that decode JSON or query parameters.
func FuzzJSONRoutes(f *testing.F) {
	srv, logs := fuzzServer(f)
	routes := []struct{ method, path string }{
		{http.MethodPost, "/v1/conversations/c0000000-0000-4000-8000-000000000001/name"},
		{http.MethodDelete, "/v1/conversations/c0000000-0000-4000-8000-000000000001"},
		{http.MethodPost, "/v1/chat-messages/t1/stop"},
		{http.MethodPost, "/v1/text-to-audio"},
		{http.MethodGet, "/v1/conversations"},
		{http.MethodGet, "/v1/messages"},
	}
	for i := range routes {
		f.Add(uint8(i), []byte(`{"user":"u","name":"n","auto_generate":true,"text":"hi","message_id":"a0000000-0000-4000-8000-000000000002"}`), "user=u&limit=5&last_id=&sort_by=-created_at&conversation_id=c0000000-0000-4000-8000-000000000001")
		f.Add(uint8(i), []byte(`{"user":1}`), "limit=0&first_id=x")
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte, query string) {
		r := routes[int(route)%len(routes)]
		req := httptest.NewRequest(r.method, r.path, bytes.NewReader(body))
		// Only valid query syntax reaches a server; the rest is the client's error.
		if !strings.ContainsAny(query, " #\r\n\x00\x7f") && !strings.ContainsFunc(query, func(c rune) bool { return c < 0x20 || c > 0x7e }) {
			req.URL.RawQuery = query
		}
		req.Header.Set("Authorization", "Bearer app-fuzz")
		req.Header.Set("Content-Type", "application/json")
		rec := serve(t, srv, req)
		checkResponse(t, rec, logs)
		if r.method == http.MethodPost && strings.HasSuffix(r.path, "/text-to-audio") && rec.Code == http.StatusOK {
			if ct := rec.Header().Get("Content-Type"); ct != "audio/mpeg" || rec.Body.Len() == 0 {
				t.Fatalf("text-to-audio 200 with %q, %d bytes", ct, rec.Body.Len())
			}
		}
		_, _ = io.Copy(io.Discard, rec.Body)
	})
}
