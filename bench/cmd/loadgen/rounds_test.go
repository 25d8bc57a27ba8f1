package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// round is one round of a 10,000-stream row: all live at once, with the
// given lateness p99 and peak RSS.
func round(k int, p99 time.Duration, rssMiB int64) streamsResult {
	return streamsResult{Kind: "streams", Streams: 10000, Completed: 10000, PeakConcurrent: 10000, Round: k, Cassette: "tool-use", Speed: 1,
		Lateness: summary{Count: 410000, P50: time.Millisecond, P99: p99, Max: 2 * p99}, Server: serverFigures{PeakRSSKiB: rssMiB << 10},
		Machine: &machineFigures{StealPercent: float64(k), OtherCores: 0.1 * float64(k)}}
}

func targetsOf(in *reportInput) map[string][3]string {
	rows := map[string][3]string{}
	for _, r := range peerTargetRows(in) {
		rows[r[0]] = r
	}
	return rows
}

// Three rounds whose median meets the 10,000-stream targets and whose
// worst does not: the verdicts follow the worst round, and the measured
// column gives both.
func TestStreamsTargetsJudgeTheWorstRound(t *testing.T) {
	in := &reportInput{streams: []streamsResult{
		round(1, 12*time.Millisecond, 170), round(2, 30600*time.Microsecond, 180), round(3, 11800*time.Microsecond, 230),
	}}
	rows := targetsOf(in)
	if r := rows[lateness10k]; r[2] != "**missed**" ||
		!strings.HasPrefix(r[1], "30.60 ms, the worst of 3 rounds (median 12.00 ms), 10000 of 10000 completed") ||
		!strings.HasSuffix(r[1], ", 3.0 % of the CPU stolen, 0.30 cores of other work") {
		t.Errorf("lateness: %q", r)
	}
	if r := rows[memory10k]; r[2] != "**missed**" || !strings.HasPrefix(r[1], "230 MiB, the worst of 3 rounds (median 180 MiB)") {
		t.Errorf("memory: %q", r)
	}
	// Every round within both bounds: met, on the worst figures.
	in.streams[1].Lateness.P99, in.streams[2].Server.PeakRSSKiB = 14*time.Millisecond, 190<<10
	rows = targetsOf(in)
	if r := rows[lateness10k]; r[2] != "met" || !strings.HasPrefix(r[1], "14.00 ms, the worst of 3 rounds (median 12.00 ms)") {
		t.Errorf("lateness: %q", r)
	}
	if r := rows[memory10k]; r[2] != "met" || !strings.HasPrefix(r[1], "190 MiB") {
		t.Errorf("memory: %q", r)
	}
	// A round in which not all streams were live at once measured nothing
	// about 10,000 live streams, however good the others were.
	in.streams[0].PeakConcurrent = 9000
	if r := targetsOf(in)[lateness10k]; r[2] != "**not measured** (not all live at once)" {
		t.Errorf("a round with 9,000 live: %q", r)
	}
	// A failed stream in any round fails the row.
	in.streams[0].PeakConcurrent, in.streams[2].Failed, in.streams[2].Completed = 10000, 1, 9999
	if r := targetsOf(in)[lateness10k]; r[2] != "**missed**" || !strings.Contains(r[1], "9999 of 10000 completed") {
		t.Errorf("a round with a failed stream: %q", r)
	}
}

// The issue-7 targets follow the worst round too.
func TestIssue7TargetsJudgeTheWorstRound(t *testing.T) {
	in := &reportInput{streams: []streamsResult{
		{Streams: 1, Completed: 1, Round: 1, Lateness: summary{P99: time.Millisecond}},
		{Streams: 1, Completed: 1, Round: 2, Lateness: summary{P99: 3 * time.Millisecond}},
		{Streams: 1, Completed: 1, Round: 3, Lateness: summary{P99: time.Millisecond}},
	}}
	for _, r := range targetRows(in) {
		if r[0] == "Lateness p99 ≤ 2 ms at 1 stream" && (r[2] != "**missed**" || !strings.HasPrefix(r[1], "3.00 ms")) {
			t.Errorf("%q", r)
		}
	}
}

// Each figure folds on its own: the worst is the highest lateness, memory
// and CPU and the fewest completed and live; the median of an even number
// of rounds is the mean of the middle two.
func TestFoldRoundsFigureByFigure(t *testing.T) {
	a, b := round(1, 10*time.Millisecond, 200), round(2, 20*time.Millisecond, 100)
	a.PeakConcurrent, b.Completed, b.Failed = 9000, 9990, 10
	a.ClientCores, b.ClientCores = 0.4, 0.2
	a.GC, b.GC = &gcFigures{Collections: 3, Cores: 0.05}, &gcFigures{Collections: 9, Cores: 0.02}
	row := streamsRow{rounds: []streamsResult{a, b}}
	w, m := row.worst(), row.median()
	if w.Lateness.P99 != 20*time.Millisecond || w.Server.PeakRSSKiB != 200<<10 || w.PeakConcurrent != 9000 || w.Completed != 9990 ||
		w.Failed != 10 || w.ClientCores != 0.4 || w.Machine.StealPercent != 2 || w.GC.Collections != 9 || w.GC.Cores != 0.05 {
		t.Errorf("worst %+v", w)
	}
	if m.Lateness.P99 != 15*time.Millisecond || m.Server.PeakRSSKiB != 150<<10 || m.PeakConcurrent != 9500 || m.Completed != 9995 ||
		m.Machine.OtherCores != 0.15000000000000002 && m.Machine.OtherCores != 0.15 {
		t.Errorf("median %+v", m)
	}
	// The folded figures are new values: the rounds keep their own.
	if a.Machine.StealPercent != 1 || b.Machine.StealPercent != 2 {
		t.Errorf("folding changed a round's machine figures: %v, %v", a.Machine, b.Machine)
	}
	if row.worstRound().Round != 2 {
		t.Errorf("the round with the highest p99 is round 2, not %d", row.worstRound().Round)
	}
}

// The table has a row per shape of run with the rounds' median and worst
// in each cell; a round on its own prints as before.
func TestStreamsTableShowsMedianAndWorst(t *testing.T) {
	single := round(0, 2*time.Millisecond, 20)
	single.Streams, single.Completed, single.PeakConcurrent = 1000, 1000, 1000
	in := &reportInput{streams: []streamsResult{single,
		round(1, 12*time.Millisecond, 170), round(2, 30600*time.Microsecond, 180), round(3, 11800*time.Microsecond, 175)}}
	in.streams[2].GC = &gcFigures{Collections: 7, PauseTotal: 1500 * time.Microsecond, Cores: 0.12}
	md := renderReport(in, machine{CPUs: 2}, nil, nil)
	for _, want := range []string{
		"| 1000 | 1 | 1000 | 0.0 | 1.00 | 2.00 | 4.00 |",
		"| 10000 | 3 | 10000 / 10000 | 0.0 / 0.0 | 1.00 / 1.00 | 12.00 / 30.60 | 24.00 / 61.20 |",
		// RSS median 175, worst 180; GC only in round 2, so its median and worst are round 2's.
		"| 10000 | 10000 / 10000 | 175 / 180 | – / – | – / – | 0.00 / 0.00 | 0.00 / 0.00 | 0.20 / 0.30 | 2.0 / 3.0 | 7 / 7 | 1.50 / 1.50 | 0.12 / 0.12 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}

// The 100,000 row: all live over the processes it names, judged on its
// worst round against 100 ms and 2 GiB for the servers together.
func TestHundredThousandStreamsRow(t *testing.T) {
	huge := func(k int, p99 time.Duration, rssMiB int64) streamsResult {
		return streamsResult{Kind: "streams", Streams: 100000, Completed: 100000, PeakConcurrent: 100000, Servers: 6, Round: k,
			Cassette: "deep-research", Speed: 0.4, Lateness: summary{P99: p99}, Server: serverFigures{PeakRSSKiB: rssMiB << 10}}
	}
	in := &reportInput{streams: []streamsResult{huge(1, 40*time.Millisecond, 1700), huge(2, 130*time.Millisecond, 1750), huge(3, 60*time.Millisecond, 1800)}}
	rows := targetsOf(in)
	if r := rows["100,000 streams, all live together, all complete"]; r[2] != "met" ||
		r[1] != "100000 of 100000 completed, peak live 100000 over 6 dify-mock processes (the open-file limit), `deep-research` at speed 0.4 (the worst of 3 rounds)" {
		t.Errorf("%q", r)
	}
	if r := rows["Lateness p99 ≤ 100 ms at 100,000 streams (all frames)"]; r[2] != "**missed**" || !strings.HasPrefix(r[1], "130.00 ms, the worst of 3 rounds (median 60.00 ms)") {
		t.Errorf("%q", r)
	}
	if r := rows["100,000 streams in ≤ 2 GiB RSS"]; r[2] != "met" || !strings.HasPrefix(r[1], "1800 MiB (6 processes together), the worst of 3 rounds (median 1750 MiB)") {
		t.Errorf("%q", r)
	}
	in.streams[2].Server.PeakRSSKiB = 2049 << 10
	if r := targetsOf(in)["100,000 streams in ≤ 2 GiB RSS"]; r[2] != "**missed**" {
		t.Errorf("2049 MiB: %q", r)
	}
	// Its row says how many processes.
	md := renderReport(in, machine{CPUs: 2}, nil, nil)
	if !strings.Contains(md, "| 100000 (6 processes) | 3 | ") {
		t.Errorf("the table does not name the processes:\n%s", md)
	}
	// Without a 100,000 row the target is not measured.
	in.streams = []streamsResult{round(1, time.Millisecond, 100)}
	if r := targetsOf(in)["100,000 streams complete"]; r[2] != "**not measured**" {
		t.Errorf("%q", r)
	}
}

// 10,000 streams over 100 apps are their own row, compared with 10,000 on
// one app: the same lateness bound, memory per stream within 10 %.
func TestAppsRowComparesWithOneApp(t *testing.T) {
	apps := func(k int, p99 time.Duration, rssMiB int64) streamsResult {
		r := round(k, p99, rssMiB)
		r.Keys = 100
		return r
	}
	const row = "10,000 streams over 100 apps: lateness p99 ≤ 15 ms and memory per stream within 10 % of one app's (the worst rounds)"
	in := &reportInput{streams: []streamsResult{round(1, 10*time.Millisecond, 170), round(2, 11*time.Millisecond, 180),
		apps(1, 12*time.Millisecond, 185), apps(2, 13*time.Millisecond, 195)}}
	r := targetsOf(in)[row]
	if r[2] != "met" || !strings.HasPrefix(r[1], "lateness p99 13.00 ms (one app: 11.00 ms), 20.0 KiB per stream (one app: 18.4 KiB)") {
		t.Errorf("%q", r)
	}
	// The one-app targets are judged on the one-app rows only.
	if got := targetsOf(in)[lateness10k]; !strings.HasPrefix(got[1], "11.00 ms") {
		t.Errorf("the one-app row took the apps' rounds: %q", got)
	}
	in.streams[3].Server.PeakRSSKiB = 199 << 10 // 20.4 KiB a stream: 10.6 % over 18.4
	if r := targetsOf(in)[row]; r[2] != "**missed**" {
		t.Errorf("10.6 %% more memory per stream: %q", r)
	}
	md := renderReport(in, machine{CPUs: 2}, nil, nil)
	if !strings.Contains(md, "| 10000 over 100 apps | 2 | ") {
		t.Errorf("the table has no apps row:\n%s", md)
	}
}

// The row of 10,000 streams beside other work on purpose is judged only
// against the same row without it: less than five times its worst p99,
// on the worst rounds; the one-app targets keep to the quiet rows.
func TestBusyRowComparesWithTheQuietRow(t *testing.T) {
	busy := func(k int, p99 time.Duration) streamsResult {
		r := round(k, p99, 190)
		r.OtherWork = 0.5
		r.Machine = &machineFigures{OtherCores: 0.48}
		return r
	}
	const row = "10,000 streams beside 0.5 cores of other work at the servers' priority: lateness p99 less than 5× the row without it (the worst rounds)"
	in := &reportInput{streams: []streamsResult{round(1, 10*time.Millisecond, 170), round(2, 12*time.Millisecond, 180),
		busy(1, 20*time.Millisecond), busy(2, 36*time.Millisecond)}}
	r := targetsOf(in)[row]
	if r[2] != "met" || !strings.HasPrefix(r[1], "p99 36.00 ms against 12.00 ms without it (3.0×), 0.48 cores of other work, 10000 of 10000 completed (the worst of 2 rounds each)") {
		t.Errorf("%q", r)
	}
	if got := targetsOf(in)[lateness10k]; !strings.HasPrefix(got[1], "12.00 ms") {
		t.Errorf("the quiet row took the busy rounds: %q", got)
	}
	in.streams[3].Lateness.P99 = 60 * time.Millisecond // 5.0×
	if r := targetsOf(in)[row]; r[2] != "**missed**" {
		t.Errorf("five times the quiet row's p99: %q", r)
	}
	md := renderReport(in, machine{CPUs: 2}, nil, nil)
	if !strings.Contains(md, "| 10000, beside 0.5 cores of other work | 2 | ") {
		t.Errorf("the table has no busy row:\n%s", md)
	}
}

// The collector's figures come from the heap profile's text form, as the
// profiling listener serves it: here this process's own, with two
// collections between the readings.
func TestGCFiguresFromTheHeapProfile(t *testing.T) {
	read := func() gcReading {
		var b bytes.Buffer
		if err := pprof.Lookup("heap").WriteTo(&b, 1); err != nil {
			t.Fatal(err)
		}
		g, err := parseGCReading(&b)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	a := read()
	runtime.GC()
	runtime.GC()
	b := read()
	start := processStart(os.Getpid())
	if start.IsZero() || time.Since(start) < 0 || time.Since(start) > time.Hour {
		t.Fatalf("process start %v", start)
	}
	f := gcBetween(a, b, start, runtime.GOMAXPROCS(0))
	// Others may collect too (the race detector's runtime, a test in
	// parallel): at least the two.
	if f.Collections < 2 || f.PauseTotal <= 0 || f.PauseMax <= 0 || f.PauseMax > f.PauseTotal || f.CPU < 0 {
		t.Fatalf("figures %+v between %d and %d collections", f, a.numGC, b.numGC)
	}
	// Nothing between two readings: nothing reported.
	if f := gcBetween(b, b, start, 2); f != (gcFigures{}) {
		t.Fatalf("no collection in between: %+v", f)
	}
	if _, err := parseGCReading(strings.NewReader("heap profile: 0: 0 [0: 0] @ heap/1048576\n")); err == nil {
		t.Fatal("a profile without MemStats parsed")
	}
}

// The pauses are read from the runtime's ring: the latest at
// (NumGC+255)%256, older ones before it, wrapping.
func TestGCPausesComeFromTheRing(t *testing.T) {
	ring := make([]uint64, 256)
	ring[255], ring[0], ring[1] = 300, 500, 200 // collections 256, 257 and 258
	a := gcReading{numGC: 255, pauseNs: ring}
	b := gcReading{numGC: 258, pauseNs: ring, lastGC: time.Unix(100, 0).UnixNano(), cpuFraction: 0.01}
	f := gcBetween(a, b, time.Unix(0, 0), 2)
	if f.Collections != 3 || f.PauseTotal != 1000 || f.PauseMax != 500 {
		t.Fatalf("%+v", f)
	}
	// 1 % of 2 CPUs over the 100 s to the last collection, from none.
	if f.CPU != 2*time.Second {
		t.Fatalf("CPU %v", f.CPU)
	}
	stat := "4242 (dify-mock) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 12345 99"
	if got := parseProcessStart(stat, "cpu 1 2 3\nbtime 1700000000\n"); !got.Equal(time.Unix(1700000000, 0).Add(123450 * time.Millisecond)) {
		t.Fatalf("process start %v", got)
	}
}

// --keys-file spreads the streams over the keys in turn, also over
// several worker processes; the report counts the keys.
func TestStreamsSpreadOverTheKeys(t *testing.T) {
	keys := []string{"app-one", "app-two", "app-three"}
	var mu sync.Mutex
	seen := map[string]int{}
	var urls []string
	for range 2 {
		srv, err := mockserver.New(mockserver.Config{Speed: 1, APIKeys: keys})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/chat-messages" {
				mu.Lock()
				seen[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]++
				mu.Unlock()
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
	dir := t.TempDir()
	keysFile := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(keysFile, []byte("# the bench's apps\n"+strings.Join(keys, "\n")+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.jsonl")
	var log bytes.Buffer
	for _, u := range []string{urls[0], strings.Join(urls, ",")} {
		err := runStreams(t.Context(), []string{"--url", u, "--streams", "6", "--cassette", "plain-answer", "--speed", "2",
			"--keys-file", keysFile, "--round", "2", "--out", out}, &log)
		if err != nil {
			t.Fatalf("streams --url %s: %v\n%s", u, err, log.String())
		}
	}
	// 6 streams on one server, then 3 + 3 over two: each key twice a run.
	if seen["app-one"] != 4 || seen["app-two"] != 4 || seen["app-three"] != 4 || len(seen) != 3 {
		t.Fatalf("keys used: %v\n%s", seen, log.String())
	}
	in := readResultsFile(t, out)
	for _, r := range in.streams {
		if r.Keys != 3 || r.Round != 2 || r.Completed != 6 {
			t.Fatalf("result %+v", r)
		}
	}
	// No key reaches the log.
	for _, k := range keys {
		if strings.Contains(log.String(), k) {
			t.Fatalf("the log holds a key:\n%s", log.String())
		}
	}
	for _, bad := range []string{"", "# only a comment\n", "two keys\n"} {
		p := filepath.Join(dir, fmt.Sprintf("bad-%d.txt", len(bad)))
		if err := os.WriteFile(p, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readKeys(p); err == nil {
			t.Errorf("keys file %q accepted", bad)
		} else if strings.Contains(err.Error(), "two keys") {
			t.Errorf("the error echoes the file's line: %v", err)
		}
	}
}

// --start-rate spaces the starts (here 8 streams at 20 a second: the last
// starts 350 ms after the first), is kept with the result, and makes a row
// of its own that no target judges.
func TestStartRateSpacesTheStarts(t *testing.T) {
	srv, err := mockserver.New(mockserver.Config{Speed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})
	out := filepath.Join(t.TempDir(), "r.jsonl")
	var log bytes.Buffer
	if err := runStreams(t.Context(), []string{"--url", ts.URL + "/v1", "--streams", "8", "--cassette", "plain-answer", "--speed", "20",
		"--start-rate", "20", "--out", out}, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	in := readResultsFile(t, out)
	r := in.streams[0]
	if r.Completed != 8 || r.StartRate != 20 || r.RampSeconds < 0.35 {
		t.Fatalf("completed %d, start rate %g, ramp %.3f s (the last start is due 350 ms in)", r.Completed, r.StartRate, r.RampSeconds)
	}
	// A 10,000 row with a start rate is not the 10,000 row.
	paced := round(1, 5*time.Millisecond, 100)
	paced.StartRate = 1000
	in = &reportInput{streams: []streamsResult{paced, round(1, 20*time.Millisecond, 100)}}
	if got := targetsOf(in)[lateness10k]; !strings.HasPrefix(got[1], "20.00 ms") {
		t.Errorf("the paced row was judged: %q", got)
	}
	if md := renderReport(in, machine{}, nil, nil); !strings.Contains(md, "| 10000, 1000 starts/s | 1 | ") {
		t.Errorf("the paced row does not say so:\n%s", md)
	}
}
