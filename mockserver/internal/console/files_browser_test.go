package console_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/author"
)

// historyPage is a chat front end on another origin reloading a
// conversation, as langgenius/webapp-conversation does: it lists the
// conversation's messages and shows every message file as an <img>, then
// reports each image's natural width (0: a broken box).
const historyPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>history</title></head><body>
<p id="status">loading</p><div id="files"></div>
<script>
const base = %q, key = "Bearer app-browser-test", user = "browser-user";
(async () => {
  const st = document.getElementById("status");
  try {
    const h = {headers: {"Authorization": key}};
    const convs = await (await fetch(base + "/v1/conversations?user=" + user, h)).json();
    const msgs = await (await fetch(base + "/v1/messages?user=" + user + "&conversation_id=" + convs.data[0].id, h)).json();
    const files = msgs.data.flatMap(m => m.message_files);
    const results = await Promise.all(files.map(f => new Promise(done => {
      const img = document.createElement("img");
      img.alt = f.belongs_to + " " + f.id;
      img.onload = () => done({belongs_to: f.belongs_to, url: f.url, width: img.naturalWidth});
      img.onerror = () => done({belongs_to: f.belongs_to, url: f.url, width: 0});
      img.src = f.url;
      document.getElementById("files").appendChild(img);
    })));
    // A download button fetch()es the file: the files routes answer with CORS.
    const blob = await (await fetch(files[1].url)).blob();
    results.push({belongs_to: "fetch", url: files[1].url, width: blob.size});
    st.textContent = JSON.stringify(results);
  } catch (e) { st.textContent = "failed: " + e; }
})();
</script></body></html>`

// The files scenario: a tool turn handing out an attached PNG and
// synthesized images of every type the mock makes up.
const filesScenario = `name: browser-files
default: true
query: Draw it
steps:
  - tool: painter
    observation: drawn
  - message_file: {path: attached.png}
  - message_file: {extension: png}
  - message_file: {extension: jpg}
  - message_file: {extension: gif}
  - message_file: {extension: webp}
  - answer: Here they are.
`

func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range w {
		img.Set(i, i%h, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBrowserHistoryImages: an uploaded image and tool file images, shown
// by a front end from a reloaded conversation's history URLs, decode in
// Chromium.
func TestBrowserHistoryImages(t *testing.T) {
	chrome := findChrome(t)
	dir := t.TempDir()
	attached := testPNG(t, 12, 6)
	if err := os.WriteFile(filepath.Join(dir, "attached.png"), attached, 0o644); err != nil {
		t.Fatal(err)
	}
	name, out, err := author.GenerateBytes(filepath.Join(dir, "browser-files.yaml"), []byte(filesScenario), author.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cdir := filepath.Join(dir, "cassettes")
	if err := os.Mkdir(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cdir, name+".yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := cassette.LoadDir(cdir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mockserver.New(mockserver.Config{Cassettes: set, Speed: 50})
	if err != nil {
		t.Fatal(err)
	}
	mock := httptest.NewServer(srv)
	t.Cleanup(mock.Close)

	// Upload an image and send it in a turn, as the front end would have
	// before the reload.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("user", "browser-user")
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="photo.png"`)
	h.Set("Content-Type", "image/png")
	pw, _ := mw.CreatePart(h)
	_, _ = pw.Write(testPNG(t, 20, 10))
	_ = mw.Close()
	var up struct{ ID string }
	call(t, mock.URL+"/v1/files/upload", mw.FormDataContentType(), &body, http.StatusCreated, &up)
	chat, _ := json.Marshal(map[string]any{"query": "Draw it", "inputs": map[string]any{}, "user": "browser-user",
		"response_mode": "streaming", "files": []map[string]any{{"type": "image", "transfer_method": "local_file", "upload_file_id": up.ID}}})
	call(t, mock.URL+"/v1/chat-messages", "application/json", bytes.NewReader(chat), http.StatusOK, nil)

	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, historyPage, mock.URL)
	}))
	t.Cleanup(app.Close)
	ctx := startBrowser(t, chrome)
	do(t, ctx, "open the front end", chromedp.Navigate(app.URL))
	waitTrue(t, ctx, "history loaded", `document.getElementById("status").textContent.startsWith("[")`)
	var results []struct {
		BelongsTo string `json:"belongs_to"`
		URL       string `json:"url"`
		Width     int    `json:"width"`
	}
	if err := json.Unmarshal([]byte(text(t, ctx, "#status")), &results); err != nil {
		t.Fatalf("status %q: %v", text(t, ctx, "#status"), err)
	}
	user, tools := 0, 0
	for _, r := range results {
		if r.Width == 0 {
			t.Errorf("%s image %s did not decode", r.BelongsTo, r.URL)
		}
		switch r.BelongsTo {
		case "fetch":
			continue
		case "user":
			user++
			if r.Width != 20 {
				t.Errorf("uploaded image width %d, want 20", r.Width)
			}
		default:
			tools++
		}
	}
	if user != 1 || tools != 5 {
		t.Fatalf("history shows %d uploaded and %d tool images, want 1 and 5: %+v", user, tools, results)
	}
	// The attached tool file is the scenario's own image.
	if eval(t, ctx, `[...document.images].filter(i => i.naturalWidth === 12 && i.naturalHeight === 6).length`) != 1 {
		t.Error("the attached tool file is not the scenario's 12×6 image")
	}
}

// call sends a request with the test key and decodes a JSON answer into v
// (a stream is read to its end).
func call(t *testing.T, url, contentType string, body io.Reader, want int, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, body)
	req.Header.Set("Authorization", "Bearer app-browser-test")
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want || strings.Contains(string(data), `"event": "error"`) {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, data)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
	}
}
