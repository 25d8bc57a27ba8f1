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
// Below gcFloor the default pacing runs alone. Setting GOGC or GOMEMLIMIT
// turns this off (the runtime's own settings win).
const (
	gcFloor    = 64 << 20
	gcHeadroom = 1.0 // the live heap again: GOGC=100's goal
	gcRetune   = 250 * time.Millisecond
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

// tuneGC keeps the soft memory limit at gcLimit until ctx ends (then it
// removes the limit). It does nothing when GOGC or GOMEMLIMIT is set.
func tuneGC(ctx context.Context, getenv func(string) string) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return
	}
	t := time.NewTicker(gcRetune)
	defer t.Stop()
	defer debug.SetMemoryLimit(math.MaxInt64)
	for {
		metrics.Read(gcSamples)
		var other uint64
		for _, s := range gcSamples[1:] {
			other += s.Value.Uint64()
		}
		debug.SetMemoryLimit(gcLimit(gcSamples[0].Value.Uint64(), other))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
