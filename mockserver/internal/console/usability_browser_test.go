package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/author"
)

// markdownScenario answers with Markdown and raw HTML that must stay text.
const markdownScenario = `name: markdown-answer
description: Synthesized for the console's browser test - an answer in Markdown with raw HTML in it.
query: Show me markdown
transcript: Show me markdown
steps:
  - answer: "## Plan\n\n**Day 1**: the *old town*, ` + "`" + `tram 28` + "`" + `.\n\n- Alfama\n- Belém\n\n<img src=x onerror=\"window.__injected=1\"> [site](https://example.com/lisbon) [bad](javascript:window.__injected=2)"
`

// builtinPlus is the built-in cassettes plus the markdown one.
func builtinPlus(t *testing.T) *cassette.Set {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(cassettes.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || strings.Contains(p, "/") {
			return err
		}
		data, err := fs.ReadFile(cassettes.FS(), p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	name, data, err := author.GenerateBytes("markdown-answer.yaml", []byte(markdownScenario), author.Options{Source: "the console browser test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestBrowserConsoleUsability: what the console does for keyboard users and
// long sessions — one Tab stop for the request list, focus kept after Enter,
// preflights hidden on request, in-flight rows with user and status, a
// confirmed "Clear journal", state details that follow a reset, notices that
// go with the next action, plurals, a filter wide enough for its
// placeholder, and answers rendered as Markdown without running HTML.
func TestBrowserConsoleUsability(t *testing.T) {
	chrome := findChrome(t)
	srv, err := mockserver.New(mockserver.Config{Cassettes: builtinPlus(t)})
	if err != nil {
		t.Fatal(err)
	}
	mock := httptest.NewServer(srv)
	t.Cleanup(mock.Close) // after the browser closes (cleanups run last first): its live updates hold a connection
	chat := func(user, query string, header http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, mock.URL+"/v1/chat-messages",
			strings.NewReader(fmt.Sprintf(`{"query":%q,"inputs":{},"user":%q,"response_mode":"streaming"}`, query, user)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer app-browser-test")
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	chat("ann", "Hello", nil)
	chat("ann", "Hello", nil)
	chat("bob", "Show me markdown", nil)
	pre, _ := http.NewRequest(http.MethodOptions, mock.URL+"/v1/chat-messages", nil)
	pre.Header.Set("Origin", "http://localhost:3000")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	if resp, err := http.DefaultClient.Do(pre); err == nil {
		resp.Body.Close()
	}

	ctx := startBrowser(t, chrome)
	failures := watchFailures(t, ctx)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	do(t, ctx, "open console", chromedp.Navigate(mock.URL+"/__mock/"), chromedp.WaitVisible(css("#tab-requests")))
	waitText(t, ctx, "#live", "live")
	waitTrue(t, ctx, "three chats listed", `document.querySelectorAll("#req-list li.req").length === 3`)
	// One app: no app switcher, no app on the requests (docs/mock/apps.md).
	waitText(t, ctx, "#server-info", "mode ")
	if n := eval(t, ctx, `(document.getElementById("app-pick").hidden ? 0 : 1) + document.querySelectorAll(".app-tag").length`); n != 0 {
		t.Fatal("the console of one app shows an app switcher or app tags")
	}

	// Preflights: hidden by default and counted; shown on request.
	waitText(t, ctx, "#req-hidden", "1 CORS preflight hidden")
	if n := eval(t, ctx, `[...document.querySelectorAll("#req-list li.req")].filter(li => li.textContent.includes("OPTIONS")).length`); n != 0 {
		t.Fatalf("%d OPTIONS rows shown by default", n)
	}
	do(t, ctx, "show preflights", chromedp.Click(css("#req-preflight")))
	waitTrue(t, ctx, "the preflight row", `[...document.querySelectorAll("#req-list li.req")].some(li => li.textContent.includes("OPTIONS"))`)
	do(t, ctx, "hide preflights", chromedp.Click(css("#req-preflight")))
	waitTrue(t, ctx, "three rows again", `document.querySelectorAll("#req-list li.req").length === 3`)

	// The filter shows its whole placeholder.
	if n := eval(t, ctx, `(() => { const i = document.getElementById("req-filter"), s = getComputedStyle(i);
		const c = document.createElement("canvas").getContext("2d"); c.font = s.font;
		const room = i.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
		return Math.ceil(c.measureText(i.placeholder).width) <= room ? 1 : 0; })()`); n != 1 {
		t.Fatal("the filter's placeholder does not fit its input")
	}

	// One Tab stop for the list; arrows move; Enter opens and keeps focus
	// on the row, so the arrows go on working.
	if n := eval(t, ctx, `document.querySelectorAll('#req-list button[tabindex="0"]').length`); n != 1 {
		t.Fatalf("%d rows are Tab stops, want 1", n)
	}
	if n := eval(t, ctx, `document.querySelectorAll('#req-list button[tabindex="-1"]').length`); n != 2 {
		t.Fatalf("%d rows out of the Tab order, want 2", n)
	}
	do(t, ctx, "focus the list", chromedp.Focus(css(`#req-list button[tabindex="0"]`)), chromedp.KeyEvent(kb.ArrowDown))
	second := evalString(t, ctx, `document.activeElement.dataset.id || ""`)
	if second == "" || second != evalString(t, ctx, `document.querySelectorAll("#req-list button")[1].dataset.id`) {
		t.Fatalf("ArrowDown focused %q, not the second row", second)
	}
	do(t, ctx, "open with Enter", chromedp.KeyEvent(kb.Enter))
	waitText(t, ctx, "#req-detail", "Request "+second)
	if id := evalString(t, ctx, `document.activeElement.closest("#req-list") ? document.activeElement.dataset.id : document.activeElement.tagName`); id != second {
		t.Fatalf("after Enter the focus is on %q, want the opened row %s", id, second)
	}
	do(t, ctx, "arrow after Enter", chromedp.KeyEvent(kb.ArrowUp))
	if first := evalString(t, ctx, `document.activeElement.dataset.id || ""`); first != evalString(t, ctx, `document.querySelectorAll("#req-list button")[0].dataset.id`) {
		t.Fatalf("ArrowUp after Enter focused %q", first)
	}
	if n := eval(t, ctx, `document.querySelectorAll('#req-list button[tabindex="0"]').length`); n != 1 {
		t.Fatalf("%d Tab stops after moving", n)
	}

	// Markdown answers: elements, not HTML; only http(s) links.
	do(t, ctx, "open the markdown chat", chromedp.Click(css(`#req-list li.req:first-child button`)))
	waitText(t, ctx, "#req-detail [data-role=answer]", "Day 1")
	if got := evalString(t, ctx, `(() => { const a = document.querySelector("#req-detail [data-role=answer]");
		return [a.querySelectorAll("h4, h3").length, a.querySelectorAll("strong").length, a.querySelectorAll("em").length,
			a.querySelectorAll("code").length, a.querySelectorAll("li").length, a.querySelectorAll("img").length,
			a.querySelectorAll("a").length, (a.querySelector("a") || {}).href || ""].join(","); })()`); got != "1,1,1,1,2,0,1,https://example.com/lisbon" {
		t.Fatalf("rendered answer (headings,strong,em,code,li,img,links,href) = %s", got)
	}
	if !strings.Contains(text(t, ctx, "#req-detail [data-role=answer]"), `<img src=x onerror="window.__injected=1">`) {
		t.Fatal("the raw HTML is not shown as text")
	}
	if n := eval(t, ctx, `window.__injected ? 1 : 0`); n != 0 {
		t.Fatal("HTML in the answer ran")
	}

	// A request in flight: status and user in the row and the journal API.
	slow, cancelSlow := context.WithCancel(context.Background())
	defer cancelSlow()
	go func() {
		req, _ := http.NewRequestWithContext(slow, http.MethodPost, mock.URL+"/v1/chat-messages",
			strings.NewReader(`{"query":"What will three nights in Lisbon cost for two?","inputs":{},"user":"slowpoke","response_mode":"streaming"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer app-browser-test")
		req.Header.Set("X-Dify-Mock-Speed", "0.01")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	waitTrue(t, ctx, "the in-flight row", `[...document.querySelectorAll("#req-list li.req")].some(li => li.textContent.includes("user slowpoke") && li.textContent.includes("200…") && li.textContent.includes("in flight"))`)
	var list struct {
		Data []struct {
			User   string          `json:"user"`
			Status int             `json:"status"`
			Done   bool            `json:"done"`
			Body   json.RawMessage `json:"body"`
		} `json:"data"`
	}
	resp, err := http.Get(mock.URL + "/__mock/api/journal?user=slowpoke")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Data) != 1 || list.Data[0].Done || list.Data[0].Status != 200 || !strings.Contains(string(list.Data[0].Body), "Lisbon") {
		t.Fatalf("journal API for the request in flight: %+v", list.Data)
	}
	cancelSlow()
	waitTrue(t, ctx, "the slow request ended", `![...document.querySelectorAll("#req-list li.req")].some(li => li.textContent.includes("in flight"))`)

	// "Clear journal" asks first; Enter lands on Cancel.
	rows := eval(t, ctx, `document.querySelectorAll("#req-list li.req").length`)
	do(t, ctx, "Enter on Clear journal", chromedp.Focus(css("#req-clear")), chromedp.KeyEvent(kb.Enter))
	waitTrue(t, ctx, "the confirmation", `!document.getElementById("req-clear-confirm").hidden && document.activeElement.id === "req-clear-no"`)
	do(t, ctx, "Enter again", chromedp.KeyEvent(kb.Enter))
	waitTrue(t, ctx, "cancelled", `document.getElementById("req-clear-confirm").hidden`)
	if n := journalLen(t, mock.URL); n == 0 || eval(t, ctx, `document.querySelectorAll("#req-list li.req").length`) != rows {
		t.Fatalf("Enter cleared the journal (%d entries left)", n)
	}
	do(t, ctx, "confirm clearing", chromedp.Click(css("#req-clear")), chromedp.Click(css("#req-clear-yes")))
	waitText(t, ctx, "#req-detail", "Journal cleared.")
	if n := journalLen(t, mock.URL); n != 0 {
		t.Fatalf("%d entries after a confirmed clear", n)
	}

	// State: plurals; a reset user's data leaves the open details; the
	// notice goes with the next action.
	do(t, ctx, "state tab", chromedp.Click(css("#tab-state")))
	waitText(t, ctx, "#state-totals", "3 end users · ")
	showUser := func(name string) {
		t.Helper()
		eval(t, ctx, fmt.Sprintf(`([...document.querySelectorAll("#users-table button.link")].find(b => b.textContent === %q).click(), 1)`, name))
	}
	showUser("bob")
	waitText(t, ctx, "#user-detail", "— 1 message (")
	showUser("ann")
	waitText(t, ctx, "#user-detail", "End user ann")
	waitText(t, ctx, "#user-detail", "Hello")
	do(t, ctx, "reset ann", chromedp.Click(css(`#users-table button[aria-label="Reset end user ann"]`)))
	waitText(t, ctx, "#state-msg", "Reset end user ann.")
	waitText(t, ctx, "#user-detail", "No conversations or uploads")
	if strings.Contains(text(t, ctx, "#user-detail"), "— 1 message") {
		t.Fatalf("ann's deleted conversations are still shown: %q", text(t, ctx, "#user-detail"))
	}
	showUser("bob")
	waitText(t, ctx, "#user-detail", "End user bob")
	if msg := text(t, ctx, "#state-msg"); msg != "" {
		t.Fatalf("the reset notice outlived the next action: %q", msg)
	}
	// Resetting ann while her details were open asked for no user that was
	// gone: no failed request, no error in the browser's console. (A last
	// round trip lets the page's requests report first.)
	awaitString(t, ctx, `fetch("/__mock/api/state").then(r => r.text())`)
	if f := failures(); len(f) != 0 {
		t.Fatalf("the console made failed requests or logged errors:\n%s", strings.Join(f, "\n"))
	}
}

func journalLen(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/__mock/api/journal")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&list)
	return len(list.Data)
}
