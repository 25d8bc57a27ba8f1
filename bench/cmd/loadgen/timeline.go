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
// (bench/results.md, "Issue 21, fifth round").
type timelineRow struct {
	At           time.Duration // the step's start, from the run's start
	Frames       int
	Starts, Ends int
	Late         summary
	lateness     durations
}

// timeline buckets a run's streams into steps of step from start. Steps in
// which nothing was due, started or ended are left out.
func timeline(all []streamOutcome, due []time.Duration, start time.Time, step time.Duration) []timelineRow {
	rows := map[int]*timelineRow{}
	at := func(t time.Time) *timelineRow {
		k := max(0, int(t.Sub(start)/step))
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

// writeTimeline writes rows as tab-separated columns with a header.
func writeTimeline(path string, rows []timelineRow, step time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# lateness by when frames were due, in steps of %v from the run's start\n", step)
	fmt.Fprintln(w, "at_s\tframes\tstarts\tends\tp99_ms\tmax_ms")
	for _, r := range rows {
		fmt.Fprintf(w, "%.3f\t%d\t%d\t%d\t%s\t%s\n", r.At.Seconds(), r.Frames, r.Starts, r.Ends, ms(r.Late.P99), ms(r.Late.Max))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
