package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The server's garbage collector over a run, read from outside through the
// profiling listener the bench already starts (serve --pprof-addr): the
// heap profile in its text form (/debug/pprof/heap?debug=1) ends with the
// runtime's MemStats, which hold the number of collections, the last 256
// stop-the-world pauses with when each ended, and the share of the
// process's CPU the collector has used since it started. A run reads it
// once before its first stream and once after its last (ReadMemStats stops
// the world for microseconds, so it is kept out of the measured streams),
// and reports the collections, their pauses and their CPU in between: a
// round slower than its siblings shows whether the collector worked more
// in it (bench/README.md, "How it is measured").

// gcReading is one reading of a server's MemStats.
type gcReading struct {
	at          time.Time // when it was taken (this process's clock)
	numGC       uint32
	pauseNs     []uint64 // the runtime's ring of the last 256 pauses
	lastGC      int64    // unix ns at the end of the last collection; 0 before the first
	cpuFraction float64  // GCCPUFraction: the collector's share of the CPU since the process started, at lastGC
}

// gcFigures is what a run reports about its servers' collectors (summed
// over them when there are several).
type gcFigures struct {
	Collections int `json:"collections"`
	// PauseTotal and PauseMax are the stop-the-world pauses of those
	// collections (the last 256 of each server when there were more).
	PauseTotal time.Duration `json:"pause_total"`
	PauseMax   time.Duration `json:"pause_max"`
	// CPU is the CPU time the collector used (its marking, assists and
	// pauses; idle-time marking left out, as the runtime leaves it out),
	// estimated from GCCPUFraction, the process's start and GOMAXPROCS
	// (taken as this machine's CPU count: the bench sets none).
	CPU time.Duration `json:"cpu"`
	// Cores is CPU over the run's window.
	Cores float64 `json:"cores"`
}

// describe is the figures for a summary line.
func (g *gcFigures) describe() string {
	if g == nil {
		return ""
	}
	return fmt.Sprintf(" gc=%d (pauses %v, max %v, cpu %v)", g.Collections, g.PauseTotal, g.PauseMax, g.CPU.Round(time.Millisecond))
}

// readGC takes a reading of the server behind debugURL.
func readGC(ctx context.Context, c *http.Client, debugURL string) (gcReading, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, debugURL+"/debug/pprof/heap?debug=1", nil)
	if err != nil {
		return gcReading{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return gcReading{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return gcReading{}, &httpStatusError{resp.StatusCode}
	}
	g, err := parseGCReading(resp.Body)
	g.at = time.Now()
	return g, err
}

// parseGCReading reads the "# Name = value" lines of a heap profile's
// text form.
func parseGCReading(r io.Reader) (gcReading, error) {
	var g gcReading
	seen := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20) // PauseNs is one line of 256 numbers
	for sc.Scan() {
		name, value, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), " = ")
		if !ok {
			continue
		}
		var err error
		switch name {
		case "NumGC":
			var n uint64
			n, err = strconv.ParseUint(value, 10, 32)
			g.numGC = uint32(n)
		case "PauseNs":
			for f := range strings.FieldsSeq(strings.Trim(value, "[]")) {
				var p uint64
				if p, err = strconv.ParseUint(f, 10, 64); err != nil {
					break
				}
				g.pauseNs = append(g.pauseNs, p)
			}
		case "LastGC":
			var n uint64
			n, err = strconv.ParseUint(value, 10, 64)
			g.lastGC = int64(n)
		case "GCCPUFraction":
			g.cpuFraction, err = strconv.ParseFloat(value, 64)
		default:
			continue
		}
		if err != nil {
			return g, fmt.Errorf("heap profile: %s: %v", name, err)
		}
		seen++
	}
	if err := sc.Err(); err != nil {
		return g, err
	}
	if seen < 4 || len(g.pauseNs) != 256 {
		return g, fmt.Errorf("heap profile: no MemStats (NumGC, PauseNs, LastGC, GCCPUFraction)")
	}
	return g, nil
}

// gcBetween is what the collector did between readings a and b of one
// server that started at procStart and runs with procs Ps.
func gcBetween(a, b gcReading, procStart time.Time, procs int) gcFigures {
	var f gcFigures
	n := b.numGC - a.numGC
	f.Collections = int(n)
	// PauseNs[(NumGC+255)%256] is the latest; older ones were overwritten.
	for k := range min(n, 256) {
		p := time.Duration(b.pauseNs[(b.numGC-k+255)%256])
		f.PauseTotal += p
		f.PauseMax = max(f.PauseMax, p)
	}
	// GCCPUFraction is the collector's CPU over all CPU time since the
	// start (elapsed × GOMAXPROCS), as of the last collection's end.
	used := func(g gcReading) float64 {
		if g.lastGC == 0 || procStart.IsZero() {
			return 0
		}
		return g.cpuFraction * float64(procs) * time.Unix(0, g.lastGC).Sub(procStart).Seconds()
	}
	if n > 0 {
		f.CPU = max(0, time.Duration((used(b)-used(a))*float64(time.Second)))
	}
	return f
}

// add sums another server's figures into f.
func (f *gcFigures) add(o gcFigures) {
	f.Collections += o.Collections
	f.PauseTotal += o.PauseTotal
	f.PauseMax = max(f.PauseMax, o.PauseMax)
	f.CPU += o.CPU
}

// processStart is when process pid started, from /proc (the zero Time
// where it cannot be read): its start in clock ticks after boot
// (/proc/<pid>/stat, field 22) and the boot time (/proc/stat btime).
func processStart(pid int) time.Time {
	if pid <= 0 {
		return time.Time{}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}
	}
	all, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	return parseProcessStart(string(stat), string(all))
}

func parseProcessStart(pidStat, procStat string) time.Time {
	i := strings.LastIndexByte(pidStat, ')')
	if i < 0 {
		return time.Time{}
	}
	f := strings.Fields(pidStat[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return time.Time{}
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return time.Time{}
	}
	for line := range strings.SplitSeq(procStat, "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}
			}
			return time.Unix(boot, 0).Add(time.Duration(ticks) * time.Second / clockTicks)
		}
	}
	return time.Time{}
}

// gcTrack reads every server's collector before and after a run.
type gcTrack struct {
	servers []server
	client  *http.Client
	before  []gcReading
	start   []time.Time // each server process's start
	err     error
}

func newGCTrack(servers []server) *gcTrack {
	return &gcTrack{servers: servers, client: &http.Client{Timeout: 10 * time.Second}}
}

// begin takes the readings before the run. Without every server's
// profiling listener there are no figures.
func (g *gcTrack) begin(ctx context.Context) {
	for _, sv := range g.servers {
		if sv.debugURL == "" {
			g.err = errNoDebugURL
			return
		}
		r, err := readGC(ctx, g.client, sv.debugURL)
		if err != nil {
			g.err = err
			return
		}
		g.before = append(g.before, r)
		g.start = append(g.start, processStart(sv.pid))
	}
}

var errNoDebugURL = errors.New("no --debug-url")

// end takes the readings after the run and sums the servers' figures; nil
// when a reading failed (said on stderr unless there was no listener).
func (g *gcTrack) end(ctx context.Context, stderr io.Writer) *gcFigures {
	if g.err == nil && len(g.before) == len(g.servers) {
		var sum gcFigures
		for k, sv := range g.servers {
			after, err := readGC(ctx, g.client, sv.debugURL)
			if err != nil {
				g.err = err
				break
			}
			sum.add(gcBetween(g.before[k], after, g.start[k], runtime.NumCPU()))
		}
		if g.err == nil {
			return &sum
		}
	}
	if g.err != errNoDebugURL {
		fmt.Fprintf(stderr, "loadgen: the servers' collector figures: %v\n", g.err)
	}
	return nil
}
