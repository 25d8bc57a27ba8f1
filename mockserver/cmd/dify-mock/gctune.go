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
// bound turn) plus goroutine stacks, and Go's default pacing (GOGC=100)
// lets the heap grow to twice what is live plus the stacks before it
// collects: at 10,000 streams that was 450–480 MiB of RSS for about 200 MiB
// in use. Once the process holds more than gcFloor, serve caps the heap at
// a quarter over what the last collection found live (a soft memory limit
// that follows the live memory, so it never forces collections the live
// data cannot satisfy); below gcFloor the default pacing runs unchanged, so
// small heaps under many short requests are not collected more often.
// Setting GOGC or GOMEMLIMIT turns this off (the runtime's own settings
// win).
const (
	gcFloor    = 64 << 20
	gcHeadroom = 0.25
	gcRetune   = 250 * time.Millisecond
)

var gcSamples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/memory/classes/heap/stacks:bytes"},
	{Name: "/memory/classes/os-stacks:bytes"},
	{Name: "/memory/classes/metadata/other:bytes"},
}

// gcLimit is the soft memory limit for live heap bytes and other
// (non-heap) runtime memory: the floor, or the live heap plus headroom
// plus the rest.
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
