package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Targets from issue 7.
const (
	targetLateP99At5k    = 10 * time.Millisecond
	targetLateMaxAt5k    = 50 * time.Millisecond
	targetLateP99At1     = 2 * time.Millisecond
	targetRSSAt10kMB     = 400
	targetRPS            = 5000
	targetHTTPP99        = 20 * time.Millisecond
	targetAnnotationP99  = 200 * time.Millisecond
	targetStreamsLarge   = 5000
	targetStreamsLargest = 10000
)

type reportInput struct {
	streams     []streamsResult
	http        []httpResult
	provider    []providerResult
	peerHTTP    []peerHTTPResult
	peerStreams []peerStreamResult
	live        []liveResult
}

func readResults(r io.Reader) (*reportInput, error) {
	in := &reportInput{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var kind struct{ Kind string }
		if err := json.Unmarshal(b, &kind); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		var err error
		switch kind.Kind {
		case "streams":
			var v streamsResult
			err = json.Unmarshal(b, &v)
			in.streams = append(in.streams, v)
		case "http":
			var v httpResult
			err = json.Unmarshal(b, &v)
			in.http = append(in.http, v)
		case "provider":
			var v providerResult
			err = json.Unmarshal(b, &v)
			in.provider = append(in.provider, v)
		case "peers-http":
			var v peerHTTPResult
			err = json.Unmarshal(b, &v)
			in.peerHTTP = append(in.peerHTTP, v)
		case "peers-stream":
			var v peerStreamResult
			err = json.Unmarshal(b, &v)
			in.peerStreams = append(in.peerStreams, v)
		case "live":
			var v liveResult
			err = json.Unmarshal(b, &v)
			in.live = append(in.live, v)
		default:
			err = fmt.Errorf("unknown kind %q", kind.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
	}
	return in, sc.Err()
}

func runReport(_ context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	inPath := fs.String("in", "", "results file written by the other subcommands (required)")
	outPath := fs.String("out", "", "also write the markdown here (e.g. bench/results.md)")
	var notes, profiles listFlag
	fs.Var(&notes, "note", "a line for the header, e.g. \"Commit: abc123\" (repeatable)")
	fs.Var(&profiles, "profile-summary", "TITLE=FILE: a `go tool pprof -top` excerpt to include (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *inPath == "" {
		return errors.New("--in is required")
	}
	f, err := os.Open(*inPath)
	if err != nil {
		return err
	}
	in, err := readResults(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", *inPath, err)
	}
	var ps []profileSummary
	for _, p := range profiles {
		title, file, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("--profile-summary %q: want TITLE=FILE", p)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		ps = append(ps, profileSummary{title, string(b)})
	}
	md := renderReport(in, describeMachine(runtime.NumCPU(), runtime.Version()), notes, ps)
	fmt.Print(md)
	if *outPath != "" {
		return os.WriteFile(*outPath, []byte(md), 0o644)
	}
	return nil
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type profileSummary struct{ title, text string }

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond))
}

func mib(kib int64) string {
	if kib == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(kib)/1024)
}

func orDash(n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprint(n)
}

func check(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func renderReport(in *reportInput, m machine, notes []string, profiles []profileSummary) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Benchmark results\n\n")
	w("Written by `make bench` (scripts/bench.sh); how to read and reproduce it: [README.md](README.md).\n\n")
	w("| Machine | |\n|---|---|\n")
	w("| CPU | %s, %d logical CPUs (nproc) |\n| Memory | %s GiB |\n| OS | %s |\n| Go | %s |\n", m.CPUModel, m.CPUs, m.MemoryGiB, m.Kernel, m.GoVersion)
	for _, n := range notes {
		k, v, ok := strings.Cut(n, ":")
		if !ok {
			k, v = n, ""
		}
		w("| %s | %s |\n", strings.TrimSpace(k), strings.TrimSpace(v))
	}
	w("\n")

	if len(in.streams) > 0 {
		s0 := in.streams[0]
		rows := streamsRows(in.streams)
		w("## Replay fidelity and scale\n\n")
		w("`%s` replayed at speed %g (%d frames over %.1f s per stream), N streams at once, each on its own connection, "+
			"from the separate load process (at most 1,000 waiting for their first frame at a time, so the ramp takes a moment); "+
			"rows with another cassette or speed say so.\n\n", s0.Cassette, s0.Speed, s0.Frames, s0.RecordedSeconds)
		w("- **Rounds**: each row ran as many times as its *Rounds* column says, each round on freshly started servers; with several, " +
			"every cell is *the median / the worst* of the rounds' figures (the worst being the highest lateness, memory, CPU or collector figure " +
			"and the fewest completed or live), and the targets below are judged on the worst.\n")
		w("- **Lateness**: every frame's arrival at the load generator's socket (the kernel's receive time) against its recorded offset, relative to the stream's own start " +
			"(README: how it is measured); *after the ramp* counts only frames due once all N streams were live; *as read* takes each frame when the load generator read it instead, its own wake-up included.\n")
		w("- **TTFE**: request sent (connection set-up included) to the first complete frame, whose recorded offset is %.0f ms.\n", s0.FirstFrameSeconds*1000)
		w("- **RSS**: the server's peak VmRSS, sampled every 250 ms from /proc; goroutines and threads likewise (goroutines through the server's loopback profiling listener, `--pprof-addr`). " +
			"**CPU**: cores used on average over the run by the server and by the load generator; *other work* is the rest of the machine's busy time; " +
			"*stolen* is the share of the CPUs' time that the hypervisor gave to other machines (`/proc/stat`: every frame due then is late by it). " +
			"**GC**: the server's collections during the run, their stop-the-world pauses together, and the CPU the collector used, in cores over the run " +
			"(from the runtime's MemStats through the profiling listener, read before the first stream and after the last).\n\n")
		w("| Streams | Rounds | Completed | Ramp s | Lateness p50 ms | p99 ms | max ms | After the ramp: p99 ms | max ms | As read: p99 ms | max ms | TTFE p50 ms | TTFE p99 ms |\n")
		w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, row := range rows {
			c := row.cells()
			w("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				rowCell(row, s0), len(row.rounds), c.of(func(r streamsResult) string { return strconv.Itoa(r.Completed) }),
				c.of(func(r streamsResult) string { return fmt.Sprintf("%.1f", r.RampSeconds) }),
				c.ms(func(r streamsResult) time.Duration { return r.Lateness.P50 }), c.ms(func(r streamsResult) time.Duration { return r.Lateness.P99 }),
				c.ms(func(r streamsResult) time.Duration { return r.Lateness.Max }),
				c.ms(func(r streamsResult) time.Duration { return r.LatenessSteady.P99 }), c.ms(func(r streamsResult) time.Duration { return r.LatenessSteady.Max }),
				c.ms(func(r streamsResult) time.Duration { return r.LatenessRead.P99 }), c.ms(func(r streamsResult) time.Duration { return r.LatenessRead.Max }),
				c.ms(func(r streamsResult) time.Duration { return r.TTFE.P50 }), c.ms(func(r streamsResult) time.Duration { return r.TTFE.P99 }))
		}
		w("\n| Streams | Peak live | Server RSS MiB | Goroutines | Threads | Server CPU cores | Load generator CPU cores | Other work cores | CPU stolen %% | GC collections | GC pauses ms | GC CPU cores | Throughput KiB/s |\n")
		w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, row := range rows {
			c := row.cells()
			machine := func(f func(*machineFigures) string) string {
				return c.of(func(r streamsResult) string {
					if r.Machine == nil {
						return "–"
					}
					return f(r.Machine)
				})
			}
			gc := func(f func(streamsResult) string) string {
				return c.of(func(r streamsResult) string {
					if r.GC == nil {
						return "–"
					}
					return f(r)
				})
			}
			w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				rowCell(row, s0), c.of(func(r streamsResult) string { return strconv.Itoa(r.PeakConcurrent) }),
				c.of(func(r streamsResult) string { return mib(r.Server.PeakRSSKiB) }),
				c.of(func(r streamsResult) string { return orDash(r.Server.PeakGoroutines) }),
				c.of(func(r streamsResult) string { return orDash(r.Server.PeakThreads) }),
				c.of(func(r streamsResult) string { return fmt.Sprintf("%.2f", r.ServerCores) }),
				c.of(func(r streamsResult) string { return fmt.Sprintf("%.2f", r.ClientCores) }),
				machine(func(m *machineFigures) string { return fmt.Sprintf("%.2f", m.OtherCores) }),
				machine(func(m *machineFigures) string { return fmt.Sprintf("%.1f", m.StealPercent) }),
				gc(func(r streamsResult) string { return strconv.Itoa(r.GC.Collections) }),
				gc(func(r streamsResult) string { return ms(r.GC.PauseTotal) }),
				gc(func(r streamsResult) string { return fmt.Sprintf("%.2f", r.GC.Cores) }),
				c.of(func(r streamsResult) string { return fmt.Sprintf("%.0f", r.BytesPerSec/1024) }))
		}
		phaseRows := 0
		for _, row := range rows {
			if r := row.worstRound(); r.Streams >= 1000 {
				phaseRows += len(r.Phases)
			}
		}
		if phaseRows > 0 {
			w("\n**When** (from 1,000 streams; of each row's round with the highest lateness p99): the lateness of the frames due in each phase of a run, and the phase's latest 100 ms step " +
				"(`loadgen streams --timeline` writes every step; `BENCH_KEEP=1` keeps them).\n\n")
			w("| Streams | Phase | Frames | p99 ms | max ms | Latest step at s | Its p99 ms | Streams ending in it | CPU stolen in it ms |\n")
			w("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, row := range rows {
				r := row.worstRound()
				if r.Streams < 1000 {
					continue
				}
				for _, ph := range r.Phases {
					stolen := "–"
					if r.Machine != nil {
						stolen = fmt.Sprintf("%.0f", float64(ph.Worst.Stolen)/float64(time.Millisecond))
					}
					w("| %s | %s | %d | %s | %s | %.1f | %s | %d | %s |\n", rowCell(row, s0), ph.Name, ph.Late.Count, ms(ph.Late.P99), ms(ph.Late.Max),
						ph.Worst.At.Seconds(), ms(ph.Worst.Late.P99), ph.Worst.Ends, stolen)
				}
			}
		}
		for _, row := range rows {
			for _, r := range row.rounds {
				if r.Failed > 0 {
					w("\n%d of %d streams failed in %s%s; first errors: %s\n", r.Failed, r.Streams, rowCell(row, s0), roundName(r), strings.Join(r.Errors, "; "))
				}
			}
		}
		w("\n")
	}

	if len(in.http) > 0 {
		h0 := in.http[0]
		w("## Non-streaming endpoints\n\n")
		w("Closed loop, %d requests in flight over keep-alive connections, %.0f s measured after a warm-up.\n\n", h0.Concurrency, h0.Seconds)
		w("| Route | Requests/s | p50 ms | p99 ms | max ms | Errors |\n|---|---:|---:|---:|---:|---:|\n")
		for _, r := range in.http {
			w("| `%s` | %.0f | %s | %s | %s | %d |\n", r.Route, r.RPS, ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max), r.Errors)
		}
		for _, r := range in.http {
			if r.Errors > 0 {
				w("\n`%s`: %d errors, first: %s\n", r.Route, r.Errors, r.FirstError)
			}
		}
		w("\n")
	}

	if len(in.provider) > 0 {
		w("## Provider: `terraform plan` (refresh)\n\n")
		w("N `dify_conversation` resources in state (created by `terraform apply` first), then `terraform plan -detailed-exitcode` (no changes); requests counted by a proxy in front of the mock. %s.\n\n", in.provider[0].Terraform)
		w("| Conversations | Plan wall time s | Requests | Requests by route | Apply wall time s | Apply requests |\n|---:|---:|---:|---|---:|---:|\n")
		for _, r := range in.provider {
			w("| %d | %.2f | %d | %s | %.2f | %d |\n", r.Conversations, r.PlanSeconds, r.PlanRequests, routes(r.PlanByRoute), r.ApplySeconds, r.ApplyRequests)
		}
		w("\n")
	}

	renderPeers(&b, in)
	renderLive(&b, in)

	if rows := targetRows(in); len(rows) > 0 {
		w("## Targets (issue 7)\n\n| Target | Measured | |\n|---|---|---|\n")
		for _, r := range rows {
			w("| %s | %s | %s |\n", r[0], r[1], r[2])
		}
		w("\n")
	}
	if rows := liveTargetRows(in); len(rows) > 0 {
		w("## Targets (the live lane)\n\n| Target | Measured | |\n|---|---|---|\n")
		for _, r := range rows {
			w("| %s | %s | %s |\n", r[0], r[1], r[2])
		}
		w("\n")
	}
	if rows := peerTargetRows(in); len(rows) > 0 {
		w("## Targets (issues 15 and 21)\n\n| Target | Measured | |\n|---|---|---|\n")
		for _, r := range rows {
			w("| %s | %s | %s |\n", r[0], r[1], r[2])
		}
		w("\n")
	}

	for _, p := range profiles {
		w("## CPU profile: %s\n\n```\n%s\n```\n\n", p.title, strings.TrimRight(p.text, "\n"))
	}
	return b.String()
}

// asRead is a lateness target's figure as the load generator read the
// frames (streamsResult.LatenessRead), for a measured column; "" for
// results from before it was kept.
func asRead(r streamsResult) string {
	if r.LatenessRead.Count == 0 {
		return ""
	}
	return " (as read " + ms(r.LatenessRead.P99) + " ms)"
}

// streamsCell is a streams row's count, with the number of server
// processes when the run was shared out over several (servers.go).
func streamsCell(r streamsResult) string {
	if r.Servers > 1 {
		return fmt.Sprintf("%d (%d processes)", r.Streams, r.Servers)
	}
	return strconv.Itoa(r.Streams)
}

// rowCell is a row's first cell: the count and processes (streamsCell),
// the API keys (apps) when the streams were spread over several, and the
// cassette and speed where they are not those of first (the table's
// first row, which its heading names).
func rowCell(row streamsRow, first streamsResult) string {
	r := row.rounds[0]
	c := streamsCell(r)
	if r.Keys > 1 {
		c += fmt.Sprintf(" over %d apps", r.Keys)
	}
	if r.Cassette != first.Cassette || r.Speed != first.Speed {
		c += fmt.Sprintf(", `%s` at speed %g", r.Cassette, r.Speed)
	}
	if r.StartRate > 0 {
		c += fmt.Sprintf(", %g starts/s", r.StartRate)
	}
	if r.OtherWork > 0 {
		c += fmt.Sprintf(", beside %g cores of other work", r.OtherWork)
	}
	return c
}

// roundName is " (round k)" for a result that was one of several rounds.
func roundName(r streamsResult) string {
	if r.Round > 0 {
		return fmt.Sprintf(" (round %d)", r.Round)
	}
	return ""
}

// rowCells renders a row's figures (of any section): one round's as they
// are, several as "median / worst".
type rowCells[R any] struct {
	med, worst R
	several    bool
}

func (r streamsRow) cells() rowCells[streamsResult] {
	return rowCells[streamsResult]{med: r.median(), worst: r.worst(), several: len(r.rounds) > 1}
}

func (c rowCells[R]) of(f func(R) string) string {
	if !c.several {
		return f(c.med)
	}
	return f(c.med) + " / " + f(c.worst)
}

func (c rowCells[R]) ms(f func(R) time.Duration) string {
	return c.of(func(r R) string { return ms(f(r)) })
}

// targetRows compares the results with the targets.
func targetRows(in *reportInput) [][3]string {
	var rows [][3]string
	// Each count's row of rounds on one app, judged on its worst round.
	byN := map[int]streamsResult{}
	for _, row := range streamsRows(in.streams) {
		if r := row.rounds[0]; r.Keys <= 1 && r.benchShape() {
			if _, seen := byN[r.Streams]; !seen {
				byN[r.Streams] = row.worst()
			}
		}
	}
	if r, ok := byN[1]; ok {
		rows = append(rows, [3]string{"Lateness p99 ≤ 2 ms at 1 stream", ms(r.Lateness.P99) + " ms" + asRead(r) + r.Machine.stolen(), check(r.Lateness.P99 <= targetLateP99At1 && r.Failed == 0)})
	}
	if r, ok := byN[targetStreamsLarge]; ok {
		rows = append(rows,
			[3]string{"Lateness p99 ≤ 10 ms at 5,000 streams (all frames)", ms(r.Lateness.P99) + " ms", check(r.Lateness.P99 <= targetLateP99At5k && r.Failed == 0)},
			[3]string{"Lateness max ≤ 50 ms at 5,000 streams (all frames)", ms(r.Lateness.Max) + " ms", check(r.Lateness.Max <= targetLateMaxAt5k && r.Failed == 0)},
			[3]string{"Lateness p99 ≤ 10 ms at 5,000 streams (after the ramp)", ms(r.LatenessSteady.P99) + " ms", check(r.LatenessSteady.Count > 0 && r.LatenessSteady.P99 <= targetLateP99At5k && r.Failed == 0)},
			[3]string{"Lateness max ≤ 50 ms at 5,000 streams (after the ramp)", ms(r.LatenessSteady.Max) + " ms", check(r.LatenessSteady.Count > 0 && r.LatenessSteady.Max <= targetLateMaxAt5k && r.Failed == 0)})
	}
	if r, ok := byN[targetStreamsLargest]; ok {
		mb := float64(r.Server.PeakRSSKiB) * 1024 / 1e6
		rows = append(rows, [3]string{"10,000 streams in ≤ 400 MB RSS", fmt.Sprintf("%.0f MB (%s MiB), %d of %d completed", mb, mib(r.Server.PeakRSSKiB), r.Completed, r.Streams),
			check(r.Server.PeakRSSKiB > 0 && mb <= targetRSSAt10kMB && r.Failed == 0)})
	}
	for _, r := range in.http {
		switch r.Endpoint {
		case "conversations-crowded":
			continue // an extra measurement, not one of the routes
		case "annotation-chat":
			rows = append(rows, [3]string{"A 100 KB query over 20,000 annotations answered ≤ 200 ms (p99)", fmt.Sprintf("p50 %s ms, p99 %s ms", ms(r.Latency.P50), ms(r.Latency.P99)),
				check(r.Requests > 0 && r.Latency.P99 <= targetAnnotationP99 && r.Errors == 0)})
			continue
		case "conversations-during-annotation":
			rows = append(rows, [3]string{"Other users not delayed by annotation queries: `GET /conversations` p99 < 20 ms", fmt.Sprintf("%.0f req/s, p99 %s ms", r.RPS, ms(r.Latency.P99)),
				check(r.Requests > 0 && r.Latency.P99 < targetHTTPP99 && r.Errors == 0)})
			continue
		}
		rows = append(rows, [3]string{fmt.Sprintf("`%s` ≥ 5,000 req/s, p99 < 20 ms", r.Route), fmt.Sprintf("%.0f req/s, p99 %s ms", r.RPS, ms(r.Latency.P99)),
			check(r.RPS >= targetRPS && r.Latency.P99 < targetHTTPP99 && r.Errors == 0)})
	}
	if len(in.provider) >= 2 {
		ps := append([]providerResult(nil), in.provider...)
		sort.Slice(ps, func(i, j int) bool { return ps[i].Conversations < ps[j].Conversations })
		// At most linear: the requests per added conversation never exceed
		// what the smallest run needed per conversation.
		first, last := ps[0], ps[len(ps)-1]
		perFirst := float64(first.PlanRequests) / float64(first.Conversations)
		linear := float64(last.PlanRequests) <= perFirst*float64(last.Conversations)
		var parts []string
		for _, p := range ps {
			parts = append(parts, fmt.Sprintf("%d→%d", p.Conversations, p.PlanRequests))
		}
		rows = append(rows, [3]string{"Provider plan requests grow at most linearly", "conversations→requests: " + strings.Join(parts, ", "), check(linear)})
	}
	return rows
}
