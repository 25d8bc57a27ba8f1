package freshstack

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRunWaitsAndRaisesPanics(t *testing.T) {
	ran := false
	Run(func() { ran = true })
	if !ran {
		t.Fatal("Run returned before fn ran")
	}
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want the panic of fn", p)
		}
	}()
	Run(func() { panic("boom") })
	t.Fatal("a panic in fn was swallowed")
}

// goroutineID is the running goroutine's number, from its stack's header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return strings.Fields(string(buf))[1]
}

// Calls run on workers that wait for the next one, not on a goroutine
// started per call (which would grow a new stack for every deep call): calls
// made one after another start one worker at most, and run on the workers
// already waiting.
func TestRunReusesAWaitingWorker(t *testing.T) {
	caller := goroutineID()
	workers := max(1, int(waiting.Load()))
	ran := map[string]bool{}
	for range 200 {
		Run(func() { ran[goroutineID()] = true })
	}
	if ran[caller] {
		t.Fatalf("a call ran on the caller's goroutine %s", caller)
	}
	if len(ran) > workers {
		t.Fatalf("200 calls in turn ran on %d goroutines; want the %d worker(s) there were", len(ran), workers)
	}
}

// A burst of concurrent calls starts a worker each: all but maxWaiting of
// them end with their call, and the rest after idleFor without one.
func TestRunKeepsFewWorkersWaiting(t *testing.T) {
	defer idleFor.Store(idleFor.Load())
	idleFor.Store(int64(50 * time.Millisecond))
	before := runtime.NumGoroutine()
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 * maxWaiting {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Run(func() { <-release })
		}()
	}
	close(release)
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+maxWaiting {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after the burst, %d before; want at most %d workers left waiting", runtime.NumGoroutine(), before, maxWaiting)
		}
		runtime.Gosched()
	}
	// Until every worker has ended and none is counted waiting: the
	// goroutine count alone reaches its baseline while a worker of an
	// earlier test, counted in it and not claimed by the burst, still waits
	// out its longer idle time.
	for runtime.NumGoroutine() > before || waiting.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines %v after the burst, %d before, %d workers counted waiting: idle workers did not end",
				runtime.NumGoroutine(), time.Duration(idleFor.Load()), before, waiting.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	Run(func() {}) // a call after they all ended starts a worker again
}
