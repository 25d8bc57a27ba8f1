package mockserver_test

import (
	"bytes"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/internal/cputime"
	"github.com/difyops/terraform-provider-dify/internal/textlog"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/mocktest"
)

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark
// measures the server's own work per request, not a recorder's.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// defaultServer is a server with the defaults (journal on, access log at
// info, written by serve's handler and discarded).
func defaultServer(tb testing.TB) *mockserver.Server {
	tb.Helper()
	srv, err := mockserver.New(mockserver.Config{Logger: slog.New(textlog.NewHandler(io.Discard, slog.LevelInfo))})
	if err != nil {
		tb.Fatal(err)
	}
	return srv
}

// benchRequest is a request with the benchmarks' key and, for a body, its
// Content-Type.
func benchRequest(method, path, contentType string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, path, body)
	req.Header.Set("Authorization", "Bearer app-bench")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req
}

// startChat plays a chat turn for bench-user at speed 0 and returns its
// conversation's id.
func startChat(tb testing.TB, srv *mockserver.Server, query string) string {
	tb.Helper()
	req := benchRequest(http.MethodPost, "/v1/chat-messages", "application/json",
		strings.NewReader(`{"query":"`+query+`","inputs":{},"user":"bench-user","response_mode":"streaming"}`))
	req.Header.Set(mockserver.HeaderSpeed, "0")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	_, rest, _ := strings.Cut(rec.Body.String(), `"conversation_id":`)
	id := strings.Trim(strings.TrimSpace(strings.SplitN(rest, ",", 2)[0]), `"`)
	if rec.Code != http.StatusOK || id == "" {
		tb.Fatalf("chat %q: %d %.300s", query, rec.Code, rec.Body)
	}
	return id
}

// parametersRequest is a server with the defaults and a GET
// /v1/parameters for it.
func parametersRequest(tb testing.TB) (*mockserver.Server, *http.Request) {
	return defaultServer(tb), benchRequest(http.MethodGet, "/v1/parameters?user=bench-user", "", nil)
}

// BenchmarkParametersRequest is the mock's CPU and allocations per
// GET /v1/parameters with its defaults (journal on, access log at info),
// without the network: what the bench's `GET /v1/parameters` row pays on
// top of a bare handler.
func BenchmarkParametersRequest(b *testing.B) {
	srv, req := parametersRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		srv.ServeHTTP(w, req)
	}
}

// BenchmarkChatRequest is the mock's CPU and allocations for one streamed
// chat turn (tool-use, played at speed 0) with its defaults, without the
// network: admission (parse, steer, admit), the replay and storing the turn.
func BenchmarkChatRequest(b *testing.B) {
	srv := defaultServer(b)
	body := `{"query":"What will three nights in Lisbon cost for two?","inputs":{},"user":"bench-user","response_mode":"streaming"}`
	b.ReportAllocs()
	for b.Loop() {
		req := benchRequest(http.MethodPost, "/v1/chat-messages", "application/json", strings.NewReader(body))
		req.Header.Set(mockserver.HeaderCassette, "tool-use")
		req.Header.Set(mockserver.HeaderSpeed, "0")
		w := &discardWriter{h: http.Header{}}
		srv.ServeHTTP(w, req)
	}
}

// BenchmarkListConversationsRequest is the mock's CPU and allocations per
// GET /v1/conversations?limit=20 for a user with 20 conversations (the
// bench's `GET /conversations` row) with its defaults, without the network.
func BenchmarkListConversationsRequest(b *testing.B) {
	srv := defaultServer(b)
	for i := range 20 {
		startChat(b, srv, "Hello "+strconv.Itoa(i))
	}
	req := benchRequest(http.MethodGet, "/v1/conversations?limit=20&user=bench-user", "", nil)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), `"status":"normal"`) != 20 {
		b.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		srv.ServeHTTP(w, req)
	}
}

// BenchmarkRenameRequest is the mock's CPU and allocations per
// POST /v1/conversations/:id/name (the bench's rename row) with its
// defaults: a JSON body read, validated, journaled and answered.
func BenchmarkRenameRequest(b *testing.B) {
	srv := defaultServer(b)
	path := "/v1/conversations/" + startChat(b, srv, "hi") + "/name"
	const body = `{"name":"renamed","user":"bench-user"}`
	rec := httptest.NewRecorder()
	if srv.ServeHTTP(rec, benchRequest(http.MethodPost, path, "application/json", strings.NewReader(body))); rec.Code != http.StatusOK {
		b.Fatalf("rename %s: %d %s", path, rec.Code, rec.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := benchRequest(http.MethodPost, path, "application/json", strings.NewReader(body))
		w := &discardWriter{h: http.Header{}}
		srv.ServeHTTP(w, req)
	}
}

// BenchmarkUploadRequest is the mock's CPU and allocations per 1 KiB
// POST /v1/files/upload (the bench's upload row) with its defaults: the
// mock's multipart reader and the journal's both read the body.
func BenchmarkUploadRequest(b *testing.B) {
	srv := defaultServer(b)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("user", "bench-user")
	part, _ := mw.CreateFormFile("file", "notes.txt")
	_, _ = part.Write(bytes.Repeat([]byte("0123456789abcdef"), 64))
	_ = mw.Close()
	body := buf.Bytes()
	b.ReportAllocs()
	for b.Loop() {
		req := benchRequest(http.MethodPost, "/v1/files/upload", mw.FormDataContentType(), bytes.NewReader(body))
		w := &discardWriter{h: http.Header{}}
		srv.ServeHTTP(w, req)
	}
}

// A GET /v1/parameters allocates what its layers need and no more: the
// journal's record and its one copy of the request line, and the two
// writers (access log, journal). A request copied for its context
// (r.WithContext) or per-request CORS values were 7 more; the response's
// Content-Length and copied headers 2 more (now made once per route).
func TestParametersRequestAllocatesLittle(t *testing.T) {
	srv, req := parametersRequest(t)
	w := &discardWriter{h: http.Header{}}
	allocs := testing.AllocsPerRun(200, func() {
		clear(w.h)
		srv.ServeHTTP(w, req)
	})
	t.Logf("%.0f allocations per request", allocs)
	// Measured 4 (13 before the record moved from the context to the
	// writer and the CORS values were shared, 6 before the app responses
	// were made once).
	if allocs > 5 {
		t.Fatalf("GET /v1/parameters allocates %.0f times per request, want at most 5", allocs)
	}
}

// BenchmarkDetachedStreamStart is a chat stream's start and end as
// `dify-mock serve` runs them (the Server's Listener, so the stream leaves
// its connection goroutine) over loopback, one connection per stream as the
// load generator and browsers make them: the cost that bounds how fast a
// crowd of streams can ramp up (bench/results.md, "Issue 21, eleventh
// round"). The turn is plain-answer at speed 0 (its frames at once), the
// access log and journal on; the client is a raw connection that reads to
// the end, in this process: cpu-µs/op is both sides' CPU per stream
// (server and client alike pay the connection's kernel work).
func BenchmarkDetachedStreamStart(b *testing.B) {
	m := mocktest.Start(b, mocktest.WithSpeed(0), mocktest.WithConfig(func(c *mockserver.Config) {
		c.Logger = slog.New(textlog.NewHandler(io.Discard, slog.LevelInfo))
	}))
	addr := strings.TrimPrefix(m.URL, "http://")
	body := `{"query":"hello","inputs":{},"user":"bench-user","response_mode":"streaming"}`
	req := "POST /v1/chat-messages HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer app-bench\r\n" +
		"Content-Type: application/json\r\nX-Dify-Mock-Cassette: plain-answer\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	b.ReportAllocs()
	b.SetParallelism(4) // enough streams in flight to keep the cores busy
	cpu := cputime.Self()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 16<<10)
		for pb.Next() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				b.Error(err)
				return
			}
			_, err = io.WriteString(conn, req)
			n := 0
			for err == nil {
				var k int
				k, err = conn.Read(buf[n:])
				n = min(n+k, len(buf)/2)
			}
			_ = conn.Close()
			if err != io.EOF || !strings.HasPrefix(string(buf[:12]), "HTTP/1.1 200") {
				b.Errorf("stream ended with %v after %q", err, buf[:min(n, 64)])
				return
			}
		}
	})
	if used := cputime.Self() - cpu; used > 0 {
		b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/op")
	}
}
