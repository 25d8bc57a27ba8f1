package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// loadTestTarget is dify-mock run with its load-test settings.
const loadTestTarget = "dify-mock-loadtest"

// peerNames are the tables' names for the peers-* targets.
var peerNames = map[string]string{
	"dify-mock":    "dify-mock, default settings (journal on, an access line per request)",
	loadTestTarget: "dify-mock, load-test settings (`--journal=false --log-level warn`)",
	"wiremock":     "WireMock 3.13.2 (standalone jar)",
	"bare":         "bare httprouter handler (Go ceiling)",
}

func peerName(t string) string {
	if n, ok := peerNames[t]; ok {
		return n
	}
	return t
}

func (in *reportInput) peerHTTPOf(target string) (peerHTTPResult, bool) {
	for _, r := range in.peerHTTP {
		if r.Target == target {
			return r, true
		}
	}
	return peerHTTPResult{}, false
}

func (in *reportInput) peerStreamOf(target string) (peerStreamResult, bool) {
	for _, r := range in.peerStreams {
		if r.Target == target {
			return r, true
		}
	}
	return peerStreamResult{}, false
}

// signedMS prints a signed error in milliseconds ("+3.20", "-135.68").
func signedMS(d time.Duration) string {
	return fmt.Sprintf("%+.2f", float64(d)/float64(time.Millisecond))
}

func renderPeers(b *strings.Builder, in *reportInput) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	if len(in.peerHTTP) == 0 && len(in.peerStreams) == 0 {
		return
	}
	w("## Side by side: WireMock and a bare handler\n\n")
	w("Each server is its own process on this machine, measured from the same separate load process in the same run.\n\n")
	if len(in.peerHTTP) > 0 {
		h := in.peerHTTP[0]
		w("**`GET /v1/parameters`**: the same %d bytes from each (checked byte for byte before measuring), closed loop with %d requests in flight "+
			"over keep-alive connections, %d alternating rounds (a different server first each round) of %.0f s each after a warm-up; "+
			"p50/p99 over every request of every round. *dify-mock ÷ it* is the median of the rounds' ratios (each round measures "+
			"the servers back to back, seconds apart, while the machine's capacity drifts over the minute), with the ratio over all rounds beside it; "+
			"*stolen* is the share of the CPUs' time the hypervisor took during each of the server's rounds.\n\n",
			h.BodyBytes, h.Concurrency, h.Rounds, h.Seconds/float64(max(h.Rounds, 1)))
		dm, hasDM := in.peerHTTPOf("dify-mock")
		lt, hasLT := in.peerHTTPOf(loadTestTarget)
		if hasLT {
			w("WireMock runs in its settings for load tests (`--no-request-journal --disable-request-logging`, among others), and the " +
				"bare handler has no journal, log or middleware at all. dify-mock runs twice: with its load-test settings, " +
				"`--journal=false --log-level warn` (no request journal, no line per request), WireMock's like for like, and with its " +
				"default settings, as a developer runs it (every request journaled for the console and logged in one line). The targets " +
				"are judged on the load-test settings; the default settings' ratios are beside them.\n\n")
		}
		ratioCols, ratioSeps := "dify-mock ÷ it (req/s) |", "---:|"
		if hasLT {
			ratioCols, ratioSeps = "dify-mock, default settings ÷ it | dify-mock, load-test settings ÷ it |", "---:|---:|"
		}
		w("| Server | Requests/s | Per round | Stolen %% per round | p50 ms | p99 ms | max ms | Errors | Peak RSS MiB | %s\n", ratioCols)
		w("|---|---:|---|---|---:|---:|---:|---:|---:|%s\n", ratioSeps)
		// ratioTo is a's paired ratio to r, "–" against itself.
		ratioTo := func(a peerHTTPResult, has bool, r peerHTTPResult) string {
			if !has || r.Target == a.Target || r.RPS <= 0 {
				return "–"
			}
			p := pairedRatio(a, r)
			return fmt.Sprintf("%.2f× (all rounds %.2f×)", p.median, p.all)
		}
		for _, r := range in.peerHTTP {
			var rounds, steal []string
			for _, x := range r.RoundRPS {
				rounds = append(rounds, fmt.Sprintf("%.0f", x))
			}
			for _, x := range r.RoundSteal {
				steal = append(steal, fmt.Sprintf("%.1f", x))
			}
			stolen := "–"
			if len(steal) > 0 {
				stolen = strings.Join(steal, ", ")
			}
			ratios := ratioTo(dm, hasDM, r) + " |"
			if hasLT {
				ratios += " " + ratioTo(lt, true, r) + " |"
			}
			w("| %s | %.0f | %s | %s | %s | %s | %s | %d | %s | %s\n", peerName(r.Target), r.RPS, strings.Join(rounds, ", "), stolen,
				ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max), r.Errors, mib(r.PeakRSSKiB), ratios)
		}
		for _, r := range in.peerHTTP {
			if r.Errors > 0 {
				w("\n%s: %d errors, first: %s\n", peerName(r.Target), r.Errors, r.FirstError)
			}
		}
		w("\n")
	}
	if len(in.peerStreams) > 0 {
		s0 := in.peerStreams[0]
		var offs []string
		for _, o := range s0.Offsets {
			offs = append(offs, fmt.Sprint(o.Milliseconds()))
		}
		w("**One streamed answer** of %d SSE frames recorded at %s ms (`POST /v1/chat-messages`). Each frame's arrival error = "+
			"when the load client had the complete frame − the recorded offset, both from the moment the request was sent (so "+
			"time to the first byte counts). %d streams per server one at a time (alternating servers), then %d at once.\n\n",
			len(s0.Offsets), strings.Join(offs, ", "), s0.Runs, s0.Concurrent)
		w("| Server | How it paces the body | One at a time: \\|error\\| p50 ms | p99 ms | max ms | Failed | %d at once: \\|error\\| p50 ms | p99 ms | max ms | Failed | Wall s |\n", s0.Concurrent)
		w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range in.peerStreams {
			w("| %s | %s | %s | %s | %s | %d | %s | %s | %s | %d | %.1f |\n", peerName(r.Target), r.Method,
				ms(r.AbsError.P50), ms(r.AbsError.P99), ms(r.AbsError.Max), r.Failed,
				ms(r.ConcurrentAbs.P50), ms(r.ConcurrentAbs.P99), ms(r.ConcurrentAbs.Max), r.ConcurrentFailed, r.ConcurrentSecs)
		}
		w("\nPer frame, one stream at a time (median signed error, and the largest |error| over the runs):\n\n")
		w("| Frame | Recorded ms |")
		for _, r := range in.peerStreams {
			w(" %s median ms | max \\|error\\| ms |", r.Target)
		}
		w("\n|---:|---:|")
		for range in.peerStreams {
			w("---:|---:|")
		}
		w("\n")
		for i, o := range s0.Offsets {
			w("| %d | %d |", i, o.Milliseconds())
			for _, r := range in.peerStreams {
				if i < len(r.FrameP50) {
					w(" %s | %s |", signedMS(r.FrameP50[i]), ms(r.FrameMax[i]))
				} else {
					w(" – | – |")
				}
			}
			w("\n")
		}
		for _, r := range in.peerStreams {
			if r.FirstError != "" {
				w("\n%s: first failure: %s\n", peerName(r.Target), r.FirstError)
			}
		}
		w("\n")
	}
}

// peerTargetRows compares the results with the targets of issues 15 and 21.
func peerTargetRows(in *reportInput) [][3]string {
	var rows [][3]string
	dm, hasDM := in.peerHTTPOf("dify-mock")
	// versus is the row for "dify-mock ≥ target × peer": judged on the
	// load-test settings when they were measured (WireMock runs in its
	// own), with the default settings' figure beside them.
	versus := func(peer peerHTTPResult, target float64, f func(float64) string) (string, string) {
		def := pairedRatio(dm, peer)
		lt, ok := in.peerHTTPOf(loadTestTarget)
		if !ok {
			return def.describe(f), check(def.median >= target && dm.Errors == 0)
		}
		r := pairedRatio(lt, peer)
		return "load-test settings: " + r.describe(f) + "; default settings: " + def.describe(f),
			check(r.median >= target && lt.Errors == 0 && dm.Errors == 0)
	}
	if wm, ok := in.peerHTTPOf("wiremock"); ok && hasDM && wm.RPS > 0 {
		measured, verdict := versus(wm, targetVsWireMock, func(x float64) string { return fmt.Sprintf("%.2f×", x) })
		rows = append(rows, [3]string{"`GET /v1/parameters` ≥ 2× WireMock's req/s", measured, verdict})
	}
	if bare, ok := in.peerHTTPOf("bare"); ok && hasDM && bare.RPS > 0 {
		measured, verdict := versus(bare, targetVsBare, func(x float64) string { return fmt.Sprintf("%.0f %%", x*100) })
		rows = append(rows, [3]string{"`GET /v1/parameters` ≥ 85 % of the bare handler's req/s", measured, verdict})
	}
	if s, ok := in.peerStreamOf("dify-mock"); ok {
		measured := fmt.Sprintf("max %s ms over %d streams (p99 %s ms)", ms(s.AbsError.Max), s.Runs-s.Failed, ms(s.AbsError.P99))
		if wm, ok := in.peerStreamOf("wiremock"); ok {
			measured += fmt.Sprintf("; WireMock: max %s ms, p50 %s ms", ms(wm.AbsError.Max), ms(wm.AbsError.P50))
		}
		rows = append(rows, [3]string{"Per-frame arrival error ≤ 10 ms (one stream at a time)", measured,
			check(s.Failed == 0 && s.AbsError.Count > 0 && s.AbsError.Max <= targetFrameError)})
	}
	if r, row, ok := in.worstRow(targetStreamsLargest); ok {
		done := fmt.Sprintf(", %d of %d completed, peak live %d", r.Completed, r.Streams, r.PeakConcurrent)
		med := row.median()
		rows = append(rows,
			[3]string{"Lateness p99 ≤ 15 ms at 10,000 streams (all frames, the worst round)", ms(r.Lateness.P99) + " ms" + asRead(r) + inRounds(row, ms(med.Lateness.P99)+" ms") + done + r.Machine.stolen() + otherWork(r),
				concurrent(r, r.Failed == 0 && r.Lateness.P99 <= targetLateP99At10k)},
			[3]string{"10,000 streams in ≤ 200 MiB RSS (the worst round)", mib(r.Server.PeakRSSKiB) + " MiB" + inRounds(row, mib(med.Server.PeakRSSKiB)+" MiB") + done,
				concurrent(r, r.Failed == 0 && r.Server.PeakRSSKiB > 0 && r.Server.PeakRSSKiB <= targetRSSAt10kMiB*1024)})
		if a, arow, ok := in.appsRow(); ok {
			rows = append(rows, appsTargetRow(r, a, arow))
		}
		if b, brow, ok := in.busyRow(targetStreamsLargest); ok {
			rows = append(rows, busyTargetRow(r, b, brow))
		}
	}
	if r, row, ok := in.worstRow(targetStreamsMax); ok {
		rows = append(rows, largeTargetRows(r, row, "50,000", targetLateP99AtMax, targetRSSAtMaxMiB, "1.5 GiB")...)
	} else if largest := largestStreams(in.streams); largest.Streams > targetStreamsLargest && largest.Streams < targetStreamsMax {
		// Machines whose open-file limit cannot fit 50,000 sockets per process.
		rows = append(rows, [3]string{"50,000 streams complete", fmt.Sprintf("not run (open-file limit); the largest run: %d of %d streams completed (peak live %d, RSS %s MiB, lateness p99 %s ms)",
			largest.Completed, largest.Streams, largest.PeakConcurrent, mib(largest.Server.PeakRSSKiB), ms(largest.Lateness.P99)), "**not measured**"})
	} else {
		rows = append(rows, [3]string{"50,000 streams complete", "not run (open-file limit, see bench/README.md)", "**not measured**"})
	}
	if r, row, ok := in.worstRow(targetStreamsHuge); ok {
		rows = append(rows, largeTargetRows(r, row, "100,000", targetLateP99AtHuge, targetRSSAtHugeMiB, "2 GiB")...)
	} else if len(in.streams) > 0 {
		rows = append(rows, [3]string{"100,000 streams complete", "not run (BENCH_STREAMS, see bench/README.md)", "**not measured**"})
	}
	for _, n := range []int{100, 1000} {
		passed := false
		for _, p := range in.provider {
			passed = passed || p.Conversations == n
		}
		if len(in.provider) > 0 {
			rows = append(rows, [3]string{fmt.Sprintf("Provider section passes at %d conversations", n), map[bool]string{true: "apply and plan passed", false: "failed or not run"}[passed], check(passed)})
		}
	}
	return rows
}

// largeTargetRows are the rows of the targets for n streams (50,000 or
// 100,000) live together: all complete, lateness p99 and the servers'
// memory together, judged on r, the worst of row's rounds.
func largeTargetRows(r streamsResult, row streamsRow, n string, p99 time.Duration, rssMiB int64, rss string) [][3]string {
	med := row.median()
	done := fmt.Sprintf("%d of %d completed, peak live %d", r.Completed, r.Streams, r.PeakConcurrent)
	if r.Servers > 1 {
		done += fmt.Sprintf(" over %d dify-mock processes (the open-file limit)", r.Servers)
	}
	if r.Cassette != "" {
		done += fmt.Sprintf(", `%s` at speed %g", r.Cassette, r.Speed)
	}
	if len(row.rounds) > 1 {
		done += fmt.Sprintf(" (the worst of %d rounds)", len(row.rounds))
	}
	return [][3]string{
		{n + " streams, all live together, all complete", done, check(r.Completed == r.Streams && r.Failed == 0 && r.PeakConcurrent == r.Streams)},
		{fmt.Sprintf("Lateness p99 ≤ %d ms at %s streams (all frames)", p99.Milliseconds(), n), ms(r.Lateness.P99) + " ms" + asRead(r) + inRounds(row, ms(med.Lateness.P99)+" ms") + r.Machine.stolen() + otherWork(r),
			concurrent(r, r.Failed == 0 && r.Lateness.P99 <= p99)},
		{n + " streams in ≤ " + rss + " RSS", mib(r.Server.PeakRSSKiB) + " MiB" + summed(r) + inRounds(row, mib(med.Server.PeakRSSKiB)+" MiB"),
			concurrent(r, r.Failed == 0 && r.Server.PeakRSSKiB > 0 && r.Server.PeakRSSKiB <= rssMiB*1024)},
	}
}

// appsTargetRow compares 10,000 streams over many apps (a, the worst of
// arow's rounds) with 10,000 on one (one, the worst of its rounds): the
// same lateness bound, and memory per stream within targetAppsMemory.
func appsTargetRow(one, a streamsResult, arow streamsRow) [3]string {
	perStream := func(r streamsResult) float64 { return float64(r.Server.PeakRSSKiB) / float64(max(r.Streams, 1)) }
	measured := fmt.Sprintf("lateness p99 %s ms (one app: %s ms), %.1f KiB per stream (one app: %.1f KiB), %d of %d completed, peak live %d",
		ms(a.Lateness.P99), ms(one.Lateness.P99), perStream(a), perStream(one), a.Completed, a.Streams, a.PeakConcurrent)
	if len(arow.rounds) > 1 {
		measured += fmt.Sprintf(" (the worst of %d rounds each)", len(arow.rounds))
	}
	ok := a.Failed == 0 && a.Lateness.P99 <= targetLateP99At10k && a.Server.PeakRSSKiB > 0 && one.Server.PeakRSSKiB > 0 &&
		perStream(a) <= perStream(one)*targetAppsMemory
	return [3]string{fmt.Sprintf("10,000 streams over %d apps: lateness p99 ≤ 15 ms and memory per stream within 10 %% of one app's (the worst rounds)", a.Keys),
		measured, concurrent(a, ok)}
}

// worstRow is the worst of the rounds of the row of n streams on one app
// (rounds.go), and that row. The targets are the bench's own shape of
// run: a row with a --start-rate is a diagnosis, not judged.
func (in *reportInput) worstRow(n int) (streamsResult, streamsRow, bool) {
	return in.worstWhere(func(r streamsResult) bool { return r.Streams == n && r.Keys <= 1 && r.benchShape() })
}

// appsRow is the worst of the rounds of the row of 10,000 streams spread
// over several apps' keys, and that row.
func (in *reportInput) appsRow() (streamsResult, streamsRow, bool) {
	return in.worstWhere(func(r streamsResult) bool { return r.Streams == targetAppsStreams && r.Keys > 1 && r.benchShape() })
}

// busyRow is the worst of the rounds of the row of n streams on one app
// run beside other work on purpose (`loadgen burn`), and that row.
func (in *reportInput) busyRow(n int) (streamsResult, streamsRow, bool) {
	return in.worstWhere(func(r streamsResult) bool {
		return r.Streams == n && r.Keys <= 1 && r.StartRate == 0 && r.OtherWork > 0
	})
}

// worstWhere is the worst of the rounds of the first row whose rounds
// match, and that row.
func (in *reportInput) worstWhere(match func(streamsResult) bool) (streamsResult, streamsRow, bool) {
	for _, row := range streamsRows(in.streams) {
		if match(row.rounds[0]) {
			return row.worst(), row, true
		}
	}
	return streamsResult{}, streamsRow{}, false
}

// busyTargetRow compares the row of 10,000 streams beside other work (b,
// the worst of brow's rounds) with the same row without it (quiet, the
// worst of its rounds): issue 47's "0.5 cores busy elsewhere should not
// multiply the p99 by five".
func busyTargetRow(quiet, b streamsResult, brow streamsRow) [3]string {
	ratio := 0.0
	if quiet.Lateness.P99 > 0 {
		ratio = float64(b.Lateness.P99) / float64(quiet.Lateness.P99)
	}
	measured := fmt.Sprintf("p99 %s ms against %s ms without it (%.1f×)%s, %d of %d completed", ms(b.Lateness.P99), ms(quiet.Lateness.P99), ratio,
		otherWork(b), b.Completed, b.Streams)
	if len(brow.rounds) > 1 {
		measured += fmt.Sprintf(" (the worst of %d rounds each)", len(brow.rounds))
	}
	return [3]string{fmt.Sprintf("10,000 streams beside %g cores of other work at the servers' priority: lateness p99 less than %g× the row without it (the worst rounds)", b.OtherWork, targetBusyFactor),
		measured, concurrent(b, b.Failed == 0 && ratio > 0 && ratio < targetBusyFactor)}
}

// inRounds is ", the worst of k rounds (median m)" for a row of several
// rounds ("" for one).
func inRounds(row streamsRow, median string) string {
	if len(row.rounds) < 2 {
		return ""
	}
	return fmt.Sprintf(", the worst of %d rounds (median %s)", len(row.rounds), median)
}

// otherWork is ", 0.62 cores of other work" for a lateness target's
// measured column (the machine's other processes take the CPU the frames
// wait for; "" without figures).
func otherWork(r streamsResult) string {
	if r.Machine == nil {
		return ""
	}
	return fmt.Sprintf(", %.2f cores of other work", r.Machine.OtherCores)
}

// concurrent is check(ok) for a target about N streams live together: a
// run whose ramp outlasted its first streams (fewer live at once than it
// started) did not measure it, whatever its figures.
func concurrent(r streamsResult, ok bool) string {
	if r.PeakConcurrent < r.Streams {
		return "**not measured** (not all live at once)"
	}
	return check(ok)
}

func largestStreams(rs []streamsResult) streamsResult {
	var best streamsResult
	for _, r := range rs {
		if r.Streams > best.Streams {
			best = r
		}
	}
	return best
}

// summed says that a run's server figures are the sum over its processes.
func summed(r streamsResult) string {
	if r.Servers > 1 {
		return fmt.Sprintf(" (%d processes together)", r.Servers)
	}
	return ""
}

// ratio is one server's req/s over another's in the same peers run.
type ratio struct {
	median, lo, hi float64 // over the rounds (lo = hi = median without them)
	rounds         int     // paired rounds; 0 when the result has none
	all            float64 // every round's requests over their seconds, for each
	a, b           float64 // the two servers' req/s over all rounds
}

// pairedRatio is a's req/s over b's. Each round measured the two servers
// back to back, seconds apart, so a round's ratio compares them on the
// machine as it was then; the median of the rounds' ratios is the figure,
// as a shared VM's capacity drifts by more than the difference between
// them within the minute the rounds take (bench/history.md, "Issue 21,
// thirteenth round"). Results without per-round figures fall back to the
// ratio over all rounds.
func pairedRatio(a, b peerHTTPResult) ratio {
	r := ratio{all: a.RPS / b.RPS, a: a.RPS, b: b.RPS}
	var each []float64
	if len(a.RoundRPS) == len(b.RoundRPS) {
		for i, x := range a.RoundRPS {
			if b.RoundRPS[i] > 0 {
				each = append(each, x/b.RoundRPS[i])
			}
		}
	}
	if len(each) == 0 || len(each) != len(a.RoundRPS) {
		r.median, r.lo, r.hi = r.all, r.all, r.all
		return r
	}
	slices.Sort(each)
	r.rounds, r.lo, r.hi = len(each), each[0], each[len(each)-1]
	if n := len(each); n%2 == 1 {
		r.median = each[n/2]
	} else {
		r.median = (each[n/2-1] + each[n/2]) / 2
	}
	return r
}

// describe is the ratio for a target row, each figure shown by f.
func (r ratio) describe(f func(float64) string) string {
	totals := fmt.Sprintf("%.0f vs %.0f req/s", r.a, r.b)
	if r.rounds == 0 {
		return fmt.Sprintf("%s (%s)", f(r.median), totals)
	}
	return fmt.Sprintf("%s, the median of %d rounds (%s to %s); over all rounds %s (%s)",
		f(r.median), r.rounds, f(r.lo), f(r.hi), f(r.all), totals)
}
