package main

import (
	"context"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestGCLimitFollowsTheLiveHeapAboveTheFloor(t *testing.T) {
	if got := gcLimit(10<<20, 5<<20); got != math.MaxInt64 { // 41 MiB, under the floor
		t.Fatalf("a small heap got a limit: %d", got)
	}
	// 200 MiB live, 60 MiB stacks and metadata: 400 + 60 + 16 MiB.
	if got, want := gcLimit(200<<20, 60<<20), int64(476<<20); got != want {
		t.Fatalf("limit %d MiB, want %d MiB", got>>20, want>>20)
	}
}

func TestTuneGCStaysOffWhenTheRuntimeIsConfigured(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
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
	// Without them it runs until its context ends, then removes the limit.
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { tuneGC(ctx, func(string) string { return "" }); close(stopped) }()
	cancel()
	<-stopped
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("the limit was left at %d", got)
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
