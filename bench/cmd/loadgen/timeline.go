package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

// timelineRow is one step of a run's timeline: the frames that were due in
// it (by the stream's estimated start plus the frame's offset), how late
// they arrived, and the streams that started and ended in it. The
// percentiles of a whole run hide when the lateness happened; the timeline
// shows it, e.g. whether it comes with the ramp, with all streams live, or
// with the cohorts of streams that started together ending together
// (bench/history.md, "Issue 21, fifth round").
type timelineRow struct {
	At     time.Duration `json:"at"` // the step's start, from the run's start
	Frames int           `json:"frames"`
	Starts int           `json:"starts"`
	Ends   int           `json:"ends"`
	Late   summary       `json:"lateness"`
	// Stolen is the CPU time the hypervisor took from this machine's CPUs
	// in the step (all CPUs together; 10 ms resolution per CPU), where
	// /proc/stat tells (machine.go).
	Stolen   time.Duration `json:"stolen"`
	lateness durations
}

// phase is the lateness of the frames due in one part of a run, and its
// latest step.
type phase struct {
	Name  string      `json:"name"`
	Late  summary     `json:"lateness"`
	Worst timelineRow `json:"worst_step"` // the step with the highest p99
}

// Phases of a run, by when a frame was due.
const (
	phaseRamp   = "the ramp"       // before the last stream's first frame
	phaseLive   = "all live"       // then, until the first stream ended
	phaseEnding = "streams ending" // from the first stream's end
)

// phases splits a run at the end of the ramp and at the first completed
// stream's end (a zero time leaves that phase out) and summarizes each
// phase's frames. Its latest step is the step of width step in which that
// phase's frames had the highest p99, counted over that phase's frames
// only (a step can straddle two phases), with the streams that started and
// ended in the step (rows).
func phases(all []streamOutcome, due []time.Duration, start, rampEnd, firstEnd time.Time, rows []timelineRow, step time.Duration) []phase {
	names := []string{phaseRamp, phaseLive, phaseEnding}
	of := func(t time.Time) int {
		switch {
		case !rampEnd.IsZero() && t.Before(rampEnd):
			return 0
		case firstEnd.IsZero() || t.Before(firstEnd):
			return 1
		}
		return 2
	}
	late := make([]durations, len(names))
	steps := make([]map[time.Duration]durations, len(names))
	for k := range steps {
		steps[k] = map[time.Duration]durations{}
	}
	for _, o := range all {
		for i, l := range o.lateness {
			t := o.start.Add(due[i])
			k := of(t)
			late[k] = append(late[k], l)
			at := time.Duration(stepOf(t, start, step)) * step
			steps[k][at] = append(steps[k][at], l)
		}
	}
	byAt := map[time.Duration]timelineRow{}
	for _, r := range rows {
		byAt[r.At] = r
	}
	var out []phase
	for k, name := range names {
		if len(late[k]) == 0 {
			continue
		}
		ph := phase{Name: name, Late: late[k].summarize()}
		for at, d := range steps[k] {
			sm := d.summarize()
			if ph.Worst.Frames == 0 || sm.P99 > ph.Worst.Late.P99 || (sm.P99 == ph.Worst.Late.P99 && at < ph.Worst.At) {
				r := byAt[at]
				ph.Worst = timelineRow{At: at, Frames: len(d), Starts: r.Starts, Ends: r.Ends, Late: sm, Stolen: r.Stolen}
			}
		}
		out = append(out, ph)
	}
	return out
}

// timeline buckets a run's streams into steps of step from start. Steps in
// which nothing was due, started or ended are left out.
func timeline(all []streamOutcome, due []time.Duration, start time.Time, step time.Duration) []timelineRow {
	rows := map[int]*timelineRow{}
	at := func(t time.Time) *timelineRow {
		k := stepOf(t, start, step)
		r := rows[k]
		if r == nil {
			r = &timelineRow{At: time.Duration(k) * step}
			rows[k] = r
		}
		return r
	}
	for _, o := range all {
		for i, l := range o.lateness {
			r := at(o.start.Add(due[i]))
			r.Frames++
			r.lateness = append(r.lateness, l)
		}
		if !o.start.IsZero() {
			at(o.start).Starts++
		}
		if !o.end.IsZero() {
			at(o.end).Ends++
		}
	}
	last := -1
	for k := range rows {
		last = max(last, k)
	}
	var out []timelineRow
	for k := 0; k <= last; k++ {
		if r := rows[k]; r != nil {
			r.Late = r.lateness.summarize()
			r.lateness = nil
			out = append(out, *r)
		}
	}
	return out
}

// stepOf is the index of the step t falls in (a time before start is in
// the first).
func stepOf(t, start time.Time, step time.Duration) int {
	return max(0, int(t.Sub(start)/step))
}

// writeTimeline writes rows as tab-separated columns with a header.
func writeTimeline(path string, rows []timelineRow, step time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# lateness by when frames were due, in steps of %v from the run's start\n", step)
	fmt.Fprintln(w, "at_s\tframes\tstarts\tends\tp99_ms\tmax_ms\tstolen_ms")
	for _, r := range rows {
		fmt.Fprintf(w, "%.3f\t%d\t%d\t%d\t%s\t%s\t%s\n", r.At.Seconds(), r.Frames, r.Starts, r.Ends, ms(r.Late.P99), ms(r.Late.Max), ms(r.Stolen))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
