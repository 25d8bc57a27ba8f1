package mockserver_test

import (
	"bytes"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// testClock is a settable clock for Config.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// get fetches a URL the mock handed out, absolute or relative to its root,
// with no API key: the signature is the credential.
func (e *env) get(u string) (*http.Response, []byte) {
	e.t.Helper()
	if strings.HasPrefix(u, "/") {
		u = e.ts.URL + u
	}
	resp, err := e.hc.Get(u)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, data
}

// tamper changes one query parameter of a URL.
func tamper(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if value == "" {
		q.Del(key)
	} else {
		q.Set(key, value)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// flip changes the last character before a signature's padding.
func flip(sign string) string {
	i := len(strings.TrimRight(sign, "=")) - 1
	c := byte('A')
	if sign[i] == 'A' {
		c = 'B'
	}
	return sign[:i] + string(c) + sign[i+1:]
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// An upload's signed source_url, and the URL history gives for it after
// the conversation is reloaded, lead to the uploaded bytes with Dify's
// headers, without an API key; edited or expired signatures get Dify's 404.
func TestSignedUploadURLs(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	e := newEnv(t, mockserver.Config{Now: clock.now})
	data := pngBytes(t)
	// Werkzeug's FileStorage.mimetype: parameters dropped, lower-cased.
	f := e.upload("alice", "chart.png", "Image/PNG; name=chart", data)
	if *f.MimeType != "image/png" {
		t.Errorf("mime_type %q, want image/png", *f.MimeType)
	}
	// urlencode: the signature's "=" padding is %3D, the rest as is.
	q := f.SourceURL[strings.Index(f.SourceURL, "?")+1:]
	if !strings.HasSuffix(q, "%3D") || strings.Count(q, "=") != 3 {
		t.Errorf("source_url query %q is not urllib.parse.urlencode's", q)
	}
	check := func(u string) {
		t.Helper()
		resp, body := e.get(u)
		if resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Fatalf("GET %s: %d %q", u, resp.StatusCode, body)
		}
		if ct, cl := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Length"); ct != "image/png" || cl != strconv.Itoa(len(data)) {
			t.Errorf("Content-Type %q Content-Length %q", ct, cl)
		}
		if _, err := png.Decode(bytes.NewReader(body)); err != nil {
			t.Errorf("not a PNG: %v", err)
		}
	}
	check(f.SourceURL)
	resp, body := e.get(tamper(t, f.SourceURL, "as_attachment", "true"))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Disposition") != "attachment; filename*=UTF-8''chart.png" ||
		resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("as_attachment: %d %v", resp.StatusCode, resp.Header)
	}
	_ = body

	// The upload in a turn; history (a reloaded conversation) lists it with
	// a URL signed when history is read.
	e.chat(chatBody("Count to three", "alice", "files", []map[string]any{
		{"type": "image", "transfer_method": "local_file", "upload_file_id": f.ID}}))
	clock.add(299 * time.Second) // the upload's own URL is about to expire; history's is fresh
	histURL := func() string {
		_, body := e.do(http.MethodGet, "/conversations?user=alice", nil)
		convs := decode[dify.ConversationPage](t, body)
		_, body = e.do(http.MethodGet, "/messages?user=alice&conversation_id="+convs.Data[0].ID, nil)
		page := decode[dify.MessagePage](t, body)
		if len(page.Data) != 1 || len(page.Data[0].MessageFiles) != 1 || page.Data[0].MessageFiles[0].URL == nil {
			t.Fatalf("history: %s", body)
		}
		return *page.Data[0].MessageFiles[0].URL
	}
	u := histURL()
	clock.add(2 * time.Second) // 301 s after upload, 2 s after history
	check(u)
	resp, body = e.get(f.SourceURL)
	e.wantError(resp, body, 404, "not_found", "File not found or signature is invalid")

	u = histURL()
	parsed, _ := url.Parse(u)
	sign := parsed.Query().Get("sign")
	for name, bad := range map[string]string{
		"edited sign":      tamper(t, u, "sign", flip(sign)),
		"edited nonce":     tamper(t, u, "nonce", strings.Repeat("0", 32)),
		"edited timestamp": tamper(t, u, "timestamp", strconv.Itoa(int(clock.now().Unix()+5))),
		"another id":       strings.Replace(u, f.ID, recConv, 1),
	} {
		resp, body := e.get(bad)
		if resp.StatusCode != 404 {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
			continue
		}
		e.wantError(resp, body, 404, "not_found", "File not found or signature is invalid")
	}
	// FilePreviewQuery: sign is required (pydantic, Dify's 400 invalid_param).
	resp, body = e.get(tamper(t, u, "sign", ""))
	e.wantError(resp, body, 400, "invalid_param", "*")
	// Werkzeug's uuid converter: not a UUID is the HTML 404 page.
	resp, body = e.get("/files/not-a-uuid/file-preview?timestamp=1&nonce=n&sign=s")
	wantHTML404(t, resp, body)
	// Expiry: FILES_ACCESS_TIMEOUT (300 s) after the timestamp.
	clock.add(300 * time.Second)
	check(u)
	clock.add(time.Second)
	resp, body = e.get(u)
	e.wantError(resp, body, 404, "not_found", "File not found or signature is invalid")
}

// A replayed tool file: the message_file event's URL, the history's
// message_files URL and the agent_thought's file id all name one file the
// mock serves, behind the mock's own address (the recorded URL is relative);
// without bytes in the cassette it is a synthesized image of the URL's type.
func TestSignedToolFileURLs(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	e := newEnv(t, mockserver.Config{Now: clock.now})
	_, frames := e.chat(chatBody("Use your tools", "bob"))
	var fileURL, fileID string
	var thoughtFiles []any
	for _, f := range frames {
		switch f.event() {
		case "message_file":
			fileURL, fileID = f.str("url"), f.str("id")
		case "agent_thought":
			if l, _ := f.data["message_files"].([]any); len(l) > 0 {
				thoughtFiles = l
			}
		}
	}
	if fileID == "" || fileID == tf1 || !strings.HasPrefix(fileURL, e.ts.URL+"/files/tools/"+fileID+".png?timestamp=") {
		t.Fatalf("message_file id %q url %q", fileID, fileURL)
	}
	if len(thoughtFiles) != 1 || thoughtFiles[0] != fileID {
		t.Errorf("agent_thought message_files %v, want [%s]", thoughtFiles, fileID)
	}
	checkPNG := func(u string) {
		t.Helper()
		resp, body := e.get(u)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", u, resp.StatusCode, body)
		}
		if resp.Header.Get("Content-Type") != "image/png" || resp.Header.Get(mockserver.HeaderSynthesized) != "true" ||
			resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
			t.Errorf("headers %v", resp.Header)
		}
		img, err := png.Decode(bytes.NewReader(body))
		if err != nil || img.Bounds().Dx() == 0 {
			t.Errorf("synthesized PNG does not decode: %v", err)
		}
	}
	checkPNG(fileURL)
	// CORS as on /v1 (Dify's files blueprint has it too), so a front end can fetch() the file.
	req, _ := http.NewRequest(http.MethodGet, fileURL, nil)
	req.Header.Set("Origin", "http://app.example")
	cors, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cors.Body.Close()
	if got := cors.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("tool file Access-Control-Allow-Origin %q, want *", got)
	}

	clock.add(10 * time.Minute) // the stream's URL has expired; history signs anew
	resp, body := e.get(fileURL)
	e.wantError(resp, body, 403, "forbidden", "Invalid request.")
	_, body = e.do(http.MethodGet, "/conversations?user=bob", nil)
	convs := decode[dify.ConversationPage](t, body)
	_, body = e.do(http.MethodGet, "/messages?user=bob&conversation_id="+convs.Data[0].ID, nil)
	page := decode[dify.MessagePage](t, body)
	var hist string
	for _, mf := range page.Data[0].MessageFiles {
		if mf.ID == fileID && mf.URL != nil {
			hist = *mf.URL
		}
	}
	if hist == "" || hist == fileURL {
		t.Fatalf("history message_files: %s", body)
	}
	checkPNG(hist)
	if th := page.Data[0].AgentThoughts; len(th) < 2 || len(th[1].Files) != 1 || th[1].Files[0] != fileID {
		t.Errorf("history agent_thoughts files: %+v", th)
	}
	// as_attachment: Content-Disposition, the Content-Type stays (tool_files.py).
	resp, _ = e.get(hist + "&as_attachment=true")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Disposition") != "attachment; filename*=UTF-8''"+fileID+".png" ||
		resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("as_attachment: %d %v", resp.StatusCode, resp.Header)
	}
	parsed, _ := url.Parse(hist)
	for name, bad := range map[string]string{
		"edited sign":  tamper(t, hist, "sign", flip(parsed.Query().Get("sign"))),
		"edited nonce": tamper(t, hist, "nonce", strings.Repeat("0", 32)),
		"another id":   strings.Replace(hist, fileID, recConv, 1),
	} {
		resp, body := e.get(bad)
		if resp.StatusCode != 403 {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
			continue
		}
		e.wantError(resp, body, 403, "forbidden", "Invalid request.")
	}
	resp, body = e.get("/files/tools/" + fileID + "?timestamp=1&nonce=n&sign=s") // no extension: no route
	wantHTML404(t, resp, body)
	clock.add(301 * time.Second)
	resp, body = e.get(hist)
	e.wantError(resp, body, 403, "forbidden", "Invalid request.")
}

// A cassette that carries a tool file's bytes (a GET /files/tools/…
// interaction) replays them, with the recorded type and name, for a fresh
// id in every replay.
func TestRecordedToolFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app", appFile(t, testParams))
	raw := chatFile(t, cassette.Meta{Description: "a recorded chart", Mode: "agent", Default: true},
		turn{query: "Draw a chart", frames: []frame{
			thought(0, recMsg, th1, 1, "Draw it.", "painter", `{"painter": {}}`, "", tf1),
			// Recorded behind Dify's host: the replay points it at the mock.
			{ms(5), envelope("message_file", recMsg, `"id":"`+tf1+`","type":"image","belongs_to":"assistant","url":"https://dify.example.com/files/tools/`+tf1+`.png?timestamp=1700000000&nonce=abc&sign=xyz="`)},
			delta(ms(10), recMsg, "Done."), closing(ms(11), recMsg, "Done."), end(ms(12), recMsg),
		}})
	file, err := cassette.Decode("chart.yaml", raw)
	if err != nil {
		t.Fatal(err)
	}
	data := pngBytes(t)
	file.Interactions = append(file.Interactions, &vcr.Interaction{
		Request: vcr.Request{Method: http.MethodGet, URL: "https://dify.example.com/files/tools/" + tf1 + ".png?timestamp=1700000000&nonce=abc&sign=xyz="},
		Response: vcr.Response{Code: 200, Status: "200 OK", Body: string(data), Headers: http.Header{
			"Content-Type": {"image/png"}, "Content-Disposition": {`inline; filename="chart.png"`}}},
	})
	enc, err := cassette.Encode(file)
	if err != nil {
		t.Fatal(err)
	}
	write("chart", enc)
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, mockserver.Config{Cassettes: set})
	seen := map[string]bool{}
	for range 2 {
		_, frames := e.chat(chatBody("Draw a chart", "carol"))
		var u, id string
		for _, f := range frames {
			if f.event() == "message_file" {
				u, id = f.str("url"), f.str("id")
			}
		}
		if seen[id] || !strings.HasPrefix(u, e.ts.URL+"/files/tools/"+id+".png?") {
			t.Fatalf("replayed url %q id %q (seen %v)", u, id, seen)
		}
		seen[id] = true
		resp, body := e.get(u)
		if resp.StatusCode != 200 || !bytes.Equal(body, data) || resp.Header.Get("Content-Type") != "image/png" ||
			resp.Header.Get(mockserver.HeaderSynthesized) != "" {
			t.Fatalf("GET %s: %d %v %q", u, resp.StatusCode, resp.Header, body)
		}
		resp, _ = e.get(u + "&as_attachment=1")
		if resp.Header.Get("Content-Disposition") != "attachment; filename*=UTF-8''chart.png" {
			t.Errorf("as_attachment: %v", resp.Header)
		}
	}
}

// A tool file over cassette.MaxToolFileSize is refused when the cassette
// loads, with the interaction named.
func TestToolFileTooLarge(t *testing.T) {
	raw := chatFile(t, cassette.Meta{Mode: "agent"}, turn{query: "q", frames: []frame{end(0, recMsg)}})
	file, err := cassette.Decode("big.yaml", raw)
	if err != nil {
		t.Fatal(err)
	}
	file.Interactions = append(file.Interactions, &vcr.Interaction{
		Request:  vcr.Request{Method: http.MethodGet, URL: "/files/tools/" + tf1 + ".bin"},
		Response: vcr.Response{Code: 200, Body: strings.Repeat("x", cassette.MaxToolFileSize+1)},
	})
	_, err = cassette.ParseChat("big", "big.yaml", file)
	if err == nil || !strings.Contains(err.Error(), "interaction 1") || !strings.Contains(err.Error(), "over the 4194304-byte limit") {
		t.Fatalf("err = %v", err)
	}
}
