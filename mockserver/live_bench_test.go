package mockserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// BenchmarkLiveTurn is one live chat through hybrid mode, as the bench's
// live lane sends them (bench/README.md, "The live lane"): tool-use's
// first turn (41 frames) from an upstream that writes it at once, relayed
// by a mock that answers live without saving (--max-new-turns 0), read
// whole by the client. The upstream and the client run in this process,
// so ns/op is the three together; the mock's share is what moves.
func BenchmarkLiveTurn(b *testing.B) {
	set, err := cassette.LoadFS(cassettes.FS(), "built-in cassettes")
	if err != nil {
		b.Fatal(err)
	}
	c, ok := set.Get("tool-use")
	if !ok {
		b.Fatal("no tool-use cassette")
	}
	frames := c.Turns[0].Frames
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if resp, ok := set.App.Responses[strings.TrimPrefix(r.URL.Path, "/v1")]; ok && r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(resp.Status)
			_, _ = w.Write(resp.Body)
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat-messages" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		for _, f := range frames {
			_, _ = w.Write(f.Raw)
			_ = rc.Flush()
		}
	}))
	b.Cleanup(up.Close)
	rec, err := record.New(context.Background(), record.Config{
		Upstream: up.URL + "/v1", UpstreamKey: hybridKey, Dir: b.TempDir(), MaxTurns: -1, SkipRecordedQueries: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	e := newEnv(b, mockserver.Config{Cassettes: set, Upstream: rec, Speed: 1})
	b.ReportAllocs()
	cpu0 := processCPU(b)
	n := 0
	for i := 0; b.Loop(); i++ {
		n++
		body := `{"query":"live question ` + strconv.Itoa(i) + `","user":"bench","inputs":{},"response_mode":"streaming"}`
		req, _ := http.NewRequest(http.MethodPost, e.url("/chat-messages"), strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer app-test")
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get(mockserver.HeaderUpstream) != "live" || got < 15000 {
			b.Fatalf("status %d, %s %q, %d bytes", resp.StatusCode, mockserver.HeaderUpstream, resp.Header.Get(mockserver.HeaderUpstream), got)
		}
	}
	// The CPU the three used per turn: on two cores, ns/op is mostly the
	// hand-offs between them.
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(n), "cpu-ns/op")
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
