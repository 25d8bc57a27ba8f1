package main

import (
	"slices"
	"time"
)

// A row of the streams tables is every round of one shape of run (`make
// bench` runs each BENCH_ROUNDS times, each on freshly started servers):
// the same stream count, cassette, speed, number of API keys and start
// rate. Runs of
// one commit on one machine differ by more than the targets' margins (two
// 10,000-stream runs gave a lateness p99 of 30.6 and 70.0 ms where four
// others gave 11.8–13.3 ms), and users meet the worst of them, so the
// tables show each figure's median and worst over the rounds and the
// targets are judged on the worst, as the peers section does with its
// rounds' ratios.

// streamsRow is one row: its rounds in the order they ran.
type streamsRow struct {
	rounds []streamsResult
}

// rowKey is what makes two runs rounds of the same row.
type rowKey struct {
	streams, keys               int
	cassette                    string
	speed, startRate, otherWork float64
}

func keyOf(r streamsResult) rowKey {
	return rowKey{streams: r.Streams, keys: r.Keys, cassette: r.Cassette, speed: r.Speed, startRate: r.StartRate, otherWork: r.OtherWork}
}

// benchShape reports whether r ran in the bench's own shape of run, the
// one the targets judge: no --start-rate (a diagnosis of the ramp's
// cohorts) and no other work on purpose (which only the comparison with
// the same row without it judges).
func (r streamsResult) benchShape() bool { return r.StartRate == 0 && r.OtherWork == 0 }

// streamsRows groups results into rows, in the order each row first
// appears.
func streamsRows(rs []streamsResult) []streamsRow {
	var rows []streamsRow
	for _, rounds := range groupRounds(rs, keyOf) {
		rows = append(rows, streamsRow{rounds: rounds})
	}
	return rows
}

// groupRounds groups results (of any section) into the rounds of each
// row, rows in the order each first appears: key says which row a result
// is a round of.
func groupRounds[R any, K comparable](rs []R, key func(R) K) [][]R {
	var rows [][]R
	at := map[K]int{}
	for _, r := range rs {
		k := key(r)
		i, ok := at[k]
		if !ok {
			i = len(rows)
			at[k] = i
			rows = append(rows, nil)
		}
		rows[i] = append(rows[i], r)
	}
	return rows
}

// median is the row's rounds folded figure by figure into their medians.
func (r streamsRow) median() streamsResult { return foldRounds(r.rounds, false) }

// worst is the row's rounds folded figure by figure into the worst of each
// (the highest lateness, memory, CPU and failures; the fewest completed and
// live at once): every target is judged on it.
func (r streamsRow) worst() streamsResult { return foldRounds(r.rounds, true) }

// worstRound is the round with the highest lateness p99, whose phases the
// "When" table shows.
func (r streamsRow) worstRound() streamsResult {
	w := r.rounds[0]
	for _, x := range r.rounds[1:] {
		if x.Lateness.P99 > w.Lateness.P99 {
			w = x
		}
	}
	return w
}

// pickOf is the median of vs, or with worst the largest (higherWorse) or
// the smallest.
func pickOf[T int | int64 | float64 | time.Duration](vs []T, worst, higherWorse bool) T {
	s := slices.Clone(vs)
	slices.Sort(s)
	switch {
	case worst && higherWorse:
		return s[len(s)-1]
	case worst:
		return s[0]
	case len(s)%2 == 1:
		return s[len(s)/2]
	}
	// Two middle values: their mean (for counts rounded down).
	return s[len(s)/2-1] + (s[len(s)/2]-s[len(s)/2-1])/2
}

// fold sets the field get points at in out to the pick over rs (a row's
// rounds, of any section).
func fold[R any, T int | int64 | float64 | time.Duration](out *R, rs []R, worst, higherWorse bool, get func(*R) *T) {
	vs := make([]T, len(rs))
	for i := range rs {
		vs[i] = *get(&rs[i])
	}
	*get(out) = pickOf(vs, worst, higherWorse)
}

// foldRounds folds rs (one row's rounds) into one result: each figure the
// median of the rounds' or, with worst, the worst of them. Its phases,
// errors and label are those of the round with the highest lateness p99.
func foldRounds(rs []streamsResult, worst bool) streamsResult {
	rs = slices.Clone(rs)
	out := streamsRow{rounds: rs}.worstRound()
	if len(rs) == 1 {
		return out
	}
	out.Round = 0
	foldSummaries(&out, rs, worst,
		func(r *streamsResult) *summary { return &r.Lateness },
		func(r *streamsResult) *summary { return &r.LatenessSteady },
		func(r *streamsResult) *summary { return &r.LatenessRead },
		func(r *streamsResult) *summary { return &r.TTFE })
	fold(&out, rs, worst, false, func(r *streamsResult) *int { return &r.Completed })
	fold(&out, rs, worst, true, func(r *streamsResult) *int { return &r.Failed })
	fold(&out, rs, worst, false, func(r *streamsResult) *int { return &r.PeakConcurrent })
	fold(&out, rs, worst, true, func(r *streamsResult) *float64 { return &r.RampSeconds })
	fold(&out, rs, worst, false, func(r *streamsResult) *float64 { return &r.BytesPerSec })
	fold(&out, rs, worst, true, func(r *streamsResult) *int64 { return &r.Server.PeakRSSKiB })
	fold(&out, rs, worst, true, func(r *streamsResult) *int64 { return &r.Server.HWMKiB })
	fold(&out, rs, worst, true, func(r *streamsResult) *int { return &r.Server.PeakThreads })
	fold(&out, rs, worst, true, func(r *streamsResult) *int { return &r.Server.PeakGoroutines })
	fold(&out, rs, worst, true, func(r *streamsResult) *float64 { return &r.ServerCores })
	fold(&out, rs, worst, true, func(r *streamsResult) *float64 { return &r.ClientCores })
	// The machine's and the collector's figures, over the rounds that
	// have them.
	var machines []*machineFigures
	var gcs []streamsResult
	for _, r := range rs {
		machines = append(machines, r.Machine)
		if r.GC != nil {
			gcs = append(gcs, streamsResult{GC: r.GC})
		}
	}
	out.Machine, out.GC = foldMachine(machines, worst), nil
	if len(gcs) > 0 {
		out.GC = &gcFigures{}
		fold(&out, gcs, worst, true, func(r *streamsResult) *int { return &r.GC.Collections })
		fold(&out, gcs, worst, true, func(r *streamsResult) *time.Duration { return &r.GC.PauseTotal })
		fold(&out, gcs, worst, true, func(r *streamsResult) *time.Duration { return &r.GC.PauseMax })
		fold(&out, gcs, worst, true, func(r *streamsResult) *time.Duration { return &r.GC.CPU })
		fold(&out, gcs, worst, true, func(r *streamsResult) *float64 { return &r.GC.Cores })
	}
	return out
}

// foldSummaries folds each summary of rs that a getter points at: its
// percentiles the median or the highest, its count the median or the
// fewest.
func foldSummaries[R any](out *R, rs []R, worst bool, summaries ...func(*R) *summary) {
	for _, s := range summaries {
		fold(out, rs, worst, true, func(r *R) *time.Duration { return &s(r).P50 })
		fold(out, rs, worst, true, func(r *R) *time.Duration { return &s(r).P99 })
		fold(out, rs, worst, true, func(r *R) *time.Duration { return &s(r).Max })
		fold(out, rs, worst, false, func(r *R) *int { return &s(r).Count })
	}
}

// foldMachine folds the machine's figures over the rounds that have them
// (nil for none): the median or, with worst, the most stolen and the
// most other work.
func foldMachine(ms []*machineFigures, worst bool) *machineFigures {
	var have []machineFigures
	for _, m := range ms {
		if m != nil {
			have = append(have, *m)
		}
	}
	if len(have) == 0 {
		return nil
	}
	out := &machineFigures{}
	fold(out, have, worst, true, func(m *machineFigures) *float64 { return &m.StealPercent })
	fold(out, have, worst, true, func(m *machineFigures) *float64 { return &m.OtherCores })
	return out
}
