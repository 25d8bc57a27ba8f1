package main

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestGCLimitFollowsTheLiveHeapAboveTheFloor(t *testing.T) {
	if got := gcLimit(gcMemory{live: 10 << 20, roots: 2 << 20, other: 5 << 20}); got != math.MaxInt64 { // 43 MiB, under the floor
		t.Fatalf("a small heap got a limit: %d", got)
	}
	// 200 MiB live, 60 MiB of stacks, metadata and free slots held: 400 +
	// 60 + 16 MiB.
	if got, want := gcLimit(gcMemory{live: 200 << 20, roots: 40 << 20, other: 60 << 20}), int64(476<<20); got != want {
		t.Fatalf("limit %d MiB, want %d MiB", got>>20, want>>20)
	}
}

// A small heap's goal is raised to gcMinGoal (a closed loop of small
// requests otherwise collected 50 times a second); a heap that size or
// larger keeps the default pacing.
func TestGCPercentAimsASmallHeapAtTheMinimumGoal(t *testing.T) {
	for _, c := range []struct {
		live, other uint64
		want        int
	}{
		{1 << 20, 1 << 20, 1550},  // (32 − 1) MiB over 2 MiB: the goal is 1 + 2 × 15.5 = 32 MiB
		{8 << 20, 2 << 20, 240},   // 8 + 10 × 2.4 = 32 MiB
		{20 << 20, 10 << 20, 100}, // 40 % would aim under twice the live heap
		{gcMinGoal, 0, 100},
		{200 << 20, 60 << 20, 100},
		{0, 0, 10000}, // an empty heap at start: capped
	} {
		if got := gcPercent(c.live, c.other); got != c.want {
			t.Errorf("gcPercent(%d MiB live, %d MiB other) = %d, want %d", c.live>>20, c.other>>20, got, c.want)
		}
	}
}

func TestTuneGCStaysOffWhenTheRuntimeIsConfigured(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	percent := debug.SetGCPercent(100)
	defer debug.SetGCPercent(percent)
	done := make(chan struct{})
	go func() {
		tuneGC(context.Background(), func(k string) string {
			if k == "GOMEMLIMIT" {
				return "1GiB"
			}
			return ""
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("tuneGC ran although GOMEMLIMIT was set")
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("the memory limit changed from %d to %d", before, got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("the GC percent changed to %d", got)
	}
	// Without them it runs until its context ends, then removes the limit.
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { tuneGC(ctx, func(string) string { return "" }); close(stopped) }()
	cancel()
	<-stopped
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("the limit was left at %d", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("the GC percent was left at %d", got)
	}
}

func TestBatchWriterWritesLinesSoonInOrder(t *testing.T) {
	var out syncBuffer
	w := newBatchWriter(&out)
	var want strings.Builder
	for i := range 100 {
		line := strings.Repeat("x", i*50) + "\n"
		want.WriteString(line)
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	// Everything arrives without Close, shortly after the last write.
	deadline := time.Now().Add(10 * time.Second)
	for out.String() != want.String() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s, %d of %d bytes were written", len(out.String()), want.Len())
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, _ = w.Write([]byte("last\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want.String()+"last\n" {
		t.Fatal("Close did not write the last line")
	}
}

// The soft memory limit returns memory without collecting sooner than at
// twice the live heap: in a process shaped like many live streams after
// their ramp (goroutines with grown stacks, a live heap of small objects
// among the free slots that twice as much garbage left in their spans),
// the heap's goal under gcLimit's limit is at least that. Before the free
// slots counted, this process's goal was 85 MiB with the limit and 112
// without, for 53 MiB live.
func TestGCLimitDoesNotCollectSooner(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const streams = 2000
	var ready, done sync.WaitGroup
	stop := make(chan struct{})
	ready.Add(streams)
	done.Add(streams)
	for i := range streams {
		go func() {
			defer done.Done()
			var frame [3 << 10]byte // grows the stack past its first 2 KiB, as a stream's does
			frame[i%len(frame)] = 1
			ready.Done()
			<-stop
			runtime.KeepAlive(&frame)
		}()
	}
	defer func() { close(stop); done.Wait() }()
	ready.Wait()
	// About 50 MiB live in objects of 64 B to 4 KiB, among the free slots
	// of twice as much garbage.
	var live [][]byte
	for i := 0; len(live) < 24000; i++ {
		b := make([]byte, 64+(i*97)%4032)
		if i%3 == 0 {
			live = append(live, b)
		}
	}
	runtime.GC()
	goal := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(goal)
	without := goal[0].Value.Uint64()
	m := readGCMemory()
	limit := gcLimit(m)
	if limit == math.MaxInt64 {
		t.Fatalf("%+v is under the floor: no limit to test", m)
	}
	debug.SetMemoryLimit(limit)
	runtime.GC()
	metrics.Read(goal)
	with := goal[0].Value.Uint64()
	runtime.KeepAlive(live)
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	t.Logf("limit %d MiB: heap goal %.1f MiB with it, %.1f MiB without; %.1f MiB live", limit>>20, mib(with), mib(without), mib(m.live))
	if float64(with) < 0.98*2*float64(m.live) {
		t.Fatalf("the limit pulls the heap's goal under twice the live heap (%.1f MiB): %.1f MiB (%.1f without it); collections would come sooner", mib(2*m.live), mib(with), mib(without))
	}
}

// tuneGC hears of every collection, not only of its ticks: each forced
// collection gives a signal.
func TestAfterEachGCSignalsEachCollection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	collected := afterEachGC(ctx)
	for i := range 3 {
		runtime.GC()
		select {
		case <-collected:
		case <-time.After(10 * time.Second):
			t.Fatalf("no signal after collection %d", i+1)
		}
	}
}
