package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/appdsl"
)

// watchFailures records, from now on, every request of the page that
// failed (an HTTP status of 400 or more, or a network error) and every
// error in the browser's console; the returned function lists them. The
// live-update stream's end when the test closes the page is not one.
func watchFailures(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	add := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventResponseReceived:
			if ev.Response != nil && ev.Response.Status >= 400 {
				add(fmt.Sprintf("HTTP %d %s", ev.Response.Status, ev.Response.URL))
			}
		case *network.EventLoadingFailed:
			if !ev.Canceled {
				add("request failed: " + ev.ErrorText)
			}
		case *log.EventEntryAdded:
			if ev.Entry != nil && ev.Entry.Level == log.EntryLevelError {
				add("console: " + ev.Entry.Text + " " + ev.Entry.URL)
			}
		case *runtime.EventExceptionThrown:
			if d := ev.ExceptionDetails; d != nil {
				msg := d.Text
				if d.Exception != nil {
					msg += " " + d.Exception.Description
				}
				add("exception: " + msg)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// twoApps is a mock serving two apps described by the DSL files of
// examples/mock-apps: "support" (a New Agent, the built-in cassettes) and
// "helper" (a legacy Agent, the built-in cassettes plus markdown-answer),
// reached by their default keys app-support and app-helper.
func twoApps(t *testing.T) *httptest.Server {
	t.Helper()
	support, _, err := appdsl.Load(filepath.Join("..", "..", "..", "examples", "mock-apps", "support-agent.yml"))
	if err != nil {
		t.Fatal(err)
	}
	helper := builtinPlus(t)
	data, err := appdsl.ReadFile(filepath.Join("..", "..", "..", "examples", "mock-apps", "legacy-helper.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if helper.App, _, err = appdsl.Parse(data, "legacy-helper.yml"); err != nil {
		t.Fatal(err)
	}
	srv, err := mockserver.New(mockserver.Config{Apps: []mockserver.AppConfig{
		{Name: "support", Cassettes: support}, {Name: "helper", Cassettes: helper},
	}})
	if err != nil {
		t.Fatal(err)
	}
	mock := httptest.NewServer(srv)
	t.Cleanup(mock.Close) // after the browser closes (cleanups run last first): its live updates hold a connection
	return mock
}

// chatAs streams a chat with an app's key and returns its status. The
// inputs fill the required form fields of both apps (customer_name of
// support, city of helper).
func chatAs(t *testing.T, base, key, user, query string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat-messages",
		strings.NewReader(fmt.Sprintf(`{"query":%q,"inputs":{"customer_name":"Ann","city":"Lisbon"},"user":%q,"response_mode":"streaming"}`, query, user)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// controlJSON GETs a control API path and decodes its JSON body.
func controlJSON(t *testing.T, base, path string, v any) {
	t.Helper()
	resp, err := http.Get(base + "/__mock/api" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// TestBrowserConsoleApps: with several apps the console has an app
// switcher; each request shows the app it reached; the journal, state and
// cassettes follow the app picked; a rule can target one app; each app's
// state goes out through Export JSON and back in through Import JSON; and
// resetting an end user whose details are open makes no failed request.
func TestBrowserConsoleApps(t *testing.T) {
	chrome := findChrome(t)
	mock := twoApps(t)
	for _, c := range []struct{ key, user, query string }{
		{"app-support", "ann", "Hello"},
		{"app-helper", "ann", "Show me markdown"},
		{"app-helper", "bob", "Hello"},
	} {
		if status := chatAs(t, mock.URL, c.key, c.user, c.query); status != 200 {
			t.Fatalf("chat with %s: %d", c.key, status)
		}
	}

	ctx := startBrowser(t, chrome)
	failures := watchFailures(t, ctx)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	rows := `document.querySelectorAll("#req-list li.req").length`
	tags := `[...document.querySelectorAll("#req-list .app-tag")].map(s => s.textContent).join(",")`
	do(t, ctx, "open console", chromedp.Navigate(mock.URL+"/__mock/"), chromedp.WaitVisible(css("#app-pick")))
	waitText(t, ctx, "#live", "live")
	waitText(t, ctx, "#server-info", "2 apps")
	if got := evalString(t, ctx, `[...document.querySelectorAll("#app-select option")].map(o => o.value + "=" + o.textContent).join("|")`); got != "=All apps|support=support — Support Agent (default)|helper=helper — Legacy Helper" {
		t.Fatalf("app switcher options: %q", got)
	}

	// All apps: every request, each with its app.
	waitTrue(t, ctx, "three requests", rows+` === 3`)
	if got := evalString(t, ctx, tags); got != "helper,helper,support" {
		t.Fatalf("app tags, newest first: %q", got)
	}
	do(t, ctx, "open the support chat", chromedp.Click(css(`#req-list li.req:last-child button`)))
	waitText(t, ctx, "#req-detail dl.facts", "Appsupport")
	screenshots(t)(ctx, "console-apps") // docs/mock/apps.md's picture

	// One app: its requests only, and the pick is in the URL.
	pick := func(name string) {
		t.Helper()
		do(t, ctx, "pick "+name, chromedp.SetValue(css("#app-select"), name))
		eval(t, ctx, `(document.getElementById("app-select").dispatchEvent(new Event("change")), 1)`)
	}
	pick("helper")
	waitTrue(t, ctx, "helper's two requests", rows+` === 2`)
	if got := evalString(t, ctx, tags); got != "helper,helper" {
		t.Fatalf("helper's requests: %q", got)
	}
	if got := evalString(t, ctx, `location.search`); got != "?app=helper" {
		t.Fatalf("location.search = %q", got)
	}

	// State of the app picked: helper has ann and bob, support only ann,
	// and ann's conversation differs.
	do(t, ctx, "state tab", chromedp.Click(css("#tab-state")))
	waitText(t, ctx, "#state-title", "State of app helper")
	waitText(t, ctx, "#state-totals", "2 end users · 2 conversations")
	showUser := func(name string) {
		t.Helper()
		eval(t, ctx, fmt.Sprintf(`([...document.querySelectorAll("#users-table button.link")].find(b => b.textContent === %q).click(), 1)`, name))
	}
	showUser("ann")
	waitText(t, ctx, "#user-detail", "Show me markdown")
	pick("support")
	waitText(t, ctx, "#state-title", "State of app support")
	waitText(t, ctx, "#state-totals", "1 end user · 1 conversation")
	if got := text(t, ctx, "#user-detail"); got != "" {
		t.Fatalf("another app's end user stays open after switching: %q", got)
	}
	showUser("ann")
	waitText(t, ctx, "#user-detail", "Hello")
	if strings.Contains(text(t, ctx, "#user-detail"), "markdown") {
		t.Fatal("support's ann shows helper's conversation")
	}

	// Cassettes of the app picked.
	do(t, ctx, "cassettes tab", chromedp.Click(css("#tab-cassettes")))
	waitText(t, ctx, "#cassettes-title", "Cassettes of app support")
	waitText(t, ctx, "#cassette-list", "tool-use")
	if strings.Contains(text(t, ctx, "#cassette-list"), "markdown-answer") {
		t.Fatal("support's cassettes list helper's markdown-answer")
	}
	pick("helper")
	waitText(t, ctx, "#cassettes-title", "Cassettes of app helper")
	waitText(t, ctx, "#cassette-list", "markdown-answer")

	// A rule for one app: support's next chat fails, helper's does not.
	do(t, ctx, "rule for support",
		chromedp.Click(css("#tab-rules")),
		chromedp.WaitVisible(css("#rule-form")),
		chromedp.SetValue(css("#rule-app"), "support"),
		chromedp.SetValue(css("#rule-fault"), "status:503"),
		chromedp.SetValue(css("#rule-times"), "1"),
		chromedp.Click(css("#rule-add")))
	waitText(t, ctx, "#rules-table", "app support")
	if status := chatAs(t, mock.URL, "app-helper", "cat", "Hello"); status != 200 {
		t.Fatalf("helper's chat under support's rule: %d", status)
	}
	if status := chatAs(t, mock.URL, "app-support", "cat", "Hello"); status != 503 {
		t.Fatalf("support's chat under its rule: %d", status)
	}
	waitText(t, ctx, "#rules-table", "No rules")

	// Export JSON, reset and Import JSON, one app after the other: each app
	// gets back exactly its own state.
	do(t, ctx, "state tab again", chromedp.Click(css("#tab-state")))
	dir := t.TempDir()
	before := map[string]json.RawMessage{}
	for _, app := range []string{"support", "helper"} {
		pick(app)
		waitText(t, ctx, "#state-title", "State of app "+app)
		// The link the Export JSON button is, fetched as the browser would.
		if href := evalString(t, ctx, `document.getElementById("state-export").href`); !strings.HasSuffix(href, "/__mock/api/state/export?download=1&app="+app) {
			t.Fatalf("Export JSON of %s links to %s", app, href)
		}
		exported := awaitString(t, ctx, `fetch(document.getElementById("state-export").href).then(r => r.text())`)
		if err := os.WriteFile(filepath.Join(dir, app+".json"), []byte(exported), 0o600); err != nil {
			t.Fatal(err)
		}
		var snap json.RawMessage
		controlJSON(t, mock.URL, "/state/export?app="+app, &snap)
		before[app] = snap
	}
	for _, app := range []string{"support", "helper"} {
		pick(app)
		waitText(t, ctx, "#state-title", "State of app "+app)
		do(t, ctx, "reset "+app, chromedp.Click(css("#state-reset")))
		waitText(t, ctx, "#state-msg", "All state of app "+app+" was reset.")
		waitText(t, ctx, "#state-totals", "0 end users")
	}
	for _, app := range []string{"support", "helper"} {
		pick(app)
		waitText(t, ctx, "#state-title", "State of app "+app)
		do(t, ctx, "import "+app, chromedp.SetUploadFiles(css("#state-import"), []string{filepath.Join(dir, app+".json")}))
		waitText(t, ctx, "#state-msg", "Imported "+app+".json into app "+app+".")
	}
	for app, want := range before {
		var got json.RawMessage
		controlJSON(t, mock.URL, "/state/export?app="+app, &got)
		if !sameState(got, want) {
			t.Fatalf("%s's state after the round trip:\n%s\nbefore:\n%s", app, got, want)
		}
	}

	// Resetting the end user whose details are open: the details empty,
	// and nothing asks for the user that is gone.
	pick("helper")
	waitText(t, ctx, "#state-totals", "3 end users")
	showUser("ann")
	waitText(t, ctx, "#user-detail", "Show me markdown")
	do(t, ctx, "reset ann", chromedp.Click(css(`#users-table button[aria-label="Reset end user ann"]`)))
	waitText(t, ctx, "#state-msg", "Reset end user ann.")
	waitText(t, ctx, "#user-detail", "No conversations or uploads")
	waitText(t, ctx, "#state-totals", "2 end users")
	var support json.RawMessage
	controlJSON(t, mock.URL, "/state/export?app=support", &support)
	if !sameState(support, before["support"]) {
		t.Fatalf("resetting helper's ann changed support's state:\n%s", support)
	}
	// A request of the page ends after its event: one more round trip to
	// the server and back lets every one of them arrive.
	awaitString(t, ctx, `fetch("/__mock/api/state?app=helper").then(r => r.text())`)
	if f := failures(); len(f) != 0 {
		t.Fatalf("the console made failed requests or logged errors:\n%s", strings.Join(f, "\n"))
	}

	// The address opens the app and the tab it names: helper's state, not
	// the default app's that the page could load before it knows the apps.
	do(t, ctx, "open ?app=helper#state", chromedp.Navigate(mock.URL+"/__mock/?app=helper#state"), chromedp.WaitVisible(css("#app-pick")))
	waitText(t, ctx, "#state-title", "State of app helper")
	waitText(t, ctx, "#state-totals", "2 end users")
	if got := evalString(t, ctx, `document.getElementById("app-select").value + " " + [...document.querySelectorAll("#users-table button.link")].map(b => b.textContent).join(",")`); got != "helper bob,cat" {
		t.Fatalf("?app=helper#state shows %q", got)
	}
}

// awaitString evaluates an expression whose value is a promise of a string.
func awaitString(t *testing.T, c context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(c, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return s
}

// sameState reports whether two state exports hold the same state (when
// each was exported aside).
func sameState(a, b []byte) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	delete(x, "exported_at")
	delete(y, "exported_at")
	return reflect.DeepEqual(x, y)
}
