package main

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// A run over several servers: `loadgen streams --url A,B,C` shares the
// streams out over one worker process per server (`loadgen streams
// --worker`), and measures them as one run. Every stream is a socket in
// the server and in the client, so a machine whose open-file limit cannot
// be raised past 20,000 (bench/README.md) holds 50,000 streams only as
// several processes on each side. The workers only dial and time their
// streams; they send every stream's outcome back (gob on stdout) and this
// process measures the whole as it measures one server's run: the same
// lateness, ramp, peak-live and timeline code over all the streams, with
// the servers' memory and CPU summed per sample.

// server is one server process of a run.
type server struct {
	url      string
	pid      int    // 0: not sampled
	debugURL string // its profiling listener; "" = no goroutine counts
}

// parseServers reads --url, --pid and --debug-url: comma-separated lists,
// the second and third empty or one entry per URL.
func parseServers(urls, pids, debugURLs string) ([]server, error) {
	us, ps, ds := splitList(urls), splitList(pids), splitList(debugURLs)
	if len(us) == 0 {
		return nil, errors.New("--url is required")
	}
	if len(ps) > 0 && len(ps) != len(us) {
		return nil, fmt.Errorf("--pid has %d entries for %d URLs", len(ps), len(us))
	}
	if len(ds) > 0 && len(ds) != len(us) {
		return nil, fmt.Errorf("--debug-url has %d entries for %d URLs", len(ds), len(us))
	}
	out := make([]server, len(us))
	for i, u := range us {
		out[i].url = u
		if len(ps) > 0 {
			pid, err := strconv.Atoi(ps[i])
			if err != nil || pid < 0 {
				return nil, fmt.Errorf("--pid: %q is not a process id", ps[i])
			}
			out[i].pid = pid
		}
		if len(ds) > 0 {
			out[i].debugURL = strings.TrimRight(ds[i], "/")
		}
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func anyPID(servers []server) bool {
	for _, s := range servers {
		if s.pid > 0 {
			return true
		}
	}
	return false
}

// serversCPU is the CPU time the servers used so far, together.
func serversCPU(servers []server) time.Duration {
	var d time.Duration
	for _, s := range servers {
		d += processCPU(s.pid)
	}
	return d
}

// share is worker k's part of n streams over k workers (the first ones get
// one more when n does not divide).
func share(n, workers, k int) int {
	q, r := n/workers, n%workers
	if k < r {
		return q + 1
	}
	return q
}

// workerSources is worker k's --sources: each worker dials from addresses
// of its own, so that no two pick the same address and port. A count or
// auto becomes consecutive loopback addresses; a list is dealt out in turn.
func workerSources(sources string, streams, workers, k int) (string, error) {
	var all []net.IP
	switch sources {
	case "0":
		return "0", nil
	case "", "auto":
		per, err := parseSources("auto", share(streams, workers, 0))
		if err != nil {
			return "", err
		}
		if per == nil { // the kernel picks, as auto does elsewhere than Linux
			return "0", nil
		}
		all = loopbackSources(len(per) * workers)
	default:
		var err error
		if all, err = parseSources(sources, streams); err != nil {
			return "", err
		}
		if len(all) < workers {
			return "", fmt.Errorf("--sources: %d addresses for %d worker processes (each needs its own)", len(all), workers)
		}
	}
	var mine []string
	for i := k; i < len(all); i += workers {
		mine = append(mine, all[i].String())
	}
	return strings.Join(mine, ","), nil
}

// wireOutcome is a streamOutcome as a worker sends it, its times as
// offsets from the worker's reference (wireHeader, clockFrom).
type wireOutcome struct {
	Lateness          []time.Duration
	LatenessRead      []time.Duration
	Start, First, End time.Duration
	TTFE              time.Duration
	Bytes             int64
	Err               string
	HasErr            bool
}

// wireHeader is what a worker sends before its outcomes: the time it took
// as its reference, for its wall-clock reading.
type wireHeader struct{ Ref time.Time }

// A worker's times travel as offsets on its monotonic clock from a
// reference it takes when it starts, and the parent places them on its own
// monotonic clock from a reference of its own, taken just before it starts
// the workers: only the two references' wall-clock readings are compared.
// A time.Time sent as is keeps only its wall-clock reading, and the wall
// clock may be stepped or slewed while a run lasts (on the VM of
// bench/history.md, "Issue 21, eleventh round", it gained 5 ms a second on
// the monotonic clock, and one run's stream ends moved 25 s): that moved
// the workers' stream starts, first frames and ends, and with them the
// ramp, peak-live and timeline figures, against the parent's.

// noTime stands for the zero time.Time (a stream without a first frame).
const noTime = time.Duration(math.MinInt64)

// sinceRef is t as an offset from ref on the monotonic clock.
func sinceRef(t, ref time.Time) time.Duration {
	if t.IsZero() {
		return noTime
	}
	return t.Sub(ref)
}

// wireClock places a worker's offsets on the parent's clock.
type wireClock struct{ base time.Time }

// clockFrom is the parent's clock for a worker whose reference read
// workerRef on the wall clock, where the parent's own reference is ref.
func clockFrom(ref, workerRef time.Time) wireClock {
	return wireClock{base: ref.Add(workerRef.Sub(ref.Round(0)))}
}

// at is the parent's time for offset d (the zero Time for noTime).
func (c wireClock) at(d time.Duration) time.Time {
	if d == noTime {
		return time.Time{}
	}
	return c.base.Add(d)
}

// runWorker is `loadgen streams --worker`: it runs its streams against its
// one server and writes every outcome to out.
func runWorker(ctx context.Context, o streamsOptions, turn *cassette.RecordedTurn, out, stderr io.Writer) error {
	due := dueOffsets(turn, o.speed)
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	ref := time.Now()
	all, err := dialStreams(ctx, o, turn, due, stderr)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	enc := gob.NewEncoder(w)
	if err := enc.Encode(&wireHeader{Ref: ref.Round(0)}); err != nil {
		return err
	}
	for _, r := range all {
		wo := wireOutcome{Lateness: r.lateness, LatenessRead: r.latenessRead, Start: sinceRef(r.start, ref), First: sinceRef(r.first, ref), End: sinceRef(r.end, ref),
			TTFE: r.ttfe, Bytes: r.bytes}
		if r.err != nil {
			wo.Err, wo.HasErr = r.err.Error(), true
		}
		if err := enc.Encode(&wo); err != nil {
			return err
		}
	}
	return w.Flush()
}

// streamsInWorkers runs o's streams over servers, one worker process each,
// started together, and gathers every stream's outcome.
func streamsInWorkers(ctx context.Context, o streamsOptions, servers []server, stderr io.Writer) ([]streamOutcome, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	n := len(servers)
	// The workers' messages go to stderr whole lines at a time, one
	// worker's at once (os/exec copies each worker's from its own goroutine).
	stderr = &lockedWriter{w: stderr}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		all   = make([]streamOutcome, 0, o.streams)
		errs  = make([]error, n)
		cmds  = make([]*exec.Cmd, n)
		pipes = make([]io.ReadCloser, n)
	)
	for k, sv := range servers {
		src, err := workerSources(o.sources, o.streams, n, k)
		if err != nil {
			return nil, err
		}
		args := []string{"streams", "--worker", "--url", sv.url,
			"--streams", strconv.Itoa(share(o.streams, n, k)),
			"--cassette", o.cassette, "--speed", strconv.FormatFloat(o.speed, 'g', -1, 64),
			"--connect-concurrency", strconv.Itoa(max(1, share(o.connect, n, k))),
			"--sources", src, "--event-loop", o.eventLoop, "--loop-pace", o.loopPace.String(), "--timeout", o.timeout.String()}
		if o.keysFile != "" { // every server serves the same apps
			args = append(args, "--keys-file", o.keysFile)
		}
		if o.startRate > 0 {
			args = append(args, "--start-rate", strconv.FormatFloat(o.startRate*float64(share(o.streams, n, k))/float64(o.streams), 'g', -1, 64))
		}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stderr = stderr
		if pipes[k], err = cmd.StdoutPipe(); err != nil {
			return nil, err
		}
		cmds[k] = cmd
	}
	ref := time.Now() // the parent's side of every worker's clock (clockFrom)
	for k, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			for _, c := range cmds[:k] {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
			return nil, fmt.Errorf("worker %d: %w", k, err)
		}
	}
	for k, cmd := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec := gob.NewDecoder(bufio.NewReader(pipes[k]))
			var (
				mine []streamOutcome
				hdr  wireHeader
			)
			// A worker that failed sends nothing: its exit says why (below).
			hdrErr := dec.Decode(&hdr)
			if hdrErr != nil && !errors.Is(hdrErr, io.EOF) {
				errs[k] = fmt.Errorf("worker %d (%s): reading its clock: %w", k, servers[k].url, hdrErr)
			}
			clock := clockFrom(ref, hdr.Ref)
			for hdrErr == nil {
				var wo wireOutcome
				if err := dec.Decode(&wo); err != nil {
					if !errors.Is(err, io.EOF) {
						errs[k] = fmt.Errorf("worker %d (%s): reading its outcomes: %w", k, servers[k].url, err)
					}
					break
				}
				r := streamOutcome{lateness: wo.Lateness, latenessRead: wo.LatenessRead, start: clock.at(wo.Start), first: clock.at(wo.First), end: clock.at(wo.End),
					ttfe: wo.TTFE, bytes: wo.Bytes}
				if wo.HasErr {
					r.err = errors.New(wo.Err)
				}
				mine = append(mine, r)
			}
			_, _ = io.Copy(io.Discard, pipes[k])
			if err := cmd.Wait(); err != nil && errs[k] == nil {
				errs[k] = fmt.Errorf("worker %d (%s): %w", k, servers[k].url, err)
			}
			if want := share(o.streams, n, k); errs[k] == nil && len(mine) != want {
				errs[k] = fmt.Errorf("worker %d (%s): %d outcomes for %d streams", k, servers[k].url, len(mine), want)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return all, nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
