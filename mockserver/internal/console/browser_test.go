package console_test

// Browser tests: the console in a real headless Chromium, driven with
// chromedp. They run when DIFY_MOCK_BROWSER_TEST=1 (the `browser` stage of
// scripts/test.sh sets it after scripts/ensure-chromium.sh found or installed
// Chromium; CHROME_PATH names the binary). DIFY_MOCK_SCREENSHOTS=1 also
// rewrites the screenshots in docs/mock/ that docs/mock/console.md shows.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// findChrome returns the browser to drive, skipping the test when browser
// tests are not asked for.
func findChrome(t *testing.T) string {
	t.Helper()
	if os.Getenv("DIFY_MOCK_BROWSER_TEST") != "1" {
		t.Skip("browser test: set DIFY_MOCK_BROWSER_TEST=1 (make test's browser stage does, after scripts/ensure-chromium.sh)")
	}
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("DIFY_MOCK_BROWSER_TEST=1 but no Chromium found (run scripts/ensure-chromium.sh or set CHROME_PATH)")
	return ""
}

// appPage is a minimal frontend on another origin: it streams a chat from
// the mock with fetch and shows the status and the raw stream.
const appPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>demo app</title></head><body>
<label>Query <input id="q" value="What will three nights in Lisbon cost for two?"></label>
<button id="send">Send</button>
<p id="status">idle</p><pre id="out"></pre>
<script>
const base = %q;
document.getElementById("send").onclick = async () => {
  const st = document.getElementById("status"), out = document.getElementById("out");
  st.textContent = "sending"; out.textContent = "";
  try {
    const r = await fetch(base + "/v1/chat-messages", {method: "POST",
      headers: {"Authorization": "Bearer app-browser-test", "Content-Type": "application/json"},
      body: JSON.stringify({query: document.getElementById("q").value, inputs: {}, user: "browser-user", response_mode: "streaming"})});
    const reader = r.body.getReader(); const dec = new TextDecoder();
    for (;;) { const {done, value} = await reader.read(); if (done) break; out.textContent += dec.decode(value); }
    st.textContent = r.status + " done";
  } catch (e) { st.textContent = "failed: " + e; }
};
</script></body></html>`

func TestBrowserConsole(t *testing.T) {
	chrome := findChrome(t)
	srv, err := mockserver.New(mockserver.Config{Speed: 4})
	if err != nil {
		t.Fatal(err)
	}
	mock := httptest.NewServer(srv)
	t.Cleanup(mock.Close) // after the browser closes (cleanups run last first): its live updates hold a connection
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, appPage, mock.URL)
	}))
	t.Cleanup(app.Close)

	ctx := startBrowser(t, chrome)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	shot := screenshots(t)

	// Open the console; it connects to the live updates.
	do(t, ctx, "open console", chromedp.Navigate(mock.URL+"/__mock/"), chromedp.WaitVisible(css("#tab-requests")))
	waitText(t, ctx, "#live", "live")
	appCtx, cancelApp := chromedp.NewContext(ctx) // a second tab of the same browser: the frontend
	defer cancelApp()

	// A chat from the app on another origin appears with its frames.
	do(t, appCtx, "open app", chromedp.Navigate(app.URL), chromedp.Click(css("#send")))
	waitText(t, appCtx, "#status", "200 done")
	stream := text(t, appCtx, "#out")
	waitText(t, ctx, "#req-list li.req", "POST /v1/chat-messages")
	waitText(t, ctx, "#req-list li.req", "frames")
	do(t, ctx, "open the request", chromedp.Click(css("#req-list li.req button")))
	waitText(t, ctx, "#req-detail", "Timeline")
	circles := eval(t, ctx, `document.querySelectorAll("#req-detail svg.timeline circle.actual").length`)
	frames := eval(t, ctx, `document.querySelectorAll("#req-detail table.frames tbody tr").length`)
	if want := strings.Count(stream, "\n\n"); circles != want || frames != want || want < 5 {
		t.Fatalf("timeline shows %d frames, table %d; the app received %d", circles, frames, want)
	}
	// "Match": how the turn was picked (docs/mock/hybrid.md), here its exact query.
	if facts := text(t, ctx, "#req-detail dl.facts"); !strings.Contains(facts, app.URL) || !strings.Contains(facts, "tool-use") || !strings.Contains(facts, "Matchexact") {
		t.Fatalf("request facts: %q", facts)
	}
	if answer := text(t, ctx, "#req-detail [data-role=answer]"); !strings.Contains(answer, "Lisbon") {
		t.Fatalf("chat view answer: %q", answer)
	}
	if eval(t, ctx, `document.querySelectorAll("#req-detail .bubble.thought .tool").length`) == 0 {
		t.Fatal("the chat view shows no tool call for the tool-use cassette")
	}
	shot(ctx, "console-requests")

	// Keyboard: arrows move between tabs.
	do(t, ctx, "keyboard tabs", chromedp.Focus(css("#tab-requests")), chromedp.KeyEvent(kb.ArrowRight))
	if sel, err := chromedp.Run(ctx, chromedp.AttributeValue(css("#tab-rules"), "aria-selected")); err != nil || sel.Value != "true" {
		t.Fatalf("ArrowRight on the first tab did not select the Rules tab (%v)", err)
	}

	// A fault rule set in the UI makes the next chat fail with 429.
	do(t, ctx, "add rule",
		chromedp.WaitVisible(css("#rule-form")),
		chromedp.SetValue(css("#rule-fault"), "status:429"),
		chromedp.SetValue(css("#rule-times"), "1"),
		chromedp.Click(css("#rule-add")))
	waitText(t, ctx, "#rule-msg", "Added rule-1")
	waitText(t, ctx, "#rules-table", "status:429")
	shot(ctx, "console-rules")
	do(t, appCtx, "send again", chromedp.Click(css("#send")))
	waitText(t, appCtx, "#status", "429 done")
	waitText(t, ctx, "#rules-table", "No rules")
	do(t, ctx, "back to requests", chromedp.Click(css("#tab-requests")))
	waitText(t, ctx, "#req-list li.req:first-child", "429")
	waitText(t, ctx, "#req-list li.req:first-child", "fault status:429")

	// Stop mid-stream: a rule that resets the connection after 3 frames.
	do(t, ctx, "add reset rule",
		chromedp.Click(css("#tab-rules")),
		chromedp.WaitVisible(css("#rule-form")),
		chromedp.SetValue(css("#rule-fault"), "reset-after:3"),
		chromedp.SetValue(css("#rule-times"), "1"),
		chromedp.Click(css("#rule-add")))
	waitText(t, ctx, "#rule-msg", "Added rule-2")
	do(t, appCtx, "send a third time", chromedp.Click(css("#send")))
	waitText(t, appCtx, "#status", "failed")
	if got := strings.Count(text(t, appCtx, "#out"), "\n\n"); got != 3 {
		t.Fatalf("the app received %d frames before the reset, want 3", got)
	}
	do(t, ctx, "requests again", chromedp.Click(css("#tab-requests")))
	waitText(t, ctx, "#req-list li.req:first-child", "fault reset-after:3")
	waitText(t, ctx, "#req-list li.req:first-child", "3 frames")

	// State: the chat's end user is listed; reset empties the state.
	do(t, ctx, "state tab", chromedp.Click(css("#tab-state")))
	waitText(t, ctx, "#state-totals", "1 end user · 2 conversations · 2 messages")
	do(t, ctx, "show user", chromedp.Click(css("#users-table tbody button.link")))
	waitText(t, ctx, "#user-detail", "End user browser-user")
	shot(ctx, "console-state")
	do(t, ctx, "reset", chromedp.Click(css("#state-reset")))
	waitText(t, ctx, "#state-msg", "All state was reset.")
	waitText(t, ctx, "#state-totals", "0 end users")
	resp, err := http.Get(mock.URL + "/__mock/api/state")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct{ Totals map[string]int }
	_ = json.NewDecoder(resp.Body).Decode(&sum)
	resp.Body.Close()
	if sum.Totals["end_users"] != 0 || sum.Totals["conversations"] != 0 {
		t.Fatalf("state after the UI reset: %+v", sum.Totals)
	}

	// The cassette player plays a cassette in the page.
	do(t, ctx, "player",
		chromedp.Click(css("#tab-cassettes")),
		chromedp.WaitVisible(css("#player-form")),
		chromedp.SetValue(css("#player-cassette"), "tool-use"),
		chromedp.SetValue(css("#player-speed"), "5"),
		chromedp.Click(css("#player-play")))
	waitText(t, ctx, "#player-out [data-role=answer]", "Lisbon")
	shot(ctx, "console-player")
}

// startBrowser starts a headless Chromium for the test and returns its first
// tab's context (bounded to 8 minutes: the machines that run it are often loaded).
func startBrowser(t *testing.T, chrome string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 8*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	return ctx
}

func do(t *testing.T, c context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(c, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval(t *testing.T, c context.Context, expr string) int {
	t.Helper()
	n, err := chromedp.Run(c, chromedp.Evaluate[int](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return n
}

func evalString(t *testing.T, c context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(c, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return s
}

func text(t *testing.T, c context.Context, sel string) string {
	t.Helper()
	return evalString(t, c, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
}

// waitText waits (polling in the page) until sel's text contains want.
func waitText(t *testing.T, c context.Context, sel, want string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const n = document.querySelector(%q); return !!n && n.textContent.includes(%q); })()`, sel, want)
	if _, err := chromedp.Run(c, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("%s: want text containing %q, got %q (%v)", sel, want, text(t, c, sel), err)
	}
}

// waitTrue waits until the expression is true in the page.
func waitTrue(t *testing.T, c context.Context, what, js string) {
	t.Helper()
	if _, err := chromedp.Run(c, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// screenshots returns a function that saves a PNG of the page into
// docs/mock/ when DIFY_MOCK_SCREENSHOTS=1, and does nothing otherwise.
func screenshots(t *testing.T) func(ctx context.Context, name string) {
	if os.Getenv("DIFY_MOCK_SCREENSHOTS") != "1" {
		return func(context.Context, string) {}
	}
	dir := filepath.Join("..", "..", "..", "docs", "mock")
	return func(ctx context.Context, name string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.scrollTo(0, 0), true`)); err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// With serve --journal=false the console says the journal is off where the
// requests would be listed, and its clear button is disabled; a chat still
// streams.
func TestBrowserConsoleJournalOff(t *testing.T) {
	chrome := findChrome(t)
	srv, err := mockserver.New(mockserver.Config{Speed: 4, Control: mockserver.ControlConfig{NoJournal: true}})
	if err != nil {
		t.Fatal(err)
	}
	mock := httptest.NewServer(srv)
	t.Cleanup(mock.Close)
	ctx := startBrowser(t, chrome)
	do(t, ctx, "open console", chromedp.Navigate(mock.URL+"/__mock/"), chromedp.WaitVisible(chromedp.CSS("#tab-requests")))
	waitText(t, ctx, "#live", "live")
	waitText(t, ctx, "#req-empty", "The request journal is off (serve --journal=false)")
	waitText(t, ctx, "#server-info", "journal off")
	if disabled := eval(t, ctx, `document.getElementById("req-clear").disabled ? 1 : 0`); disabled != 1 {
		t.Fatal("the Clear journal button is enabled with the journal off")
	}
	if n := eval(t, ctx, `document.querySelectorAll("#req-list li.req").length`); n != 0 {
		t.Fatalf("%d requests listed with the journal off", n)
	}
}
