package main

import (
	"context"
	"math"
	"runtime"
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
// serve sets a soft memory limit at what the default pacing aims at, which
// makes the runtime return memory above it promptly without collecting more
// often: at 10,000 live streams RSS went from 401 to 382 MiB at the same
// CPU. The limit is the live heap twice plus everything else the process
// holds but free pages: the stacks, the runtime's metadata, and the free
// slots in spans that still hold live objects (/memory/classes/heap/unused),
// which the ramp of thousands of requests leaves behind and only new
// objects fill. Those slots are memory the process holds either way; left
// out (the limit counted only stacks and some metadata), they pulled the
// heap's goal under twice the live heap by however many there were, which
// varies from run to run with how the ramp's requests interleaved: in a
// test process with 53 MiB live among the free slots of twice as much
// garbage, the goal was 85 MiB instead of 112 (twice the live heap is 106),
// so collections, each marking every stream's stack, came 1.6 times as
// often (TestGCLimitDoesNotCollectSooner). The goal the default pacing
// would set is higher still (GOGC counts the stacks as roots, 80 MiB at
// 10,000 streams): the limit stays under it, trading some collections for
// memory. A tighter limit (a quarter over the live heap) cut RSS further but
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
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/objects:bytes"},
}

// gcMemory is what the collector's settings are made from: the live heap,
// what gcPercent takes for the roots (stacks and the runtime's other
// metadata) and the memory the process holds that is neither heap objects
// nor free pages (stacks, all metadata, free slots in spans in use).
type gcMemory struct{ live, roots, other uint64 }

// readGCMemory reads gcSamples.
func readGCMemory() gcMemory {
	metrics.Read(gcSamples)
	v := func(i int) uint64 { return gcSamples[i].Value.Uint64() }
	held := v(4) - v(5) // mapped and not returned to the OS
	return gcMemory{live: v(0), roots: v(1) + v(2) + v(3), other: held - min(held, v(6)+v(7))}
}

// gcLimit is the soft memory limit: none below the floor, else the live
// heap plus headroom, plus the rest the process holds, plus a margin for
// the pacer's slack (the runtime keeps its heap goal 3 % under the limit).
func gcLimit(m gcMemory) int64 {
	want := float64(m.live)*(1+gcHeadroom) + float64(m.other) + 16<<20
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
	collected := afterEachGC(ctx)
	defer debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetGCPercent(100) // the default: GOGC is not set
	for {
		m := readGCMemory()
		limit := gcLimit(m)
		if limit == math.MaxInt64 {
			limit = gcBackstop
		}
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(gcPercent(m.live, m.roots))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-collected:
		}
	}
}

// afterEachGC signals (without blocking) once after each collection until
// ctx ends, so tuneGC retunes as soon as the live heap it is made from has
// a new value. The ticker alone lagged in a burst: with 1,000 live chats
// starting within 0.7 s the heap grew from 13 to 36 MiB between two
// ticks, and the limit made from the old live heap held the goal a MiB or
// two over it: three collections in 0.2 s, with allocation assists, in
// the very window where the burst's first frames are due.
func afterEachGC(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	var arm func()
	arm = func() {
		if ctx.Err() != nil {
			return
		}
		// Unreachable at once: its cleanup runs after the next
		// collection, and arms the next sentinel. A pointer field keeps
		// it out of the tiny allocator, whose blocks outlive their
		// objects.
		runtime.AddCleanup(&gcSentinel{p: new(int)}, func(struct{}) {
			arm() // first: a collection right after the signal is heard too
			select {
			case ch <- struct{}{}:
			default:
			}
		}, struct{}{})
	}
	arm()
	return ch
}

type gcSentinel struct{ p *int }
