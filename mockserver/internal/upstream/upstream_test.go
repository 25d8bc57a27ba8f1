package upstream_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/upstream"
)

const key = "app-upstreamsecretkey0123"

// elsewhere is a server the key must never reach; it counts what it got.
func elsewhere(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if strings.Contains(r.Header.Get("Authorization"), key) {
			t.Errorf("the key reached another origin: %s %s", r.Method, r.URL)
		}
		_, _ = io.WriteString(w, `{"name":"elsewhere"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func newUpstream(t *testing.T, url string, cfg upstream.Config) *upstream.Upstream {
	t.Helper()
	cfg.URL, cfg.Key = url, key
	u, err := upstream.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestRedirectIsNotFollowed(t *testing.T) {
	other, hits := elsewhere(t)
	for _, code := range []int{301, 302, 303, 307, 308} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/v1/info", code)
		}))
		u := newUpstream(t, up.URL, upstream.Config{})
		req, _ := u.NewRequest(context.Background(), http.MethodGet, "/info", "", nil)
		resp, err := u.Client(10 * time.Second).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != code {
			t.Errorf("status %d, want the redirect itself (%d)", resp.StatusCode, code)
		}
		var re *upstream.RedirectError
		if err := upstream.CheckAnswer(resp); !errors.As(err, &re) || re.Status != code || strings.Contains(err.Error(), "/v1/info") {
			t.Errorf("CheckAnswer = %v, want a RedirectError naming the origin only", err)
		}
		up.Close()
	}
	if hits.Load() != 0 {
		t.Fatalf("the redirect target got %d request(s)", hits.Load())
	}
}

func TestForeignOriginIsRefusedBeforeSending(t *testing.T) {
	other, hits := elsewhere(t)
	up := httptest.NewServer(http.NotFoundHandler())
	defer up.Close()
	u := newUpstream(t, up.URL+"/v1", upstream.Config{})
	// Same host, another port; then another scheme.
	for _, target := range []string{other.URL + "/v1/info", strings.Replace(up.URL, "http://", "https://", 1) + "/v1/info"} {
		req, _ := http.NewRequest(http.MethodGet, target, strings.NewReader("body"))
		u.Authorize(req)
		_, err := u.Transport().RoundTrip(req)
		if !errors.Is(err, upstream.ErrForeignOrigin) {
			t.Errorf("%s: err = %v, want ErrForeignOrigin", target, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("another origin got %d request(s)", hits.Load())
	}
	// The default port is the same origin written either way.
	u2 := newUpstream(t, "http://example.test:80/v1", upstream.Config{Base: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 204, Body: http.NoBody}, nil
	})})
	req, _ := http.NewRequest(http.MethodGet, "http://EXAMPLE.test/v1/info", nil)
	if _, err := u2.Transport().RoundTrip(req); err != nil {
		t.Errorf("same origin without the default port: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestAnswerBodyIsBounded(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 1000))
	}))
	defer up.Close()
	for _, c := range []struct {
		max     int64
		tooLong bool
	}{{999, true}, {1000, false}, {5000, false}} {
		u := newUpstream(t, up.URL, upstream.Config{MaxBody: c.max})
		req, _ := u.NewRequest(context.Background(), http.MethodGet, "/info", "", nil)
		resp, err := u.Client(0).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if c.tooLong != errors.Is(err, upstream.ErrTooLarge) {
			t.Errorf("max %d: err %v", c.max, err)
		}
		if int64(len(body)) > c.max {
			t.Errorf("max %d: read %d bytes", c.max, len(body))
		}
	}
}

func TestSilentUpstreamIsCut(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/stall-body" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: ping\n\n")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release) // before Close, which waits for the handlers
	u := newUpstream(t, up.URL, upstream.Config{HeaderTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond})

	start := time.Now()
	req, _ := u.NewRequest(context.Background(), http.MethodPost, "/stall-headers", "", strings.NewReader(`{}`))
	_, err := u.Client(0).Do(req)
	if err == nil || !strings.Contains(err.Error(), "no answer headers within") {
		t.Errorf("headers never sent: err = %v", err)
	}
	req, _ = u.NewRequest(context.Background(), http.MethodGet, "/stall-body", "", nil)
	resp, err := u.Client(0).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || !strings.Contains(err.Error(), "stalled") {
		t.Errorf("body stalled: err = %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the bounds took %s", d)
	}
}

func TestParseBaseRefusesCredentialsWithoutEchoingThem(t *testing.T) {
	for _, raw := range []string{"https://user:hunter2@dify.example/v1", "https://dify.example/v1?api_key=hunter2", "https://dify.example/v1#hunter2", "ftp://dify.example", "", "https://user:hunter2@[::1"} {
		_, err := upstream.ParseBase(raw)
		if err == nil {
			t.Errorf("%q accepted", raw)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: the error echoes the secret: %v", raw, err)
		}
	}
	u, err := upstream.ParseBase("https://dify.example/")
	if err != nil || u.String() != "https://dify.example/v1" {
		t.Errorf("default path: %v %v", u, err)
	}
	for _, k := range []string{"", "  ", "app-a\r\nX-Evil: 1"} {
		if _, err := upstream.New(upstream.Config{URL: "https://dify.example", Key: k}); err == nil {
			t.Errorf("key %q accepted", k)
		}
	}
}

// A burst of concurrent requests leaves its connections open for the next
// burst: none of them is closed when the burst ends, and the second burst
// dials nothing (upstream.MaxIdleConns).
func TestBaseTransportKeepsABurstsConnections(t *testing.T) {
	const burst = 64 // well over net/http's default of 2 idle per host, and 8
	var dialled atomic.Int64
	arrived := make(chan struct{}, burst)
	release := make(chan struct{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "data: {\"event\":\"message_end\"}\n\n")
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
	}
	ts.Start()
	defer ts.Close()
	tr := upstream.NewBaseTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for round := range 2 {
		release = make(chan struct{})
		done := make(chan error, burst)
		for range burst {
			go func() {
				resp, err := client.Get(ts.URL)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
				done <- err
			}()
		}
		for range burst { // all in flight at once, each on a connection of its own
			<-arrived
		}
		close(release)
		for range burst {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if n := dialled.Load(); n != burst {
			t.Fatalf("after burst %d: %d connections dialled, want %d (the first burst's, kept)", round+1, n, burst)
		}
	}
}
