package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/internal/cputime"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// streamsResult is one `loadgen streams` run.
type streamsResult struct {
	Kind     string  `json:"kind"` // "streams"
	Streams  int     `json:"streams"`
	Cassette string  `json:"cassette"`
	Speed    float64 `json:"speed"`
	Frames   int     `json:"frames_per_stream"`
	// RecordedSeconds is the last frame's offset at this speed;
	// FirstFrameSeconds the first frame's (part of every TTFE).
	RecordedSeconds   float64 `json:"recorded_seconds"`
	FirstFrameSeconds float64 `json:"first_frame_seconds"`

	Completed      int      `json:"completed"`
	Failed         int      `json:"failed"`
	Errors         []string `json:"errors,omitempty"` // the first few, for the report
	PeakConcurrent int      `json:"peak_concurrent"`
	RampSeconds    float64  `json:"ramp_seconds"` // until the last stream got its first frame
	// Servers is the number of server processes the streams were shared
	// out over, when there were several (servers.go); the server figures
	// are then their sums.
	Servers int `json:"servers,omitempty"`
	// Keys is the number of API keys the streams were spread over, in
	// turn, when there were several (--keys-file; `make bench` gives each
	// of its apps one key, so it is the number of apps).
	Keys int `json:"keys,omitempty"`
	// StartRate is --start-rate: at most this many starts a second (0 =
	// none but --connect-concurrency).
	StartRate float64 `json:"start_rate,omitempty"`
	// OtherWork is --other-work: the cores a `loadgen burn` kept busy
	// beside the run, on purpose (0 = none). Its Machine figures say what
	// the rest of the machine did, whichever way.
	OtherWork float64 `json:"other_work,omitempty"`
	// Round is this run's number among the rounds of the same row (1, 2,
	// …; 0 = a run on its own): the report shows each figure's median and
	// worst over a row's rounds and judges the targets on the worst.
	Round int `json:"round,omitempty"`

	// Lateness of every received frame (see frameLateness) as it arrived
	// at the load generator's socket (arrival), and of the frames due
	// once every stream had started (the ramp is over). LatenessRead is
	// every frame's lateness taken when the load generator read it
	// instead, which adds its own wake-up (the figure before the
	// thirteenth round of issue 21).
	Lateness       summary `json:"lateness"`
	LatenessSteady summary `json:"lateness_steady"`
	LatenessRead   summary `json:"lateness_read"`
	// TTFE: request sent (dial included) to the first complete frame.
	TTFE summary `json:"ttfe"`
	// Phases: the lateness of the ramp, of all streams live and of the
	// streams ending, each with its latest 100 ms step.
	Phases []phase `json:"phases,omitempty"`

	Bytes         int64   `json:"bytes"`
	WindowSeconds float64 `json:"window_seconds"`
	BytesPerSec   float64 `json:"bytes_per_sec"`

	Server serverFigures `json:"server"`
	// CPU used during the run, in cores (CPU seconds per wall second).
	ServerCores float64 `json:"server_cores"`
	ClientCores float64 `json:"client_cores"`
	// Machine: the CPU time the hypervisor took and other work's, over the
	// run (nil where /proc/stat cannot be read).
	Machine *machineFigures `json:"machine,omitempty"`
	// GC is what the servers' collectors did over the run (gcstats.go;
	// nil without their profiling listeners).
	GC    *gcFigures `json:"gc,omitempty"`
	Label string     `json:"label,omitempty"`
}

type streamsOptions struct {
	url, cassette, debugURL, out, profile, label, sources string
	eventLoop, timeline, pids, keysFile                   string
	timelineStep, loopPace                                time.Duration
	streams, connect, round                               int
	worker                                                bool // runWorker (servers.go)
	speed, startRate, otherWork                           float64
	profileFor, timeout                                   time.Duration
}

func runStreams(ctx context.Context, args []string, stderr io.Writer) error {
	var o streamsOptions
	fs := flag.NewFlagSet("streams", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.url, "url", "", "mock API base URL, e.g. http://127.0.0.1:5001/v1 (required); several, comma-separated, share the streams out over one worker process each (servers.go)")
	fs.IntVar(&o.streams, "streams", 1, "concurrent streams")
	fs.StringVar(&o.cassette, "cassette", "tool-use", "built-in cassette to replay (its first turn)")
	fs.Float64Var(&o.speed, "speed", 1, "replay speed, sent as X-Dify-Mock-Speed; offsets are divided by it")
	fs.StringVar(&o.pids, "pid", "", "server process id, for RSS and threads from /proc (empty = skip); one per --url")
	fs.StringVar(&o.debugURL, "debug-url", "", "the server's profiling listener (serve --pprof-addr), for goroutines and profiles; one per --url")
	fs.IntVar(&o.connect, "connect-concurrency", 1000, "requests waiting for their first frame at once, shared out over the worker processes (a ramp, so the accept queue never overflows)")
	fs.BoolVar(&o.worker, "worker", false, "run as one of the worker processes of a run over several servers (internal)")
	fs.StringVar(&o.profile, "profile", "", "save a CPU profile of the server to this file (needs --debug-url)")
	fs.DurationVar(&o.profileFor, "profile-seconds", 10*time.Second, "length of the CPU profile")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up after this long (default: the turn's length + 2m + 10ms per stream)")
	fs.StringVar(&o.out, "out", "", "append the JSON result to this file (default stdout)")
	fs.StringVar(&o.label, "label", "", "free-form label stored with the result")
	fs.StringVar(&o.eventLoop, "event-loop", "auto", "who reads the stream bodies: on (one event loop for all, Linux), off (each stream's goroutine) or auto (the loop from 2,000 streams: it costs the client less CPU under load, and a goroutine wakes a little sooner when there are few)")
	fs.DurationVar(&o.loopPace, "loop-pace", defaultLoopPace, "the event loop's least time from one wake-up to its next wait, so a busy run's frames are read in batches instead of waking the loop (and costing the server's write a wake-up) once each; a frame's lateness is taken at its arrival on the socket, and its lateness as read includes up to this (0 = wake per arrival)")
	fs.StringVar(&o.sources, "sources", "auto", "local addresses to dial from, each connection from a port the client picks: a count N (127.0.0.2 … 127.0.0.N+1; 0 = the kernel picks address and port), a comma-separated list, or auto (on Linux one loopback address per 50,000 streams; elsewhere the kernel's choice up to 20,000 streams)")
	fs.StringVar(&o.timeline, "timeline", "", "write the run's lateness over time to this file (tab-separated: per step, the frames due, the streams that started and ended, lateness p99 and max)")
	fs.DurationVar(&o.timelineStep, "timeline-step", 100*time.Millisecond, "the timeline's step")
	fs.StringVar(&o.keysFile, "keys-file", "", "spread the streams over the API keys in this file, one per line (# comments), in turn: one app's key each with dify-mock serve --apps (default: the one key app-bench); a file, not a flag, so the keys stay out of the process list")
	fs.Float64Var(&o.startRate, "start-rate", 0, "start at most this many streams a second, evenly spaced, besides --connect-concurrency (0 = no such bound: each stream starts as soon as one of the waiting ones has its first frame, so a run starts in cohorts that also end together); shared out over the worker processes")
	fs.Float64Var(&o.otherWork, "other-work", 0, "the cores a `loadgen burn` keeps busy beside this run, stored with the result: the row says so, no target but the comparison with the same row without it judges it")
	fs.IntVar(&o.round, "round", 0, "this run's round among the runs of the same row (1, 2, …), stored with the result: the report shows each figure's median and worst over the rounds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.loopPace < 0 {
		return errors.New("--loop-pace must not be negative")
	}
	if o.timelineStep <= 0 {
		return errors.New("--timeline-step must be positive")
	}
	if o.round < 0 || o.startRate < 0 || o.otherWork < 0 {
		return errors.New("--round, --start-rate and --other-work must not be negative")
	}
	if o.url == "" || o.streams < 1 || o.speed <= 0 || o.connect < 1 {
		return errors.New("--url is required; --streams, --speed and --connect-concurrency must be positive")
	}
	if o.profile != "" && o.debugURL == "" {
		return errors.New("--profile needs --debug-url")
	}
	turn, err := builtinTurn(o.cassette)
	if err != nil {
		return err
	}
	if o.worker {
		return runWorker(ctx, o, turn, os.Stdout, stderr)
	}
	res, err := streams(ctx, o, turn, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "streams=%d completed=%d failed=%d lateness p50=%v p99=%v max=%v (after the ramp: p99=%v max=%v) ttfe p50=%v p99=%v peakRSS=%dMiB goroutines=%d cores server=%.2f client=%.2f%s%s\n",
		res.Streams, res.Completed, res.Failed, res.Lateness.P50, res.Lateness.P99, res.Lateness.Max,
		res.LatenessSteady.P99, res.LatenessSteady.Max,
		res.TTFE.P50, res.TTFE.P99, res.Server.PeakRSSKiB>>10, res.Server.PeakGoroutines, res.ServerCores, res.ClientCores, res.Machine.describe(), res.GC.describe())
	return appendResult(o.out, res)
}

// builtinTurn is the first recorded turn of a built-in cassette.
func builtinTurn(name string) (*cassette.RecordedTurn, error) {
	set, err := cassette.LoadFS(cassettes.FS(), "built-in cassettes")
	if err != nil {
		return nil, err
	}
	c, ok := set.Get(name)
	if !ok {
		return nil, fmt.Errorf("no built-in cassette %q (have %s)", name, strings.Join(set.Names, ", "))
	}
	if len(c.Turns) == 0 || c.Turns[0].Status != http.StatusOK || len(c.Turns[0].Frames) == 0 {
		return nil, fmt.Errorf("cassette %q does not start with a streamed turn", name)
	}
	return c.Turns[0], nil
}

// frameLateness returns, for one stream, how late each received frame was
// against its recorded offset. arrivals[i] is when frame i was complete,
// measured from when the request was sent; due[i] is its recorded offset
// divided by the speed. The client cannot see when the server started the
// replay, so the start is taken as the earliest arrival minus its due time:
// lateness is then ≥ 0, the least-late frame has 0 (in practice frame 0,
// which the server writes without a timer), and a stream whose every frame
// is late by the same amount shows that delay in time-to-first-event, not
// here. Frames match the recording by index.
//
// It also returns the estimated start (relative like arrivals). The
// lateness is written over arrivals, which the caller no longer needs: a
// stream's end then allocates nothing in the load generator, whose
// collections (each marking every stream's goroutine) would otherwise
// fall on the steps in which a cohort of streams ends, the busiest of a
// run.
func frameLateness(arrivals, due []time.Duration) ([]time.Duration, time.Duration) {
	n := min(len(arrivals), len(due))
	if n == 0 {
		return nil, 0
	}
	anchor := arrivals[0] - due[0]
	for i := 1; i < n; i++ {
		anchor = min(anchor, arrivals[i]-due[i])
	}
	out := arrivals[:n]
	for i := range n {
		out[i] -= due[i] + anchor
	}
	return out, anchor
}

// streamOutcome is what one stream reports back.
type streamOutcome struct {
	lateness     []time.Duration // by frame index, at the socket (arrival)
	latenessRead []time.Duration // the same, when the load generator read each frame
	start        time.Time       // estimated replay start (see frameLateness)
	first        time.Time       // the first frame's arrival; zero without one
	ttfe         time.Duration
	bytes        int64
	end          time.Time
	err          error
}

func streams(ctx context.Context, o streamsOptions, turn *cassette.RecordedTurn, stderr io.Writer) (*streamsResult, error) {
	due := dueOffsets(turn, o.speed)
	length := due[len(due)-1]
	if o.timeout == 0 {
		// The ramp is part of the run: on a starved machine 18,500 streams
		// took over two minutes to start, and a fixed allowance cut the
		// last of them mid-stream.
		o.timeout = length + 2*time.Minute + time.Duration(o.streams)*10*time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	servers, err := parseServers(o.url, o.pids, o.debugURL)
	if err != nil {
		return nil, err
	}
	if o.profile != "" && len(servers) > 1 {
		return nil, errors.New("--profile takes one server")
	}
	keys, err := readKeys(o.keysFile)
	if err != nil {
		return nil, err
	}
	// Before the first stream, so that reading it (ReadMemStats stops the
	// world) does not touch a measured frame.
	gc := newGCTrack(servers)
	gc.begin(ctx)

	smp := newSampler(servers...)
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() { defer sampling.Done(); smp.run(sctx, 250*time.Millisecond) }()

	profileErr := make(chan error, 1)
	if o.profile != "" {
		go func() {
			// Start once the ramp is well under way, so the profile shows
			// the steady state rather than connection setup.
			select {
			case <-time.After(min(2*time.Second, length/4)):
			case <-ctx.Done():
			}
			profileErr <- fetchProfile(ctx, servers[0].debugURL, o.profileFor, o.profile)
		}()
	}

	fmt.Fprintf(stderr, "loadgen: %d streams of %q (%d frames, %v at speed %g) against %s\n",
		o.streams, turn.Request.Query, len(due), length, o.speed, o.url)
	start := time.Now()
	serverCPU0, clientCPU0 := serversCPU(servers), cputime.Self()+cputime.Children()
	machine0, haveMachine := readMachineCPU()
	steal := newStealTrack(start, o.timelineStep)
	sampling.Add(1)
	go func() { defer sampling.Done(); steal.run(sctx) }()
	var all []streamOutcome
	if len(servers) == 1 {
		all, err = dialStreams(ctx, o, turn, due, stderr)
	} else {
		all, err = streamsInWorkers(ctx, o, servers, stderr)
	}
	if err != nil {
		return nil, err
	}
	stopSampling()
	sampling.Wait()

	res := &streamsResult{Kind: "streams", Streams: o.streams, Cassette: o.cassette, Speed: o.speed,
		Frames: len(due), RecordedSeconds: length.Seconds(), FirstFrameSeconds: due[0].Seconds(), Label: o.label, Round: o.round}
	if len(servers) > 1 {
		res.Servers = len(servers)
	}
	if len(keys) > 1 {
		res.Keys = len(keys)
	}
	res.StartRate, res.OtherWork = o.startRate, o.otherWork
	res.GC = gc.end(ctx, stderr)
	var lateness, latenessRead, ttfe durations
	var end, rampEnd time.Time // rampEnd: the last stream's first frame; zero when none came
	for _, r := range all {
		if r.end.After(end) {
			end = r.end
		}
		if r.first.After(rampEnd) {
			rampEnd = r.first
		}
		res.Bytes += r.bytes
		lateness = append(lateness, r.lateness...)
		latenessRead = append(latenessRead, r.latenessRead...)
		if r.ttfe > 0 {
			ttfe = append(ttfe, r.ttfe)
		}
		if r.err != nil {
			res.Failed++
			res.Errors = keepError(res.Errors, r.err)
			continue
		}
		res.Completed++
	}
	res.WindowSeconds = end.Sub(start).Seconds()
	if res.WindowSeconds > 0 {
		if anyPID(servers) {
			res.ServerCores = (serversCPU(servers) - serverCPU0).Seconds() / res.WindowSeconds
		}
		res.ClientCores = (cputime.Self() + cputime.Children() - clientCPU0).Seconds() / res.WindowSeconds
		if m1, ok := readMachineCPU(); ok && haveMachine {
			res.Machine = machineOver(machine0, m1, res.WindowSeconds, res.ServerCores, res.ClientCores)
		}
		if res.GC != nil {
			res.GC.Cores = res.GC.CPU.Seconds() / res.WindowSeconds
		}
	}
	res.Server = smp.figures()
	res.Lateness, res.LatenessRead, res.TTFE = lateness.summarize(), latenessRead.summarize(), ttfe.summarize()
	res.PeakConcurrent = peakLive(all)
	if !rampEnd.IsZero() {
		res.RampSeconds = rampEnd.Sub(start).Seconds()
		var steady durations
		for _, r := range all {
			for i, l := range r.lateness {
				if r.start.Add(due[i]).After(rampEnd) {
					steady = append(steady, l)
				}
			}
		}
		res.LatenessSteady = steady.summarize()
	}
	rows := timeline(all, due, start, o.timelineStep)
	steal.fill(rows)
	var firstEnd time.Time
	for _, r := range all {
		if r.err == nil && (firstEnd.IsZero() || r.end.Before(firstEnd)) {
			firstEnd = r.end
		}
	}
	res.Phases = phases(all, due, start, rampEnd, firstEnd, rows, o.timelineStep)
	if o.timeline != "" {
		if err := writeTimeline(o.timeline, rows, o.timelineStep); err != nil {
			return nil, fmt.Errorf("--timeline: %w", err)
		}
	}
	if res.WindowSeconds > 0 {
		res.BytesPerSec = float64(res.Bytes) / res.WindowSeconds
	}
	if o.profile != "" {
		if err := <-profileErr; err != nil {
			fmt.Fprintf(stderr, "loadgen: CPU profile failed: %v\n", err)
		}
	}
	return res, nil
}

// dueOffsets is when each frame of turn is due at speed, from the start.
func dueOffsets(turn *cassette.RecordedTurn, speed float64) []time.Duration {
	due := make([]time.Duration, len(turn.Frames))
	for i, f := range turn.Frames {
		due[i] = time.Duration(float64(f.Offset) / speed)
	}
	return due
}

// dialStreams runs o.streams streams against o.url from this process, at
// most o.connect of them waiting for their first frame at once, and
// returns what each reported.
func dialStreams(ctx context.Context, o streamsOptions, turn *cassette.RecordedTurn, due []time.Duration, stderr io.Writer) ([]streamOutcome, error) {
	// Streams are spread over a few end users, as a frontend's would be.
	const users = 64
	bodies := make([][]byte, users)
	for u := range users {
		b, err := json.Marshal(map[string]any{
			"query": turn.Request.Query, "inputs": turn.Request.Inputs, "response_mode": "streaming",
			"user": "bench-" + strconv.Itoa(u),
		})
		if err != nil {
			return nil, err
		}
		bodies[u] = b
	}
	keys, err := readKeys(o.keysFile)
	if err != nil {
		return nil, err
	}
	// Every stream has its own connection, as browsers and the provider do.
	sources, err := parseSources(o.sources, o.streams)
	if err != nil {
		return nil, err
	}
	hdr := http.Header{} // the API key goes in per stream (target.request)
	hdr.Set("Content-Type", "application/json")
	hdr.Set("X-Dify-Mock-Cassette", o.cassette)
	hdr.Set("X-Dify-Mock-Speed", strconv.FormatFloat(o.speed, 'g', -1, 64))
	endpoint := strings.TrimRight(o.url, "/") + "/chat-messages"
	target, err := newSSETarget(endpoint, hdr, sources)
	if err != nil {
		return nil, err
	}
	if target.loop, err = parseEventLoop(o.eventLoop, o.streams); err != nil {
		return nil, err
	}
	target.loopPace = o.loopPace
	// Stream i is user i mod 64's with key i mod len(keys): each key (app)
	// gets an equal share, and within it the users.
	requests := make([][]byte, len(keys)*users)
	for k, key := range keys {
		for u, b := range bodies {
			requests[k*users+u] = target.request(key, b)
		}
	}
	fmt.Fprintf(stderr, "loadgen: %d streams to %s from %d source address(es) with %d API key(s)\n", o.streams, endpoint, max(1, len(sources)), len(keys))
	sem := make(chan struct{}, o.connect)
	results := make(chan streamOutcome, o.streams)
	first := time.Now()
	for i := range o.streams {
		req := requests[(i%len(keys))*users+i%users]
		notBefore := pacedStart(first, i, o.startRate)
		go func() { results <- oneStream(ctx, target, req, due, sem, notBefore) }()
	}
	all := make([]streamOutcome, 0, o.streams)
	for range o.streams {
		all = append(all, <-results)
	}
	return all, nil
}

// readKeys reads the API keys of --keys-file: one per line, blank lines
// and # comments left out. Without a file, every stream uses app-bench
// (any app- key reaches a mock of one app without keys).
func readKeys(path string) ([]string, error) {
	if path == "" {
		return []string{"app-bench"}, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--keys-file: %w", err)
	}
	var keys []string
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// A key goes into a request header as is: no key is echoed here,
		// the file may hold real ones.
		if strings.ContainsAny(line, " \t\r") {
			return nil, fmt.Errorf("--keys-file %s: a line holds white space (one key per line)", path)
		}
		keys = append(keys, line)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("--keys-file %s: no keys", path)
	}
	return keys, nil
}

// peakLive is the most streams that were live at once: a stream is live
// from its first frame to its end.
func peakLive(all []streamOutcome) int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(all))
	for _, r := range all {
		if !r.first.IsZero() {
			edges = append(edges, edge{r.first, 1}, edge{r.end, -1})
		}
	}
	// Ends before starts at the same instant: a stream that ended as
	// another began was not live with it.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	live, peak := 0, 0
	for _, e := range edges {
		live += e.delta
		peak = max(peak, live)
	}
	return peak
}

// oneStream sends one chat request and times every frame, not before
// notBefore. sem bounds how many requests wait for their first frame at
// once.
func oneStream(ctx context.Context, target *sseTarget, req []byte, due []time.Duration, sem chan struct{}, notBefore time.Time) (out streamOutcome) {
	if err := waitUntil(ctx, notBefore); err != nil {
		out.err, out.end = err, time.Now()
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
		out.end = time.Now()
		return out
	}
	defer conn.Close()
	arrivals := make([]time.Duration, 0, len(due))
	reads := make([]time.Duration, 0, len(due)) // when the load generator read each frame
	err = target.stream(ctx, conn, req, func(at arrival, size int) {
		out.bytes += int64(size)
		if len(arrivals) == 0 {
			out.ttfe = at.socket.Sub(sent)
			out.first = at.socket
			release()
		}
		arrivals = append(arrivals, at.socket.Sub(sent))
		reads = append(reads, at.read.Sub(sent))
	})
	out.end = time.Now()
	if err != nil {
		var st *errStatus
		if errors.As(err, &st) {
			out.err = st
		} else {
			out.err = fmt.Errorf("after %d frames: %w", len(arrivals), err)
		}
	}
	var anchor time.Duration
	out.lateness, anchor = frameLateness(arrivals, due)
	out.latenessRead, _ = frameLateness(reads, due)
	out.start = sent.Add(anchor)
	if out.err == nil && len(arrivals) != len(due) {
		out.err = fmt.Errorf("received %d frames, the recording has %d", len(arrivals), len(due))
	}
	return out
}

// pacedStart is when stream i of a run that began at first may start with
// --start-rate rate: i/rate seconds in, evenly spaced (rate 0: at once).
func pacedStart(first time.Time, i int, rate float64) time.Time {
	if rate <= 0 {
		return first
	}
	return first.Add(time.Duration(i) * time.Duration(float64(time.Second)/rate))
}

// waitUntil waits until t (--start-rate's spacing) or ctx's end.
func waitUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitSlot takes one of sem's slots (the requests waiting for their first
// frame at once), or fails when ctx ends first. release gives the slot back
// once, however often it is called: at the first frame, and again (a no-op)
// when the stream ends.
func waitSlot(ctx context.Context, sem chan struct{}) (release func(), err error) {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	holding := true
	return func() {
		if holding {
			<-sem
			holding = false
		}
	}, nil
}

// maxErrors is how many of a run's failures a result keeps, for the report.
const maxErrors = 5

// keepError appends err to errs while it holds fewer than maxErrors.
func keepError(errs []string, err error) []string {
	if len(errs) < maxErrors {
		errs = append(errs, err.Error())
	}
	return errs
}
