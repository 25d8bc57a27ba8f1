package main

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/mocktest"
)

func TestFrameLatenessAnchorsOnTheLeastLateFrame(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	due := []time.Duration{ms(150), ms(750), ms(1250)}
	// The server started 20 ms after the request was sent; frame 1 was 3 ms
	// late, frame 2 on time.
	got, start := frameLateness([]time.Duration{ms(170), ms(773), ms(1270)}, due)
	want := []time.Duration{0, ms(3), 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("lateness %v, want %v", got, want)
		}
	}
	if start != ms(20) {
		t.Fatalf("start %v, want 20ms", start)
	}
	// Fewer frames than recorded: only the received ones count.
	if got, _ := frameLateness([]time.Duration{ms(150)}, due); len(got) != 1 || got[0] != 0 {
		t.Fatalf("one frame: %v", got)
	}
	if got, _ := frameLateness(nil, due); got != nil {
		t.Fatalf("no frames: %v", got)
	}
	// In place: a stream's end allocates nothing in the load generator.
	arrivals := make([]time.Duration, len(due))
	if a := testing.AllocsPerRun(100, func() {
		copy(arrivals, []time.Duration{ms(170), ms(773), ms(1270)})
		frameLateness(arrivals, due)
	}); a != 0 {
		t.Fatalf("%v allocations", a)
	}
	if arrivals[1] != ms(3) {
		t.Fatalf("lateness in place %v", arrivals)
	}
}

func TestParseStatCPU(t *testing.T) {
	// utime 250 and stime 50 ticks = 3 s; the name holds spaces and a ')'.
	stat := "1234 (dify mock) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 0 0"
	if got := parseStatCPU(stat); got != 3*time.Second {
		t.Fatalf("%v", got)
	}
	if got := parseStatCPU("garbage"); got != 0 {
		t.Fatalf("%v", got)
	}
	if processCPU(os.Getpid()) < 0 {
		t.Fatal("negative CPU time")
	}
}

func TestSummaryNearestRank(t *testing.T) {
	var d durations
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i))
	}
	s := d.summarize()
	if s.Count != 100 || s.P50 != 50 || s.P99 != 99 || s.Max != 100 {
		t.Fatalf("summary %+v", s)
	}
	if s := (durations{7}).summarize(); s.P50 != 7 || s.P99 != 7 || s.Max != 7 {
		t.Fatalf("single sample %+v", s)
	}
	if s := (durations{}).summarize(); s.Count != 0 {
		t.Fatalf("empty %+v", s)
	}
}

func TestParseProcStatus(t *testing.T) {
	in := "Name:\tdify-mock\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\nbogus line\n"
	ps, err := parseProcStatus(strings.NewReader(in))
	if err != nil || ps.HWMKiB != 204800 || ps.RSSKiB != 102400 || ps.Threads != 9 {
		t.Fatalf("%+v %v", ps, err)
	}
}

func TestReportMarksTargets(t *testing.T) {
	in := &reportInput{
		streams: []streamsResult{
			{Streams: 1, Completed: 1, Lateness: summary{P99: time.Millisecond}},
			{Streams: 5000, Completed: 5000, Lateness: summary{P99: 12 * time.Millisecond, Max: 40 * time.Millisecond},
				LatenessSteady: summary{Count: 9, P99: 8 * time.Millisecond, Max: 60 * time.Millisecond}},
			{Streams: 10000, Completed: 10000, Server: serverFigures{PeakRSSKiB: 390_000}}, // 399 MB
		},
		http: []httpResult{{Route: "GET /parameters", RPS: 6000, Latency: summary{P99: 5 * time.Millisecond}}},
		provider: []providerResult{
			{Conversations: 1, PlanRequests: 1}, {Conversations: 100, PlanRequests: 2},
		},
	}
	rows := targetRows(in)
	got := map[string]string{}
	for _, r := range rows {
		got[r[0]] = r[2]
	}
	want := map[string]string{
		"Lateness p99 ≤ 2 ms at 1 stream":                        "met",
		"Lateness p99 ≤ 10 ms at 5,000 streams (all frames)":     "**missed**",
		"Lateness max ≤ 50 ms at 5,000 streams (all frames)":     "met",
		"Lateness p99 ≤ 10 ms at 5,000 streams (after the ramp)": "met",
		"Lateness max ≤ 50 ms at 5,000 streams (after the ramp)": "**missed**",
		"10,000 streams in ≤ 400 MB RSS":                         "met",
		"`GET /parameters` ≥ 5,000 req/s, p99 < 20 ms":           "met",
		"Provider plan requests grow at most linearly":           "met",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	// 400 MB is decimal: 391,000 KiB is just over it.
	in.streams[2].Server.PeakRSSKiB = 391_000
	for _, r := range targetRows(in) {
		if strings.HasPrefix(r[0], "10,000") && r[2] == "met" {
			t.Errorf("400.4 MB passed as ≤ 400 MB")
		}
	}
	// Superlinear growth is flagged.
	in.provider[1].PlanRequests = 150
	for _, r := range targetRows(in) {
		if strings.HasPrefix(r[0], "Provider") && r[2] == "met" {
			t.Errorf("150 requests for 100 conversations after 1 for 1 passed as linear")
		}
	}
	md := renderReport(in, machine{CPUs: 2, CPUModel: "test CPU"}, []string{"Commit: abc"}, nil)
	for _, s := range []string{"| CPU | test CPU, 2 logical CPUs", "| Commit | abc |", "| 5000 | 1 | 5000 | 0.0 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
}

// readResultsFile reads the results a run appended to path.
func readResultsFile(t *testing.T, path string) *reportInput {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, err := readResults(f)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestStreamsAgainstTheMock runs the streams and http subcommands against an
// in-process mock, fast (speed 20): every frame of every stream is matched,
// and the results file renders.
func TestStreamsAgainstTheMock(t *testing.T) {
	mock := mocktest.Start(t, mocktest.WithSpeed(1))
	out := filepath.Join(t.TempDir(), "r.jsonl")
	var log bytes.Buffer
	// Both ways of reading the bodies: each stream's goroutine, and the
	// event loop (which --event-loop auto picks from 2,000 streams).
	tl := filepath.Join(t.TempDir(), "timeline.tsv")
	for _, loop := range []string{"off", "on"} {
		err := runStreams(t.Context(), []string{"--url", mock.BaseURL, "--streams", "8", "--cassette", "plain-answer", "--speed", "20",
			"--pid", "0", "--out", out, "--event-loop", loop, "--timeline", tl, "--timeline-step", "10ms"}, &log)
		if err != nil {
			t.Fatalf("streams, --event-loop %s: %v\n%s", loop, err, log.String())
		}
	}
	err := runHTTP(t.Context(), []string{"--url", mock.BaseURL, "--endpoint", "rename", "--concurrency", "4",
		"--warmup", "50ms", "--duration", "200ms", "--out", out}, &log)
	if err != nil {
		t.Fatalf("http: %v\n%s", err, log.String())
	}
	in := readResultsFile(t, out)
	if len(in.streams) != 2 || len(in.http) != 1 {
		t.Fatalf("results: %+v", in)
	}
	turn, _ := builtinTurn("plain-answer")
	for _, s := range in.streams {
		if s.Completed != 8 || s.Failed != 0 || s.Lateness.Count != 8*len(turn.Frames) || s.LatenessRead.Count != s.Lateness.Count ||
			s.Bytes != in.streams[0].Bytes || s.Bytes == 0 {
			t.Fatalf("streams result %+v", s)
		}
		// Linux has /proc/stat: the machine's share is reported.
		if _, ok := readMachineCPU(); ok && (s.Machine == nil || s.Machine.StealPercent < 0 || s.Machine.StealPercent > 100) {
			t.Fatalf("machine figures %+v", s.Machine)
		}
		// The first frame is due at its recorded offset / 20; TTFE cannot beat it.
		if s.TTFE.P50 < time.Duration(float64(turn.Frames[0].Offset)/20) {
			t.Fatalf("TTFE %v is shorter than the first frame's offset", s.TTFE.P50)
		}
	}
	if h := in.http[0]; h.Requests == 0 || h.Errors != 0 {
		t.Fatalf("http result %+v", h)
	}
	// The timeline (of the last run) accounts for every frame and stream.
	data, err := os.ReadFile(tl)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 3 || lines[1] != "at_s\tframes\tstarts\tends\tp99_ms\tmax_ms\tstolen_ms" {
		t.Fatalf("timeline:\n%s", data)
	}
	var frames, starts, ends int
	for _, l := range lines[2:] {
		var at, p99, mx, stolen float64
		var f, st, e int
		if _, err := fmt.Sscanf(l, "%f\t%d\t%d\t%d\t%f\t%f\t%f", &at, &f, &st, &e, &p99, &mx, &stolen); err != nil || p99 > mx || stolen < 0 {
			t.Fatalf("timeline line %q: %v", l, err)
		}
		frames, starts, ends = frames+f, starts+st, ends+e
	}
	if frames != 8*len(turn.Frames) || starts != 8 || ends != 8 {
		t.Fatalf("timeline counts %d frames, %d starts, %d ends; want %d, 8, 8:\n%s", frames, starts, ends, 8*len(turn.Frames), data)
	}
}

// TestMain lets the test binary stand in for loadgen when a run over
// several servers starts its worker processes (os.Executable is the test
// binary here).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "streams" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A run over several servers shares its streams out over one worker
// process per server and measures them as one run: every stream of every
// worker is counted and matched, each server gets its share, and the peak
// live count is over all of them.
func TestStreamsOverSeveralServers(t *testing.T) {
	var urls []string
	served := make([]atomic.Int64, 2)
	for k := range served {
		srv, err := mockserver.New(mockserver.Config{Speed: 1})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/chat-messages" {
				served[k].Add(1)
			}
			srv.ServeHTTP(w, r)
		}))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
			ts.Close()
		})
		urls = append(urls, ts.URL+"/v1")
	}
	out := filepath.Join(t.TempDir(), "r.jsonl")
	var log bytes.Buffer
	// At speed 2 a stream lasts 1.4 s: longer than a worker process takes
	// to start, even under the race detector on a busy machine.
	err := runStreams(t.Context(), []string{"--url", strings.Join(urls, ","), "--streams", "9", "--cassette", "plain-answer",
		"--speed", "2", "--pid", fmt.Sprintf("%d,%d", os.Getpid(), os.Getpid()), "--out", out}, &log)
	if err != nil {
		t.Fatalf("streams: %v\n%s", err, log.String())
	}
	if a, b := served[0].Load(), served[1].Load(); a != 5 || b != 4 {
		t.Fatalf("the servers got %d and %d streams, want 5 and 4\n%s", a, b, log.String())
	}
	in := readResultsFile(t, out)
	if len(in.streams) != 1 {
		t.Fatalf("results: %+v", in)
	}
	r := in.streams[0]
	turn, _ := builtinTurn("plain-answer")
	if r.Servers != 2 || r.Completed != 9 || r.Failed != 0 || r.Lateness.Count != 9*len(turn.Frames) || r.LatenessRead.Count != r.Lateness.Count || r.Bytes == 0 {
		t.Fatalf("result %+v", r)
	}
	// Peak live is counted over both workers' streams: more than one
	// worker's share (5) were live at once.
	if r.PeakConcurrent < 6 || r.PeakConcurrent > 9 || r.RampSeconds <= 0 {
		t.Fatalf("peak live %d, ramp %.3f s", r.PeakConcurrent, r.RampSeconds)
	}
	// The workers' CPU is the client's; the "servers" (this process,
	// twice) were sampled and summed.
	if r.ClientCores <= 0 || r.Server.PeakRSSKiB <= 0 {
		t.Fatalf("client cores %.3f, server RSS %d KiB", r.ClientCores, r.Server.PeakRSSKiB)
	}
}

func TestPeakLiveCountsOverlappingStreams(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	all := []streamOutcome{
		{first: at(0), end: at(100)},
		{first: at(50), end: at(150)},
		{first: at(100), end: at(200)}, // starts as the first ends: not live with it
		{end: at(10)},                  // never got a frame
		{first: at(120), end: at(130)},
	}
	if got := peakLive(all); got != 3 {
		t.Fatalf("peak live %d, want 3", got)
	}
}

func TestWorkerSourcesAreEachWorkersOwn(t *testing.T) {
	if runtime.GOOS == "linux" {
		for k, want := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
			if got, err := workerSources("auto", 50_000, 3, k); err != nil || got != want {
				t.Fatalf("auto, worker %d: %q %v, want %q", k, got, err, want)
			}
		}
		// 120,000 over 2 workers: 60,000 each, two addresses each.
		if got, _ := workerSources("auto", 120_000, 2, 1); got != "127.0.0.3,127.0.0.5" {
			t.Fatalf("auto, 2 addresses per worker: %q", got)
		}
	}
	if got, _ := workerSources("0", 10, 2, 1); got != "0" {
		t.Fatalf("0: %q", got)
	}
	if got, _ := workerSources("127.0.0.7,127.0.0.8,127.0.0.9", 10, 2, 0); got != "127.0.0.7,127.0.0.9" {
		t.Fatalf("a list dealt out: %q", got)
	}
	if _, err := workerSources("127.0.0.7", 10, 2, 0); err == nil {
		t.Fatal("one address for two workers was accepted")
	}
	if share(10, 3, 0) != 4 || share(10, 3, 2) != 3 {
		t.Fatal("share")
	}
}

// TestPhasesSplitARunAtTheRampAndTheFirstEnd: frames due before the last
// stream's first frame are the ramp's, then all live until the first
// completed stream ends, then ending; each phase names its latest step.
func TestPhasesSplitARunAtTheRampAndTheFirstEnd(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	due := []time.Duration{0, 300 * ms, 600 * ms}
	all := []streamOutcome{
		{start: t0, end: t0.Add(610 * ms), lateness: []time.Duration{0, 1 * ms, 30 * ms}},
		{start: t0.Add(150 * ms), end: t0.Add(760 * ms), lateness: []time.Duration{0, 4 * ms, 2 * ms}},
		// Failed early: its end does not start the ending phase.
		{start: t0.Add(20 * ms), end: t0.Add(40 * ms), err: errors.New("cut"), lateness: []time.Duration{9 * ms}},
	}
	rampEnd, firstEnd := t0.Add(150*ms), t0.Add(610*ms)
	got := phases(all, due, t0, rampEnd, firstEnd, timeline(all, due, t0, 100*ms), 100*ms)
	if len(got) != 3 || got[0].Name != phaseRamp || got[1].Name != phaseLive || got[2].Name != phaseEnding {
		t.Fatalf("phases %+v", got)
	}
	// The ramp: frame 0 of the first and third streams (0, 20 ms).
	if p := got[0]; p.Late.Count != 2 || p.Late.Max != 9*ms || p.Worst.At != 0 {
		t.Errorf("ramp %+v", p)
	}
	// All live: 150 (frame 0), 300 (frame 1), 450 (frame 1) and 600 ms
	// (frame 2, 30 ms late, in the step where the first stream ended).
	if p := got[1]; p.Late.Count != 4 || p.Late.Max != 30*ms || p.Worst.At != 600*ms || p.Worst.Frames != 1 || p.Worst.Ends != 1 {
		t.Errorf("all live %+v", p)
	}
	// Ending: frame 2 of the second stream, due at 750 ms.
	if p := got[2]; p.Late.Count != 1 || p.Late.Max != 2*ms || p.Worst.At != 700*ms || p.Worst.Ends != 1 {
		t.Errorf("ending %+v", p)
	}
	in := &reportInput{streams: []streamsResult{{Kind: "streams", Streams: 1000, Phases: got}}}
	md := renderReport(in, machine{CPUs: 2}, nil, nil)
	if !strings.Contains(md, "| 1000 | all live | 4 | 30.00 | 30.00 | 0.6 | 30.00 | 1 |") {
		t.Errorf("report lacks the all-live phase:\n%s", md)
	}
}

// TestTimelineBucketsFramesByWhenTheyWereDue: a frame is counted in the
// step it was due in (the stream's start plus its offset), with its
// lateness; starts and ends in theirs; empty steps are left out.
func TestTimelineBucketsFramesByWhenTheyWereDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	due := []time.Duration{0, 150 * ms, 420 * ms}
	all := []streamOutcome{
		{start: t0, end: t0.Add(430 * ms), lateness: []time.Duration{0, 2 * ms, 40 * ms}},
		{start: t0.Add(60 * ms), end: t0.Add(500 * ms), lateness: []time.Duration{0, 5 * ms, 9 * ms}},
		{start: t0.Add(10 * ms), err: errors.New("cut"), lateness: []time.Duration{0}}, // one frame, then cut
	}
	rows := timeline(all, due, t0, 100*ms)
	type want struct {
		at                  time.Duration
		frames, starts, end int
		max                 time.Duration
	}
	wants := []want{{0, 3, 3, 0, 0}, {100 * ms, 1, 0, 0, 2 * ms}, {200 * ms, 1, 0, 0, 5 * ms}, {400 * ms, 2, 0, 1, 40 * ms}, {500 * ms, 0, 0, 1, 0}}
	if len(rows) != len(wants) {
		t.Fatalf("rows %+v", rows)
	}
	for i, w := range wants {
		r := rows[i]
		if r.At != w.at || r.Frames != w.frames || r.Starts != w.starts || r.Ends != w.end || r.Late.Max != w.max {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
}

// TestStreamsReportsFailures: a server that answers with an error is a
// failed stream, not a crash or a silent success.
func TestStreamsReportsFailures(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"code":"x","message":"down","status":503}`))
	}))
	defer ts.Close()
	if s := threeStreams(t, ts.URL); s.Failed != 3 || s.Completed != 0 || !strings.Contains(strings.Join(s.Errors, " "), "HTTP 503") {
		t.Fatalf("%+v", s)
	}
}

// threeStreams runs `loadgen streams` with 3 streams against url and
// returns its one result.
func threeStreams(t *testing.T, url string, args ...string) streamsResult {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.jsonl")
	var log bytes.Buffer
	args = append([]string{"--url", url + "/v1", "--streams", "3", "--cassette", "plain-answer", "--out", out}, args...)
	if err := runStreams(t.Context(), args, &log); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	in, err := readResults(bytes.NewReader(data))
	if err != nil || len(in.streams) != 1 {
		t.Fatalf("%v %s", err, data)
	}
	return in.streams[0]
}

// TestCountingProxyKeepsEveryStream: chats through the provider section's
// counting proxy against a mock at speed 0 (the whole answer within
// microseconds of the request) all arrive complete. Before the proxy read
// request bodies in full, about one in 200 was cut before message_end: the
// proxy's Transport was still reading the request body when the answer
// came, net/http's server closed that body on the proxy's first flush, and
// the Transport then closed the upstream connection mid-stream.
func TestCountingProxyKeepsEveryStream(t *testing.T) {
	target, _ := url.Parse(mocktest.Start(t).URL)
	cnt := &counter{n: map[string]int{}}
	proxy := httptest.NewServer(newCountingProxy(target, cnt))
	defer proxy.Close()

	const chats, workers = 200, 10
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		cut  atomic.Int64
		errs = make(chan error, workers)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= chats; i = next.Add(1) {
				body := fmt.Sprintf(`{"query":"hello %d","inputs":{},"response_mode":"streaming","user":"u%d"}`, i, i%7)
				req, _ := http.NewRequest(http.MethodPost, proxy.URL+"/v1/chat-messages", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer app-test")
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					return
				}
				data, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("HTTP %d: %s", resp.StatusCode, data)
					return
				}
				if err != nil || !bytes.Contains(data, []byte(`"event":"message_end"`)) {
					cut.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := cut.Load(); n > 0 {
		t.Fatalf("%d of %d streams through the counting proxy ended before message_end", n, chats)
	}
	if total, byRoute := cnt.take(); total != chats || byRoute["POST /chat-messages"] != chats {
		t.Fatalf("counted %d requests (%v), want %d chats", total, byRoute, chats)
	}
}

// TestCountingProxyBodyOutlivesTheFirstFlush is the mechanism behind the cut
// streams, made deterministic: the proxy's Transport may still read the
// request body after the answer's header has been flushed to the client,
// and net/http's server closes an unread body on that first flush. Behind
// the counter the body must stay readable.
func TestCountingProxyBodyOutlivesTheFirstFlush(t *testing.T) {
	got := make(chan string, 1)
	cnt := &counter{n: map[string]int{}}
	ts := httptest.NewServer(cnt.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		b, err := io.ReadAll(r.Body)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(b)
	})))
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/v1/chat-messages", "application/json", strings.NewReader(`{"query":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if b := <-got; b != `{"query":"hi"}` {
		t.Fatalf("the request body read after the first flush: %q", b)
	}
}

func TestParseSources(t *testing.T) {
	if runtime.GOOS == "linux" {
		// Every count gets a source, so that the client picks the ports.
		if s, err := parseSources("auto", 10_000); err != nil || len(s) != 1 || s[0].String() != "127.0.0.2" {
			t.Fatalf("10,000 streams: %v %v", s, err)
		}
		if s, _ := parseSources("auto", 50_001); len(s) != 2 || s[1].String() != "127.0.0.3" {
			t.Fatalf("50,001 streams: %v", s)
		}
	} else if s, _ := parseSources("auto", 10_000); s != nil {
		t.Fatalf("10,000 streams need no extra source: %v", s)
	}
	if s, err := parseSources("0", 50_000); err != nil || s != nil {
		t.Fatalf("0: the kernel should pick: %v %v", s, err)
	}
	s, err := parseSources("3", 1)
	if err != nil || len(s) != 3 || s[0].String() != "127.0.0.2" || s[2].String() != "127.0.0.4" {
		t.Fatalf("3 sources: %v %v", s, err)
	}
	if s, err := parseSources("127.0.0.9, ::1", 1); err != nil || len(s) != 2 || s[1].String() != "::1" {
		t.Fatalf("list: %v %v", s, err)
	}
	if _, err := parseSources("nope", 1); err == nil {
		t.Fatal("a bad address was accepted")
	}
}

// The client picks each connection's source and port in turn (the kernel's
// search of the ephemeral range was what limited the ramp), and a port that
// something else holds is skipped, not a failed stream.
func TestDialPicksPortsInTurnAndSkipsATakenOne(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.2 and 127.0.0.3 reach the loopback interface without configuration on Linux only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	target := &sseTarget{addr: ln.Addr().String(), sources: loopbackSources(2)}
	// The picker's next pair for 127.0.0.2 is held by a listener.
	next := target.ports.next(target.sources)
	target.ports.n.Store(0)
	if next.Port == lastPort {
		t.Skip("the random start landed on the last port; the wrap-around is covered below")
	}
	taken, err := net.Listen("tcp", next.String())
	if err != nil {
		t.Skipf("%s is in use already: %v", next, err)
	}
	defer taken.Close()

	var got []*net.TCPAddr
	for range 3 {
		c, err := target.dial(context.Background())
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		got = append(got, c.LocalAddr().(*net.TCPAddr))
		c.Close()
	}
	// 127.0.0.2:p was taken, so the first connection is 127.0.0.3:p; then
	// 127.0.0.2:p+1 and 127.0.0.3:p+1.
	want := []string{
		net.JoinHostPort("127.0.0.3", strconv.Itoa(next.Port)),
		net.JoinHostPort("127.0.0.2", strconv.Itoa(next.Port+1)),
		net.JoinHostPort("127.0.0.3", strconv.Itoa(next.Port+1)),
	}
	for i, a := range got {
		if a.String() != want[i] {
			t.Fatalf("connection %d from %s, want %s (all: %v)", i, a, want[i], got)
		}
	}

	// The ports wrap around to the first unprivileged one.
	var p portPicker
	p.once.Do(func() { p.start = lastPort - firstPort })
	if a, b := p.next(loopbackSources(1)), p.next(loopbackSources(1)); a.Port != lastPort || b.Port != firstPort {
		t.Fatalf("wrap-around: %d then %d", a.Port, b.Port)
	}
}

// A port whose last connection is in TIME_WAIT on the client's side (the
// client closed first) can be picked again: in one bench, the block of
// ports one run left in TIME_WAIT failed every dial of the next run that
// landed in it.
func TestDialReusesAPortInTimeWait(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.3 reaches the loopback interface without configuration on Linux only")
	}
	accept := func(ln net.Listener) <-chan net.Conn {
		ch := make(chan net.Conn, 1)
		go func() {
			if c, err := ln.Accept(); err == nil {
				ch <- c
			}
		}()
		return ch
	}
	first, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	src := []net.IP{net.IPv4(127, 0, 0, 3)}
	target := &sseTarget{addr: first.Addr().String(), sources: src}
	accepted := accept(first)
	c, err := target.dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	port := c.LocalAddr().(*net.TCPAddr).Port
	srv := <-accepted
	_ = c.Close() // the client's side closes first: TIME_WAIT is the client's
	_, _ = srv.Read(make([]byte, 1))
	_ = srv.Close()

	second, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	again := &sseTarget{addr: second.Addr().String(), sources: src}
	again.ports.once.Do(func() { again.ports.start = uint64(port - firstPort) })
	accepted = accept(second)
	c2, err := again.dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	<-accepted
	if got := c2.LocalAddr().(*net.TCPAddr).Port; got != port {
		t.Fatalf("dialed from port %d, want %d again (in TIME_WAIT)", got, port)
	}
}

// A stream the server cuts (its connection closed before the last chunk)
// fails with the frames it got, whichever way the body is read: neither
// reader may hang on it or count it complete.
func TestStreamsReportsACutStream(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"event\":\"agent_message\"}\n\n")
		http.NewResponseController(w).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer ts.Close()
	for _, loop := range []string{"off", "on"} {
		if s := threeStreams(t, ts.URL, "--event-loop", loop); s.Failed != 3 || s.Completed != 0 || !strings.Contains(strings.Join(s.Errors, " "), "after 1 frames: unexpected EOF") {
			t.Fatalf("--event-loop %s: %+v", loop, s)
		}
	}
}

// A worker's times reach the parent as monotonic offsets from the worker's
// reference, placed on the parent's clock by the two references' wall
// readings: a stream's times keep their spacing, the zero time stays zero,
// and the placed times carry the parent's monotonic reading, so the
// parent's comparisons do not depend on the wall clock after the start
// (a time.Time sent as is would keep only its wall reading).
func TestWorkerTimesKeepTheirPlaceOnTheParentsClock(t *testing.T) {
	parentRef := time.Now()
	workerRef := parentRef.Add(3 * time.Millisecond) // the worker started a little later
	start, end := workerRef.Add(750*time.Millisecond), workerRef.Add(31*time.Second)
	wo := wireOutcome{Start: sinceRef(start, workerRef), First: sinceRef(time.Time{}, workerRef), End: sinceRef(end, workerRef)}
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	if err := enc.Encode(&wireHeader{Ref: workerRef.Round(0)}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(&wo); err != nil {
		t.Fatal(err)
	}
	dec := gob.NewDecoder(&buf)
	var hdr wireHeader
	var got wireOutcome
	if err := dec.Decode(&hdr); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	clock := clockFrom(parentRef, hdr.Ref)
	gotStart, gotFirst, gotEnd := clock.at(got.Start), clock.at(got.First), clock.at(got.End)
	if d := gotStart.Sub(parentRef); d != 753*time.Millisecond {
		t.Errorf("start placed %v after the parent's reference, want 753ms", d)
	}
	if d := gotEnd.Sub(gotStart); d != 31*time.Second-750*time.Millisecond {
		t.Errorf("start to end %v, want 30.25s", d)
	}
	if !gotFirst.IsZero() {
		t.Errorf("a stream without a first frame came back with one at %v", gotFirst)
	}
	// The placed times carry a monotonic reading (Round(0) strips it, so
	// the string differs): comparisons with the parent's times use it.
	if gotEnd.String() == gotEnd.Round(0).String() {
		t.Errorf("the placed end %v has no monotonic reading", gotEnd)
	}
}
