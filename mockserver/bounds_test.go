package mockserver_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// manyParts streams a multipart body of n tiny parts without holding it:
// the client side allocates next to nothing, so what the process allocates
// while the request runs is the server's doing.
type manyParts struct {
	n, sent int
	part    []byte
	tail    []byte
	buf     []byte
}

const tinyBoundary = "b0undary"

func newManyParts(n int, file bool) *manyParts {
	p := "--" + tinyBoundary + "\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nv\r\n"
	if file {
		p = "--" + tinyBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nv\r\n"
	}
	return &manyParts{n: n, part: []byte(p), tail: []byte("--" + tinyBoundary + "--\r\n")}
}

func (m *manyParts) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		if len(m.buf) == 0 {
			switch {
			case m.sent < m.n:
				m.buf = m.part
				m.sent++
			case m.tail != nil:
				m.buf, m.tail = m.tail, nil
			default:
				if total == 0 {
					return 0, io.EOF
				}
				return total, nil
			}
		}
		c := copy(p, m.buf)
		m.buf, p, total = m.buf[c:], p[c:], total+c
	}
	return total, nil
}

// postBody sends a chunked POST over a raw connection and reads the answer
// while the body is still being written: a server that refuses early and
// closes the connection makes http.Client report the write error instead.
func (e *env) postBody(path, contentType string, body io.Reader) (*http.Response, []byte, error) {
	conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	go func() {
		bw := bufio.NewWriter(conn)
		fmt.Fprintf(bw, "POST /v1%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer app-test\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
			path, e.ts.Listener.Addr(), contentType)
		cw := httputil.NewChunkedWriter(bw)
		if _, err := io.Copy(cw, body); err != nil {
			return
		}
		_ = cw.Close()
		_, _ = bw.WriteString("\r\n")
		_ = bw.Flush()
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data, nil
}

// A multipart body of a few hundred thousand tiny parts is refused after
// Werkzeug's 1000 parts with Dify's 413, and the server does not allocate in
// proportion to the parts it was sent (before the bound, 1M parts took the
// process from 18 MB to 343 MB).
func TestMultipartPartsAreBounded(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	const parts = 300_000 // about 25 MB of body
	for _, path := range []string{"/files/upload", "/audio-to-text"} {
		for _, file := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s file=%v", path, file), func(t *testing.T) {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				resp, body, err := e.postBody(path, "multipart/form-data; boundary="+tinyBoundary, newManyParts(parts, file))
				runtime.ReadMemStats(&after)
				if err != nil {
					t.Fatalf("request: %v", err)
				}
				if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
					t.Errorf("the request allocated %d MiB; want the part bound to keep it well under 32 MiB", alloc>>20)
				}
				if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), `"code":"request_entity_too_large"`) {
					t.Errorf("got %d %s, want 413 request_entity_too_large", resp.StatusCode, body)
				}
			})
		}
	}
}

// Exactly 1000 parts are still a form (Werkzeug raises on the 1001st), and a
// field of 500,000 bytes is accepted while one byte more is refused.
func TestMultipartLimitsMatchWerkzeug(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	ps := []part{}
	for range 999 {
		ps = append(ps, part{field: "x", filename: "-", data: strings.NewReader("v")})
	}
	ps = append(ps, part{field: "file", filename: "a.txt", contentType: "text/plain", data: strings.NewReader("hello")})
	if resp, body := e.multipart("/files/upload", ps...); resp.StatusCode != http.StatusCreated {
		t.Fatalf("1000 parts: %d %s", resp.StatusCode, body)
	}
	ps = append(ps, part{field: "y", filename: "-", data: strings.NewReader("v")})
	resp, body := e.multipart("/files/upload", ps...)
	e.wantError(resp, body, http.StatusRequestEntityTooLarge, "request_entity_too_large", "The data value transmitted exceeds the capacity limit.")

	file := part{field: "file", filename: "a.txt", contentType: "text/plain", data: strings.NewReader("hello")}
	ok := part{field: "user", filename: "-", data: bytes.NewReader(bytes.Repeat([]byte("u"), 500_000))}
	if resp, body := e.multipart("/files/upload", ok, file); resp.StatusCode != http.StatusCreated {
		t.Fatalf("500,000-byte field: %d %s", resp.StatusCode, body)
	}
	file.data = strings.NewReader("hello")
	long := part{field: "note", filename: "-", data: bytes.NewReader(bytes.Repeat([]byte("u"), 500_001))}
	resp, body = e.multipart("/files/upload", long, file)
	e.wantError(resp, body, http.StatusRequestEntityTooLarge, "request_entity_too_large", "The data value transmitted exceeds the capacity limit.")
}

// The slash-merging redirect names the path only: a forged Host header
// (DNS rebinding, cache poisoning) never ends up in Location or the page.
func TestSlashRedirectIgnoresHost(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1//parameters?x=1 HTTP/1.1\r\nHost: evil.example:666\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != "/v1/parameters?x=1" {
		t.Errorf("got %d Location %q, want 308 /v1/parameters?x=1", resp.StatusCode, resp.Header.Get("Location"))
	}
	if strings.Contains(string(body), "evil") {
		t.Errorf("redirect page names the request's Host: %s", body)
	}
}

// HEAD is answered on every GET route with the GET status and headers and no
// body, as Flask does, instead of 405; routes without GET still say 405.
func TestHeadOnGetRoutes(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	for _, path := range []string{"/", "/info", "/parameters", "/meta", "/site", "/conversations?user=u", "/messages?user=u&conversation_id=" + recConv} {
		get, getBody := e.do(http.MethodGet, path, nil)
		head, headBody := e.do(http.MethodHead, path, nil)
		if head.StatusCode != get.StatusCode || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") || len(headBody) != 0 {
			t.Errorf("HEAD %s: %d %q body %d bytes; GET: %d %q", path, head.StatusCode, head.Header.Get("Content-Type"), len(headBody), get.StatusCode, get.Header.Get("Content-Type"))
		}
		if get.StatusCode == http.StatusOK && head.Header.Get("Content-Length") != fmt.Sprint(len(getBody)) {
			t.Errorf("HEAD %s: Content-Length %q, GET body %d bytes", path, head.Header.Get("Content-Length"), len(getBody))
		}
	}
	resp, _ := e.do(http.MethodHead, "/info", nil, "Authorization", "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("HEAD without a key: %d, want 401", resp.StatusCode)
	}
	resp, _ = e.do(http.MethodHead, "/chat-messages", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("HEAD on a POST-only route: %d, want 405", resp.StatusCode)
	}
}

// A refused origin gets no CORS grant but still Vary: Origin, so a shared
// cache never serves an allowed origin's answer to it or the reverse.
func TestRefusedOriginVaries(t *testing.T) {
	e := newEnv(t, mockserver.Config{CORSOrigin: "http://app.test"})
	for _, origin := range []string{"http://evil.test", "http://app.test", ""} {
		resp, _ := e.do(http.MethodGet, "/info", nil, "Origin", origin)
		if resp.Header.Get("Vary") != "Origin" {
			t.Errorf("Origin %q: Vary %q, want Origin", origin, resp.Header.Values("Vary"))
		}
		want := ""
		if origin == "http://app.test" {
			want = origin
		}
		if allowed := resp.Header.Get("Access-Control-Allow-Origin"); allowed != want {
			t.Errorf("Origin %q: Access-Control-Allow-Origin %q", origin, allowed)
		}
	}
}

// heapAfterGC is the live heap once garbage is collected.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Chats with a 1.5 MB query each keep the live heap near the state bound: the
// least recently changed conversations are evicted (and logged) and the
// newest stay readable. Before the bound, 300 such chats held 1.6 GB.
func TestStateStaysWithinItsBound(t *testing.T) {
	const bound = 4 << 20
	s := newLoggedServer(t, mockserver.Config{MaxStateBytes: bound, Cassettes: testSet(t, testParams)})
	e := &env{t: t, srv: s.srv, ts: s.ts, hc: &http.Client{}}
	base := heapAfterGC()
	query := strings.Repeat("q", 3<<19)
	var convs []string
	for i := range 16 { // 24 MB of queries
		_, frames := e.chat(chatBody(query, "big"), mockserver.HeaderCassette, "two-turn")
		convs = append(convs, frames[0].str("conversation_id"))
		if i%4 == 3 {
			if used, _ := s.srv.StateUsage(); used > bound {
				t.Fatalf("after %d chats the state holds %d bytes, bound %d", i+1, used, bound)
			}
		}
	}
	query = ""
	if grew := int64(heapAfterGC()) - int64(base); grew > 3*bound {
		t.Errorf("the live heap grew by %d MiB over 16 chats of 1.5 MB; want it near the %d MiB bound", grew>>20, bound>>20)
	}
	resp, _ := e.do(http.MethodGet, "/messages?user=big&conversation_id="+convs[0], nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the oldest conversation: %d, want 404 (evicted)", resp.StatusCode)
	}
	resp, body := e.do(http.MethodGet, "/messages?user=big&conversation_id="+convs[len(convs)-1], nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"query":"qqq`) {
		t.Errorf("the newest conversation: %d %.200s", resp.StatusCode, body)
	}
	if logs := s.logs.String(); !strings.Contains(logs, "state bound reached") || !strings.Contains(logs, convs[0]) {
		t.Errorf("no eviction log line for %s", convs[0])
	}
}
