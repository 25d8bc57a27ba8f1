package main

// The live lane (`make bench`'s live section): hybrid mode (dify-mock serve
// --upstream, docs/mock/hybrid.md) relays a real Dify's stream frame by
// frame. Its cost is measured against a fake upstream on loopback whose
// timing is known (`loadgen upstream`: a built-in cassette's first turn,
// each frame written at its recorded offset, the time of every write kept),
// and beside a bare Go relay that does nothing but copy the bytes through
// (`loadgen relay`). `loadgen live` runs N concurrent chats through one of
// them, each chat with a query of its own so that no recorded turn answers
// it and every one goes to the upstream, and takes each frame's arrival at
// its socket against the upstream's write of the same frame: the lateness
// the relay added (loopback both ways included).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/internal/cputime"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// sendsPath is the fake upstream's side channel: the writes of every chat
// since the last call, by query (liveSends). It is outside /v1, so no
// Dify client asks for it.
const sendsPath = "/bench/sends"

// liveSends is what the fake upstream reports on sendsPath. Sends are
// offsets on its monotonic clock from Ref, whose wall-clock reading is the
// only one compared with the client's (clockFrom, as a run's worker
// processes report their times): a clock step between the two references
// moves every figure by the step, one within the run moves nothing.
type liveSends struct {
	Ref   time.Time                  `json:"ref"`
	Sends map[string][]time.Duration `json:"sends"`
	// Late is the upstream's own lateness: each write against its
	// recorded offset from the request's arrival (its timers and writes
	// on a busy machine), for the report's context.
	Late summary `json:"late"`
}

// fakeUpstream serves a Dify app whose every chat streams turn.
type fakeUpstream struct {
	turn *cassette.RecordedTurn
	app  *cassette.App
	ref  time.Time

	mu    sync.Mutex
	sends map[string][]time.Duration
	late  durations
}

func newFakeUpstream(name string) (*fakeUpstream, error) {
	set, err := cassette.LoadFS(cassettes.FS(), "built-in cassettes")
	if err != nil {
		return nil, err
	}
	turn, err := builtinTurn(name)
	if err != nil {
		return nil, err
	}
	if set.App == nil {
		return nil, errors.New("the built-in cassettes have no app description")
	}
	return &fakeUpstream{turn: turn, app: set.App, ref: time.Now(), sends: map[string][]time.Duration{}}, nil
}

func (u *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == sendsPath && r.Method == http.MethodGet {
		u.mu.Lock()
		out := liveSends{Ref: u.ref.Round(0), Sends: u.sends, Late: u.late.summarize()}
		u.sends, u.late = map[string][]time.Duration{}, nil
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	// Dify answers a request without a key 401 (docs/api §1).
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		http.Error(w, `{"code":"unauthorized","message":"Access token is invalid","status":401}`, http.StatusUnauthorized)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/v1")
	if p == "" {
		p = "/"
	}
	if resp, ok := u.app.Responses[p]; ok && r.Method == http.MethodGet {
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.Status)
		_, _ = w.Write(resp.Body)
		return
	}
	if p != "/chat-messages" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	start := time.Now()
	var req struct {
		Query string `json:"query"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Query == "" {
		http.Error(w, `{"code":"invalid_param","message":"query is required","status":400}`, http.StatusBadRequest)
		return
	}
	u.stream(w, r.Context(), req.Query, start)
}

// stream writes the turn's frames at their recorded offsets from start and
// keeps the time each write began: on loopback the bytes can reach the
// relay's socket before the write returns, so a time taken after it would
// leave the relay less than nothing.
func (u *fakeUpstream) stream(w http.ResponseWriter, ctx context.Context, query string, start time.Time) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sends := make([]time.Duration, 0, len(u.turn.Frames))
	late := make(durations, 0, len(u.turn.Frames))
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for _, f := range u.turn.Frames {
		if d := time.Until(start.Add(f.Offset)); d > 0 {
			t.Reset(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
		now := time.Now()
		if _, err := w.Write(f.Raw); err != nil {
			break
		}
		if err := rc.Flush(); err != nil {
			break
		}
		sends = append(sends, now.Sub(u.ref))
		late = append(late, now.Sub(start)-f.Offset)
	}
	u.mu.Lock()
	u.sends[query] = sends
	u.late = append(u.late, late...)
	u.mu.Unlock()
}

// runUpstream is `loadgen upstream`: the fake upstream until interrupted.
func runUpstream(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	name := fs.String("cassette", "tool-use", "built-in cassette whose first turn every chat streams, at its recorded pace")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := newFakeUpstream(*name)
	if err != nil {
		return err
	}
	return serveUntil(ctx, *addr, u, "fake upstream", stderr)
}

// runRelay is `loadgen relay`: the bare Go relay, the live lane's floor.
// httputil.ReverseProxy flushes each write of a text/event-stream response
// at once, so it copies each read through and nothing else.
func runRelay(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	up := fs.String("upstream", "", "the upstream's API base URL, e.g. http://127.0.0.1:5002/v1 (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return serveUntil(ctx, *addr, newRelay(*up), "bare relay", stderr)
}

func newRelay(upstream string) http.Handler {
	target, err := url.Parse(strings.TrimSuffix(strings.TrimRight(upstream, "/"), "/v1"))
	if err != nil || target.Host == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "relay: --upstream is not a URL", http.StatusBadGateway)
		})
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	// One connection per live stream, kept for the next.
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 100_000, DisableCompression: true}
	rp.FlushInterval = -1
	return rp
}

// serveUntil serves h on addr and prints "WHAT on http://ADDR/v1" (the
// line scripts/bench.sh waits for) until ctx ends.
func serveUntil(ctx context.Context, addr string, h http.Handler, what string, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	fmt.Printf("%s on http://%s/v1\n", what, ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintf(stderr, "%s stopped\n", what)
	return nil
}

// liveResult is one `loadgen live` run.
type liveResult struct {
	Kind     string `json:"kind"` // "live"
	Target   string `json:"target"`
	Streams  int    `json:"streams"`
	Cassette string `json:"cassette"`
	Frames   int    `json:"frames_per_stream"`
	// TurnSeconds is the turn's last frame's recorded offset.
	TurnSeconds float64 `json:"turn_seconds,omitempty"`
	// Saving says whether the relay saved the turns (free text, e.g.
	// "off (--max-new-turns 0)").
	Saving string `json:"saving,omitempty"`
	Round  int    `json:"round,omitempty"`

	Completed int      `json:"completed"`
	Failed    int      `json:"failed"`
	Errors    []string `json:"errors,omitempty"`
	// Added: each frame's arrival at the load generator's socket against
	// the upstream's write of it. UpstreamLate: the upstream's writes
	// against its schedule (context: it is not the relay's).
	Added        summary `json:"added"`
	UpstreamLate summary `json:"upstream_late"`
	TTFE         summary `json:"ttfe"`
	// LatestFrame is the frame of the turn whose added lateness has the
	// highest p99 over the streams: where the relay's time goes.
	LatestFrame *latestFrame `json:"latest_frame,omitempty"`
	// StartRate is --start-rate (0 = all at once); StartSpread is how
	// far apart the middle 80 % of the streams' first frames were written
	// (10th to 90th percentile).
	StartRate   float64       `json:"start_rate,omitempty"`
	StartSpread time.Duration `json:"start_spread"`

	// Memory: the relay's VmRSS before the first stream and at its peak,
	// and per stream the difference over the streams; KeptBytes is what
	// a live stream holds of its answer (the turn's frames, which the mock
	// keeps until the turn is stored and saved).
	BaseRSSKiB      int64         `json:"base_rss_kib"`
	Server          serverFigures `json:"server"`
	RSSPerStreamKiB float64       `json:"rss_per_stream_kib"`
	KeptBytes       int           `json:"kept_bytes_per_stream"`
	ServerCores     float64       `json:"server_cores"`
	WindowSeconds   float64       `json:"window_seconds"`
	// The load generator's and the fake upstream's cores over the run
	// (the upstream's 0 without --upstream-pid), and what the rest of
	// the machine did meanwhile: the load the run was recorded with.
	ClientCores   float64         `json:"client_cores"`
	UpstreamCores float64         `json:"upstream_cores,omitempty"`
	Machine       *machineFigures `json:"machine,omitempty"`
}

type liveOptions struct {
	url, upstream, target, cassette, saving, out, pids, debugURL, eventLoop string
	streams, connect, round, upstreamPID                                    int
	timeout                                                                 time.Duration
	byFrame                                                                 bool
	startRate                                                               float64
}

func runLive(ctx context.Context, args []string, stderr io.Writer) error {
	var o liveOptions
	fs := flag.NewFlagSet("live", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "", "API base URL of the relay measured: dify-mock in hybrid mode or `loadgen relay` (required)")
	fs.StringVar(&o.upstream, "upstream", "", "API base URL of the `loadgen upstream` behind it, for its send times (required)")
	fs.StringVar(&o.target, "target", "dify-mock", "the relay's name in the report")
	fs.StringVar(&o.cassette, "cassette", "tool-use", "the cassette the upstream streams (its frame count is checked)")
	fs.StringVar(&o.saving, "saving", "", "whether the relay saves the turns, for the report (e.g. \"off (--max-new-turns 0)\")")
	fs.IntVar(&o.streams, "streams", 1, "concurrent live streams")
	fs.IntVar(&o.connect, "connect-concurrency", 1000, "requests waiting for their first frame at once")
	fs.StringVar(&o.pids, "pid", "", "the relay's process id, for RSS and CPU from /proc (empty = skip)")
	fs.StringVar(&o.debugURL, "debug-url", "", "the relay's profiling listener, for goroutines")
	fs.IntVar(&o.upstreamPID, "upstream-pid", 0, "the fake upstream's process id, so that its CPU is not counted as other work (0 = unknown)")
	fs.StringVar(&o.eventLoop, "event-loop", "auto", "who reads the stream bodies (as loadgen streams --event-loop)")
	fs.IntVar(&o.round, "round", 0, "this run's round, stored with the result")
	fs.Float64Var(&o.startRate, "start-rate", 0, "start at most this many chats a second, evenly spaced, besides --connect-concurrency (0 = all at once: every chat plays the same turn, so the frames of one offset fall due together across all streams); the report's lateness target judges the row of 1,000 started at 250 a second")
	fs.BoolVar(&o.byFrame, "by-frame", false, "also print each frame's added lateness and the spread of the streams' starts")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up after this long (default: the turn's length + 2m + 10ms per stream)")
	fs.StringVar(&o.out, "out", "", "append the JSON result to this file (default stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.url == "" || o.upstream == "" || o.streams < 1 || o.connect < 1 || o.startRate < 0 {
		return errors.New("--url and --upstream are required; --streams and --connect-concurrency must be positive, --start-rate not negative")
	}
	turn, err := builtinTurn(o.cassette)
	if err != nil {
		return err
	}
	res, err := live(ctx, o, turn, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "live %s: streams=%d completed=%d failed=%d added p50=%v p99=%v max=%v (upstream's own p99=%v; latest frame %s) ttfe p50=%v peakRSS=%dMiB (base %dMiB) per stream %.1f KiB, kept %d B cores=%.2f client=%.2f upstream=%.2f%s\n",
		res.Target, res.Streams, res.Completed, res.Failed, res.Added.P50, res.Added.P99, res.Added.Max, res.UpstreamLate.P99, res.LatestFrame.describe(),
		res.TTFE.P50, res.Server.PeakRSSKiB>>10, res.BaseRSSKiB>>10, res.RSSPerStreamKiB, res.KeptBytes, res.ServerCores, res.ClientCores, res.UpstreamCores, res.Machine.describe())
	return appendResult(o.out, res)
}

// latestFrame is one frame of the turn by its added lateness.
type latestFrame struct {
	Index int           `json:"index"`
	Event string        `json:"event"`
	P99   time.Duration `json:"p99"`
}

// frameEvent is the event a recorded frame carries ("" for none).
func frameEvent(raw []byte) string {
	_, rest, ok := strings.Cut(string(raw), `"event"`)
	if !ok {
		return ""
	}
	rest = strings.TrimLeft(rest, " :")
	if !strings.HasPrefix(rest, `"`) {
		return ""
	}
	ev, _, _ := strings.Cut(rest[1:], `"`)
	return ev
}

// liveStream is one live chat's outcome.
type liveStream struct {
	query    string
	arrivals []time.Time // each frame's arrival at the socket
	ttfe     time.Duration
	err      error
}

func live(ctx context.Context, o liveOptions, turn *cassette.RecordedTurn, stderr io.Writer) (*liveResult, error) {
	length := turn.Frames[len(turn.Frames)-1].Offset
	if o.timeout == 0 {
		o.timeout = length + 2*time.Minute + time.Duration(o.streams)*10*time.Millisecond
		if o.startRate > 0 {
			o.timeout += time.Duration(float64(o.streams) / o.startRate * float64(time.Second))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	servers, err := parseServers(o.url, o.pids, o.debugURL)
	if err != nil {
		return nil, err
	}
	if len(servers) != 1 {
		return nil, errors.New("--url takes one relay")
	}
	// Whatever an earlier run left on the upstream is dropped.
	if _, err := fetchSends(ctx, o.upstream); err != nil {
		return nil, fmt.Errorf("the upstream's send times: %w", err)
	}
	res := &liveResult{Kind: "live", Target: o.target, Streams: o.streams, Cassette: o.cassette, Frames: len(turn.Frames), Saving: o.saving, Round: o.round, StartRate: o.startRate}
	for _, f := range turn.Frames {
		res.KeptBytes += len(f.Raw)
		res.TurnSeconds = max(res.TurnSeconds, f.Offset.Seconds())
	}
	if pid := servers[0].pid; pid > 0 {
		if ps, err := readProcStatus(pid); err == nil {
			res.BaseRSSKiB = ps.RSSKiB
		}
	}
	smp := newSampler(servers...)
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() { defer sampling.Done(); smp.run(sctx, 250*time.Millisecond) }()

	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	endpoint := strings.TrimRight(o.url, "/") + "/chat-messages"
	sources, err := parseSources("auto", o.streams)
	if err != nil {
		return nil, err
	}
	target, err := newSSETarget(endpoint, hdr, sources)
	if err != nil {
		return nil, err
	}
	if target.loop, err = parseEventLoop(o.eventLoop, o.streams); err != nil {
		return nil, err
	}
	target.loopPace = defaultLoopPace
	// Queries no recorded turn is near (no word in common with any), and
	// new in every run, so that each chat goes to the upstream even where
	// an earlier run saved its turns.
	run := strconv.FormatUint(rand.Uint64(), 36)
	fmt.Fprintf(stderr, "loadgen: %d live streams through %s (%s)\n", o.streams, o.target, endpoint)
	ref := time.Now()
	cpu0 := serversCPU(servers)
	clientCPU0 := cputime.Self() + cputime.Children()
	upstreamCPU0 := processCPU(o.upstreamPID)
	machine0, haveMachine := readMachineCPU()
	sem := make(chan struct{}, o.connect)
	results := make(chan liveStream, o.streams)
	for i := range o.streams {
		q := fmt.Sprintf("zqlive%s q%06d", run, i)
		body, _ := json.Marshal(map[string]any{"query": q, "inputs": map[string]any{}, "response_mode": "streaming", "user": "bench-" + strconv.Itoa(i%64)})
		req := target.request("app-bench", body)
		notBefore := pacedStart(ref, i, o.startRate)
		go func() { results <- oneLive(ctx, target, q, req, sem, notBefore) }()
	}
	all := make([]liveStream, 0, o.streams)
	for range o.streams {
		all = append(all, <-results)
	}
	end := time.Now()
	stopSampling()
	sampling.Wait()
	res.WindowSeconds = end.Sub(ref).Seconds()
	if res.WindowSeconds > 0 {
		if servers[0].pid > 0 {
			res.ServerCores = (serversCPU(servers) - cpu0).Seconds() / res.WindowSeconds
		}
		res.ClientCores = (cputime.Self() + cputime.Children() - clientCPU0).Seconds() / res.WindowSeconds
		res.UpstreamCores = (processCPU(o.upstreamPID) - upstreamCPU0).Seconds() / res.WindowSeconds
		if m1, ok := readMachineCPU(); ok && haveMachine {
			res.Machine = machineOver(machine0, m1, res.WindowSeconds, res.ServerCores, res.ClientCores+res.UpstreamCores)
		}
	}
	res.Server = smp.figures()
	if res.Server.PeakRSSKiB > 0 {
		res.RSSPerStreamKiB = float64(res.Server.PeakRSSKiB-res.BaseRSSKiB) / float64(o.streams)
	}
	sends, err := fetchSends(ctx, o.upstream)
	if err != nil {
		return nil, fmt.Errorf("the upstream's send times: %w", err)
	}
	res.UpstreamLate = sends.Late
	clock := clockFrom(ref, sends.Ref)
	var added, ttfe durations
	byFrame := make([]durations, len(turn.Frames))
	for _, s := range all {
		sent := sends.Sends[s.query]
		if s.err == nil && len(sent) != len(turn.Frames) {
			s.err = fmt.Errorf("the upstream wrote %d frames of %d (did the chat reach it?)", len(sent), len(turn.Frames))
		}
		if s.err == nil && len(s.arrivals) != len(sent) {
			s.err = fmt.Errorf("received %d frames, the upstream wrote %d", len(s.arrivals), len(sent))
		}
		for i := range min(len(sent), len(s.arrivals)) {
			d := s.arrivals[i].Sub(clock.at(sent[i]))
			added = append(added, d)
			if i < len(byFrame) {
				byFrame[i] = append(byFrame[i], d)
			}
		}
		if s.ttfe > 0 {
			ttfe = append(ttfe, s.ttfe)
		}
		if s.err != nil {
			res.Failed++
			res.Errors = keepError(res.Errors, s.err)
			continue
		}
		res.Completed++
	}
	res.Added, res.TTFE = added.summarize(), ttfe.summarize()
	// How spread the streams' starts were: every stream plays the same
	// turn, so the closer together they start, the more of their frames
	// of one offset fall due at once, and the more the relay has to write
	// in the same instant.
	var starts []time.Time
	for _, s := range all {
		if sent := sends.Sends[s.query]; len(sent) > 0 {
			starts = append(starts, clock.at(sent[0]))
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	if len(starts) > 0 {
		res.StartSpread = starts[len(starts)*9/10].Sub(starts[len(starts)/10])
	}
	if o.byFrame {
		// Where in the turn the lateness is.
		if len(starts) > 0 {
			fmt.Fprintf(stderr, "first frames written over %v (10%%-90%%: %v)\n", starts[len(starts)-1].Sub(starts[0]), res.StartSpread)
		}
		for i, ds := range byFrame {
			sm := ds.summarize()
			fmt.Fprintf(stderr, "frame %2d %-14s p50 %8sms p99 %8sms max %8sms\n", i, frameEvent(turn.Frames[i].Raw), ms(sm.P50), ms(sm.P99), ms(sm.Max))
		}
	}
	for i, ds := range byFrame {
		if p := ds.summarize().P99; len(ds) > 0 && (res.LatestFrame == nil || p > res.LatestFrame.P99) {
			res.LatestFrame = &latestFrame{Index: i, Event: frameEvent(turn.Frames[i].Raw), P99: p}
		}
	}
	return res, nil
}

// oneLive sends one chat and keeps each frame's arrival.
func oneLive(ctx context.Context, target *sseTarget, query string, req []byte, sem chan struct{}, notBefore time.Time) (out liveStream) {
	out.query = query
	if err := waitUntil(ctx, notBefore); err != nil {
		out.err = err
		return out
	}
	release, err := waitSlot(ctx, sem)
	if err != nil {
		out.err = err
		return out
	}
	defer release()
	sent := time.Now()
	conn, err := target.dial(ctx)
	if err != nil {
		out.err = err
		return out
	}
	defer conn.Close()
	err = target.stream(ctx, conn, req, func(at arrival, _ int) {
		if len(out.arrivals) == 0 {
			out.ttfe = at.socket.Sub(sent)
			release()
		}
		out.arrivals = append(out.arrivals, at.socket)
	})
	if err != nil {
		out.err = fmt.Errorf("after %d frames: %w", len(out.arrivals), err)
	}
	return out
}

// fetchSends reads (and clears) the upstream's send times.
func fetchSends(ctx context.Context, upstream string) (*liveSends, error) {
	u := strings.TrimSuffix(strings.TrimRight(upstream, "/"), "/v1") + sendsPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d (is it `loadgen upstream`?)", u, resp.StatusCode)
	}
	var s liveSends
	if err := json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// The live lane's targets: the lateness dify-mock adds to a live stream at
// 1,000 streams, and its memory per live stream against what a live stream
// holds of its answer (bench/README.md, "The live lane").
const (
	targetLiveStreams      = 1000
	targetLiveAddedP99     = 5 * time.Millisecond
	targetLiveKeptMultiple = 16
	// targetLiveStartRate is the pace the lateness target's row starts
	// its chats at: 1,000 in 4 s, so all are live together for the turn's
	// last 10 s, and the upstream's timing is known in advance. Started
	// all at once, the frames of one offset fall due for every stream
	// within an instant whose length is set by how fast the relay under
	// test opens its upstream connections, and the bare relay, which does
	// nothing but copy, gave 2.9–21.5 ms there on two vCPUs, over 5 ms in
	// eight of its ten runs (bench/history.md, "Performance round nine"):
	// that row measures the machine's burst, and is shown beside.
	targetLiveStartRate float64 = 250
)

// describe is "#INDEX EVENT p99 X ms", "–" for none.
func (f *latestFrame) describe() string {
	if f == nil {
		return "–"
	}
	return fmt.Sprintf("#%d %s, p99 %s ms", f.Index, f.Event, ms(f.P99))
}

// together is ", all live together for the turn's last N s" for a paced
// run whose starts end before its first stream does, "" otherwise.
func (r liveResult) together() string {
	if r.StartRate <= 0 || r.TurnSeconds <= 0 {
		return ""
	}
	if t := r.TurnSeconds - float64(r.Streams)/r.StartRate; t >= 1 {
		return fmt.Sprintf(", all live together for the turn's last %.0f s", t)
	}
	return ""
}

// keptMultiple is a run's RSS per stream over the bytes a live stream
// keeps; 0 when either is unknown.
func (r liveResult) keptMultiple() float64 {
	if r.KeptBytes == 0 || r.RSSPerStreamKiB <= 0 {
		return 0
	}
	return r.RSSPerStreamKiB * 1024 / float64(r.KeptBytes)
}

// liveRowKey is what makes two live runs rounds of one row (`make bench`
// runs each shape BENCH_ROUNDS times, each on fresh servers, as it does
// the streams rows: rounds.go).
type liveRowKey struct {
	target, saving string
	streams        int
	startRate      float64
}

func liveKeyOf(r liveResult) liveRowKey {
	return liveRowKey{target: r.Target, saving: r.Saving, streams: r.Streams, startRate: r.StartRate}
}

// liveRow is one row of the live lane's table: its rounds in the order
// they ran.
type liveRow struct {
	rounds []liveResult
}

func liveRows(rs []liveResult) []liveRow {
	var rows []liveRow
	for _, rounds := range groupRounds(rs, liveKeyOf) {
		rows = append(rows, liveRow{rounds: rounds})
	}
	return rows
}

func (r liveRow) median() liveResult { return foldLive(r.rounds, false) }

// worst is every figure at its worst over the rounds: the targets judge it.
func (r liveRow) worst() liveResult { return foldLive(r.rounds, true) }

func (r liveRow) cells() rowCells[liveResult] {
	return rowCells[liveResult]{med: r.median(), worst: r.worst(), several: len(r.rounds) > 1}
}

// foldLive folds one row's rounds, as foldRounds does the streams rows':
// each figure the median of the rounds' or, with worst, the worst (the
// highest lateness, memory and CPU, the fewest completed). The latest
// frame, the starts' spread and the errors are those of the round whose
// added lateness has the highest p99.
func foldLive(rs []liveResult, worst bool) liveResult {
	out := rs[0]
	for _, x := range rs[1:] {
		if x.Added.P99 > out.Added.P99 {
			out = x
		}
	}
	if len(rs) == 1 {
		return out
	}
	out.Round = 0
	foldSummaries(&out, rs, worst,
		func(r *liveResult) *summary { return &r.Added },
		func(r *liveResult) *summary { return &r.UpstreamLate },
		func(r *liveResult) *summary { return &r.TTFE })
	if !worst {
		fold(&out, rs, false, false, func(r *liveResult) *time.Duration { return &r.StartSpread })
	}
	fold(&out, rs, worst, false, func(r *liveResult) *int { return &r.Completed })
	fold(&out, rs, worst, true, func(r *liveResult) *int { return &r.Failed })
	fold(&out, rs, worst, true, func(r *liveResult) *int64 { return &r.BaseRSSKiB })
	fold(&out, rs, worst, true, func(r *liveResult) *int64 { return &r.Server.PeakRSSKiB })
	fold(&out, rs, worst, true, func(r *liveResult) *float64 { return &r.RSSPerStreamKiB })
	fold(&out, rs, worst, true, func(r *liveResult) *float64 { return &r.ServerCores })
	fold(&out, rs, worst, true, func(r *liveResult) *float64 { return &r.ClientCores })
	fold(&out, rs, worst, true, func(r *liveResult) *float64 { return &r.UpstreamCores })
	machines := make([]*machineFigures, len(rs))
	for i := range rs {
		machines[i] = rs[i].Machine
	}
	out.Machine = foldMachine(machines, worst)
	return out
}

func renderLive(b *strings.Builder, in *reportInput) {
	if len(in.live) == 0 {
		return
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	r0 := in.live[0]
	w("## The live lane: hybrid mode relaying live streams\n\n")
	w("A fake upstream on loopback (`loadgen upstream`) answers every chat with `%s`'s first turn, each of its %d frames written at its recorded offset, "+
		"and keeps the time of every write. N chats, each with a query of its own (so no recorded turn answers it and every one goes to the upstream), "+
		"go through dify-mock in hybrid mode (`serve --upstream`) and through a bare Go relay (`loadgen relay`: `httputil.ReverseProxy`, flushing each read), the floor.\n\n", r0.Cassette, r0.Frames)
	w("- **Rounds**: each row ran as many times as its *Rounds* column says, each round on freshly started servers; with several, " +
		"every cell is *the median / the worst* of the rounds' figures, and the targets below are judged on the worst.\n")
	w("- **Added**: each frame's arrival at the load generator's socket against the upstream's write of the same frame: what the relay added, loopback both ways included. " +
		"*Upstream's own* is the upstream's writes against its schedule (the machine's, not the relay's); *latest frame* is the frame of the turn whose added lateness has the highest p99.\n")
	w("- **RSS**: the relay's VmRSS before the first stream and its peak (sampled every 250 ms); *per stream* is their difference over N; "+
		"*× kept* divides it by the bytes a live stream keeps of its answer (the turn's frames, %d B, which dify-mock holds until the turn is stored and saved).\n", r0.KeptBytes)
	w("- **Saving**: whether dify-mock saved the turns (`--max-new-turns 0` answers live without saving).\n")
	w("- **Starts**: a row's Streams cell gives the pace the chats were started at (`loadgen live --start-rate R`: evenly spaced, R a second), or says they all started at once. "+
		"*Starts 10–90 %%* is how far apart the middle 80 %% of the streams' first frames were written. Every stream plays the same turn, "+
		"so the closer together they start, the more frames of one offset fall due in the same instant (the turn's end: four frames in 60 ms). "+
		"Started all at once, how close together they come depends on how fast the relay under test opens its upstream connections, and even the bare relay "+
		"cannot write 1,000 frames due in the same instant within 5 ms on two vCPUs: the lateness target judges the row started at %g a second (bench/README.md, the live lane).\n", targetLiveStartRate)
	w("- **CPU**: cores used on average over the run by the relay, the load generator and the fake upstream; *other work* is the rest of the machine's busy time, *stolen* the hypervisor's share (`/proc/stat`).\n\n")
	w("| Relay | Streams | Rounds | Saving | Completed | Added p50 ms | p99 ms | max ms | Upstream's own p99 ms | Latest frame | Starts 10–90 %% ms | TTFE p50 ms | RSS MiB before → peak | Per stream KiB | × kept | CPU cores: relay | load generator + upstream | other work | CPU stolen %% |\n")
	w("|---|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range liveRows(in.live) {
		c := row.cells()
		r := row.rounds[0]
		saving := r.Saving
		if saving == "" {
			saving = "–"
		}
		streams := strconv.Itoa(r.Streams) + ", all at once"
		if r.StartRate > 0 {
			streams = fmt.Sprintf("%d, %g starts/s", r.Streams, r.StartRate)
		}
		f2 := func(f func(liveResult) float64) string {
			return c.of(func(r liveResult) string { return fmt.Sprintf("%.2f", f(r)) })
		}
		machine := func(f func(*machineFigures) string) string {
			return c.of(func(r liveResult) string {
				if r.Machine == nil {
					return "–"
				}
				return f(r.Machine)
			})
		}
		w("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Target, streams, len(row.rounds), saving,
			c.of(func(r liveResult) string { return strconv.Itoa(r.Completed) })+fmt.Sprintf(" of %d", r.Streams),
			c.ms(func(r liveResult) time.Duration { return r.Added.P50 }), c.ms(func(r liveResult) time.Duration { return r.Added.P99 }),
			c.ms(func(r liveResult) time.Duration { return r.Added.Max }), c.ms(func(r liveResult) time.Duration { return r.UpstreamLate.P99 }),
			c.worst.LatestFrame.describe(), c.ms(func(r liveResult) time.Duration { return r.StartSpread }),
			c.ms(func(r liveResult) time.Duration { return r.TTFE.P50 }),
			c.of(func(r liveResult) string { return mib(r.BaseRSSKiB) + " → " + mib(r.Server.PeakRSSKiB) }),
			c.of(func(r liveResult) string {
				if r.RSSPerStreamKiB <= 0 {
					return "–"
				}
				return fmt.Sprintf("%.1f", r.RSSPerStreamKiB)
			}),
			c.of(func(r liveResult) string {
				if r.RSSPerStreamKiB <= 0 {
					return "–"
				}
				return fmt.Sprintf("%.1f", r.keptMultiple())
			}),
			f2(func(r liveResult) float64 { return r.ServerCores }), f2(func(r liveResult) float64 { return r.ClientCores + r.UpstreamCores }),
			machine(func(m *machineFigures) string { return fmt.Sprintf("%.2f", m.OtherCores) }),
			machine(func(m *machineFigures) string { return fmt.Sprintf("%.1f", m.StealPercent) }))
		for _, e := range c.worst.Errors {
			w("|  | | | | error: %s | | | | | | | | | | | | | | |\n", strings.ReplaceAll(e, "|", "/"))
		}
	}
	w("\n")
}

// liveTargetRows judges dify-mock's rows of targetLiveStreams streams on
// their worst round: the lateness on the row started at
// targetLiveStartRate, with the bare relay's beside it and the row
// started all at once as context; the memory on the worse of the two.
func liveTargetRows(in *reportInput) [][3]string {
	rows := liveRows(in.live)
	worstOf := func(mock bool, rate float64) (liveResult, bool) {
		for _, row := range rows {
			r := row.rounds[0]
			if (r.Target == "dify-mock") == mock && r.Streams == targetLiveStreams && r.StartRate == rate && !strings.HasPrefix(r.Saving, "on") {
				return row.worst(), true
			}
		}
		return liveResult{}, false
	}
	withRelay := func(r liveResult, rate float64) string {
		s := ms(r.Added.P99) + " ms"
		if p, ok := worstOf(false, rate); ok {
			s += fmt.Sprintf(" (%s: %s ms)", p.Target, ms(p.Added.P99))
		}
		return s
	}
	paced, havePaced := worstOf(true, targetLiveStartRate)
	atOnce, haveAtOnce := worstOf(true, 0)
	var targets [][3]string
	if havePaced {
		figure := withRelay(paced, targetLiveStartRate)
		if haveAtOnce {
			figure += "; started all at once, not judged: " + withRelay(atOnce, 0)
		}
		targets = append(targets, [3]string{
			fmt.Sprintf("Lateness added by hybrid mode p99 ≤ 5 ms at 1,000 live streams (started %g a second%s)", targetLiveStartRate, paced.together()),
			figure, check(paced.Added.Count > 0 && paced.Added.P99 <= targetLiveAddedP99 && paced.Failed == 0)})
	}
	// Memory: the row with the most per stream (all at once, as a rule).
	var mem []liveResult
	if havePaced {
		mem = append(mem, paced)
	}
	if haveAtOnce {
		mem = append(mem, atOnce)
	}
	if len(mem) == 0 {
		return targets
	}
	m := mem[0]
	for _, x := range mem[1:] {
		if x.RSSPerStreamKiB > m.RSSPerStreamKiB || x.Failed > m.Failed {
			m = x
		}
	}
	targets = append(targets, [3]string{fmt.Sprintf("Memory per live stream ≤ %d× what it keeps", targetLiveKeptMultiple),
		fmt.Sprintf("%.1f KiB per stream, %.1f× the %d B kept", m.RSSPerStreamKiB, m.keptMultiple(), m.KeptBytes),
		check(m.RSSPerStreamKiB > 0 && m.keptMultiple() <= targetLiveKeptMultiple && m.Failed == 0)})
	return targets
}
