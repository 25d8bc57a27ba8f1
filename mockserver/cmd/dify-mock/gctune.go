package main

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Memory tuning for many concurrent streams. A stream's memory is small,
// long-lived objects (net/http's per-connection buffers, the request, the
// bound turn) plus goroutine stacks. Go's default pacing (GOGC=100) aims the
// heap at twice what is live plus the stacks, but memory the heap used once
// (the ramp of thousands of requests) stays mapped until the background
// scavenger slowly returns it. Once the process holds more than gcFloor,
// serve sets a soft memory limit at what the default pacing aims at (the
// live heap plus as much again, plus stacks and runtime metadata), which
// makes the runtime return memory above it promptly without collecting more
// often: at 10,000 live streams RSS went from 401 to 382 MiB at the same
// CPU. A tighter limit (a quarter over the live heap) cut RSS further but
// tripled the collections, each scanning 20,000 goroutine stacks, and cost
// 0.4 of a core and frame lateness (bench/results.md): timing comes first.
// Below gcFloor there is no such limit; there the heap's goal is kept at
// gcMinGoal or more instead (gcPercent). Setting GOGC or GOMEMLIMIT turns
// this off (the runtime's own settings win).
const (
	gcFloor    = 64 << 20
	gcHeadroom = 1.0 // the live heap again: GOGC=100's goal
	gcRetune   = 250 * time.Millisecond
	// gcMinGoal is the smallest heap goal. The mock's live heap at rest is
	// about 1 MiB, so the runtime's own smallest goal (4 MiB) made a closed
	// loop of small requests (GET /v1/parameters at 30,000 a second)
	// collect 50 times a second; the collector's stops and marking were
	// about a tenth of the server's throughput (bench/results.md, "Issue
	// 21, eighth round").
	gcMinGoal = 32 << 20
	// gcBackstop is the memory limit while the heap is under gcFloor: the
	// GC percent set for a small heap would aim far too high for a heap that
	// grew since the last retune.
	gcBackstop = 2 * gcFloor
)

var gcSamples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/memory/classes/heap/stacks:bytes"},
	{Name: "/memory/classes/os-stacks:bytes"},
	{Name: "/memory/classes/metadata/other:bytes"},
}

// gcLimit is the soft memory limit for live heap bytes and other
// (non-heap) runtime memory: none below the floor, else the live heap plus
// headroom plus the rest.
func gcLimit(live, other uint64) int64 {
	want := float64(live)*(1+gcHeadroom) + float64(other) + 16<<20
	if want < gcFloor {
		return math.MaxInt64 // no limit: default pacing
	}
	return int64(want)
}

// gcPercent is the GOGC that aims the heap at gcMinGoal or more: the
// runtime's goal is the live heap plus (live heap + roots) × GOGC/100, and
// other (stacks, metadata) stands for the roots. Never under the default
// 100, never over 10,000 (an empty heap at start).
func gcPercent(live, other uint64) int {
	if live >= gcMinGoal {
		return 100
	}
	p := float64(gcMinGoal-live) * 100 / float64(max(live+other, 1))
	return int(max(100, min(p, 10000)))
}

// tuneGC keeps the soft memory limit at gcLimit (gcBackstop under the
// floor) and the GC percent at gcPercent until ctx ends (then it removes
// the limit and restores the percent). It does nothing when GOGC or
// GOMEMLIMIT is set.
func tuneGC(ctx context.Context, getenv func(string) string) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return
	}
	t := time.NewTicker(gcRetune)
	defer t.Stop()
	defer debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetGCPercent(100) // the default: GOGC is not set
	for {
		metrics.Read(gcSamples)
		var other uint64
		for _, s := range gcSamples[1:] {
			other += s.Value.Uint64()
		}
		live := gcSamples[0].Value.Uint64()
		limit := gcLimit(live, other)
		if limit == math.MaxInt64 {
			limit = gcBackstop
		}
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(gcPercent(live, other))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
