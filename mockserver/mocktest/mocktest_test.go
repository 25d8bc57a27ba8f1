package mocktest_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/mocktest"
)

func chat(t *testing.T, baseURL, key, query string) (*dify.ChatReply, error) {
	t.Helper()
	client, err := dify.NewClient(baseURL, key, dify.WithUser("mocktest"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := client.SendChatMessage(ctx, dify.ChatRequest{Query: query})
	if err != nil {
		return nil, err
	}
	return dify.Collect(stream)
}

func TestStartServesTheBuiltInCassettes(t *testing.T) {
	m := mocktest.Start(t)
	if !strings.HasPrefix(m.URL, "http://127.0.0.1:") || m.BaseURL != m.URL+"/v1" {
		t.Fatalf("URL %q, BaseURL %q: want a loopback root and root+/v1", m.URL, m.BaseURL)
	}
	turn, err := chat(t, m.BaseURL, "app-test", "Hello")
	if err != nil {
		t.Fatal(err)
	}
	if !turn.Completed || !strings.Contains(turn.Answer, "Travel Helper") {
		t.Fatalf("turn completed=%v answer=%q: want the built-in plain-answer turn", turn.Completed, turn.Answer)
	}
	// State is the mock's: the finished turn is listed.
	client, _ := dify.NewClient(m.BaseURL, "app-test", dify.WithUser("mocktest"))
	page, err := client.ListMessages(context.Background(), dify.ListMessagesParams{ConversationID: turn.ConversationID})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].Answer != turn.Answer {
		t.Fatalf("stored messages %+v: want the one streamed turn", page.Data)
	}
}

func TestStartStopsTheServerWhenTheTestEnds(t *testing.T) {
	var url string
	t.Run("inner", func(t *testing.T) {
		url = mocktest.Start(t).URL
		resp, err := http.Get(url + "/v1/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/: %d", resp.StatusCode)
		}
	})
	client := &http.Client{Timeout: 5 * time.Second}
	if resp, err := client.Get(url + "/v1/"); err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s/v1/ after the test ended: HTTP %d, want a refused connection", url, resp.StatusCode)
	}
}

func TestCloseEndsInFlightStreams(t *testing.T) {
	// At recorded timing the default turn takes seconds; Close must not wait
	// for it but end it with the shutdown frame.
	m, err := mocktest.New(mocktest.WithSpeed(1))
	if err != nil {
		t.Fatal(err)
	}
	client, _ := dify.NewClient(m.BaseURL, "app-test")
	stream, err := client.SendChatMessage(context.Background(), dify.ChatRequest{Query: "Hello", User: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Next(); err != nil { // the stream is live
		t.Fatal(err)
	}
	start := time.Now()
	m.Close()
	m.Close() // twice is fine
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("Close took %v", took)
	}
	_, err = dify.Collect(stream)
	var apiErr *dify.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "internal_server_error" || !strings.Contains(apiErr.Message, "shutting down") {
		t.Fatalf("stream after Close: %v; want the shutdown error frame", err)
	}
}

func TestOptionsReachTheServer(t *testing.T) {
	t.Run("api keys", func(t *testing.T) {
		m := mocktest.Start(t, mocktest.WithAPIKeys("app-right"))
		_, err := chat(t, m.BaseURL, "app-wrong", "Hello")
		var apiErr *dify.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
			t.Fatalf("wrong key: %v, want HTTP 401", err)
		}
		if _, err := chat(t, m.BaseURL, "app-right", "Hello"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("fault", func(t *testing.T) {
		m := mocktest.Start(t, mocktest.WithFault("error-after:2;code=quota_exceeded"))
		_, err := chat(t, m.BaseURL, "app-test", "Hello")
		var apiErr *dify.APIError
		if !errors.As(err, &apiErr) || !apiErr.Stream || apiErr.Code != "quota_exceeded" {
			t.Fatalf("got %v, want the injected in-stream quota_exceeded", err)
		}
	})
	t.Run("default cassette and config", func(t *testing.T) {
		m := mocktest.Start(t, mocktest.WithDefaultCassette("korean-answer"),
			mocktest.WithConfig(func(c *mockserver.Config) { c.Mode = dify.ModeAgentChat }))
		if m.Server.Mode() != dify.ModeAgentChat || m.Server.DefaultCassette() != "korean-answer" {
			t.Fatalf("mode %q default %q", m.Server.Mode(), m.Server.DefaultCassette())
		}
	})
	t.Run("cassette dir", func(t *testing.T) {
		dir := t.TempDir()
		src, err := os.ReadFile(filepath.Join("..", "..", "cassettes", "two-turn.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "only.yaml"), src, 0o600); err != nil {
			t.Fatal(err)
		}
		m := mocktest.Start(t, mocktest.WithCassetteDir(dir))
		if got := m.Server.CassetteNames(); len(got) != 1 || got[0] != "only" {
			t.Fatalf("cassettes %v, want [only]", got)
		}
	})
}

func TestNewRefusesWhatTheMockRefuses(t *testing.T) {
	for name, opt := range map[string]mocktest.Option{
		"speed":     mocktest.WithSpeed(-1),
		"fault":     mocktest.WithFault("no-such-fault"),
		"directory": mocktest.WithCassetteDir(filepath.Join(t.TempDir(), "missing")),
		"default":   mocktest.WithDefaultCassette("no-such-cassette"),
	} {
		if m, err := mocktest.New(opt); err == nil {
			m.Close()
			t.Errorf("%s: New succeeded, want an error", name)
		}
	}
}

// TestWithApps: a mock with several apps; each key reaches its own app and
// state, and Mock.Key names the keys.
func TestWithApps(t *testing.T) {
	m := mocktest.Start(t,
		mocktest.WithAppDir("alpha", filepath.Join("..", "..", "cassettes")),
		mocktest.WithAppDir("beta", filepath.Join("..", "..", "cassettes"), "app-beta-1", "app-beta-2"),
		mocktest.WithApps(mockserver.AppConfig{Name: "gamma"}))
	if strings.Join(m.Apps, ",") != "alpha,beta,gamma" || m.Key("alpha") != "app-alpha" || m.Key("beta") != "app-beta-1" ||
		len(m.Keys["beta"]) != 2 || m.Key("gamma") != "app-gamma" || m.Key("delta") != "" {
		t.Fatalf("apps %v keys %v", m.Apps, m.Keys)
	}
	turn, err := chat(t, m.BaseURL, m.Key("beta"), "Hello")
	if err != nil {
		t.Fatal(err)
	}
	for app, want := range map[string]int{"alpha": 0, "beta": 1, "gamma": 0} {
		client, _ := dify.NewClient(m.BaseURL, m.Key(app), dify.WithUser("mocktest"))
		page, err := client.ListConversations(context.Background(), dify.ListConversationsParams{})
		if err != nil {
			t.Fatalf("%s: %v", app, err)
		}
		if len(page.Data) != want || (want == 1 && page.Data[0].ID != turn.ConversationID) {
			t.Errorf("%s lists %d conversations, want %d", app, len(page.Data), want)
		}
	}
	if _, err := chat(t, m.BaseURL, "app-test", "Hello"); err == nil {
		t.Error("a key no app owns was accepted")
	}
	// One app: any key, as ever.
	one := mocktest.Start(t)
	if one.Key(mockserver.DefaultAppName) != mocktest.DefaultKey {
		t.Errorf("one app's key %q", one.Key(mockserver.DefaultAppName))
	}
	if _, err := mocktest.New(mocktest.WithAppDir("x", filepath.Join(t.TempDir(), "missing"))); err == nil {
		t.Error("WithAppDir of a missing folder accepted")
	}
}
