// Package freshstack runs a function on another goroutine and waits for it,
// so that a deep call does not grow the caller's stack. A goroutine keeps
// the largest stack it ever needed while it stays blocked in a deep call,
// and a chat stream's connection goroutine stays blocked for the whole
// stream: one deep moment doubles its stack from 8 to 16 KiB for that long
// (mockserver/stack.go has the budget and the guard test).
//
// The function runs on one of a few worker goroutines that wait for the
// next call when they are done, not on a goroutine started per call. Why:
// a new goroutine starts with a small stack and grows it, a copy at each
// doubling that walks every frame's tables to move its pointers; for the
// four deep moments of a chat turn that was a tenth of the mock's CPU per
// turn (BenchmarkChatRequest; bench/results.md, "Issue 21, tenth round").
// A worker keeps its grown stack for the next call, and ends after
// idleFor without one, so a burst leaves nothing behind for long.
package freshstack

import (
	"sync/atomic"
	"time"
)

// call is one Run: the function, and where its panic (or nil) goes.
type call struct {
	fn   func()
	done chan any
}

var (
	// calls hands a call to a waiting worker that a caller claimed.
	calls = make(chan *call)
	// waiting counts the workers waiting for a call and not yet claimed.
	waiting atomic.Int32
)

// maxWaiting bounds the workers kept waiting: a burst of concurrent calls
// starts as many workers, and all but these end with their call.
const maxWaiting = 32

// idleFor is how long a worker waits for a call before it ends (atomic:
// the tests shorten it while workers of earlier tests still run).
var idleFor atomic.Int64

func init() { idleFor.Store(int64(2 * time.Second)) }

// Run runs fn on another goroutine and waits for it; a panic in fn is
// raised again on the caller's goroutine.
func Run(fn func()) {
	c := &call{fn: fn, done: make(chan any, 1)}
	if takeWaiting() {
		calls <- c
	} else {
		go work(c)
	}
	if p := <-c.done; p != nil {
		panic(p)
	}
}

// takeWaiting uncounts one waiting worker, if there is one: a caller that
// claims it for a call (the worker receives from calls next), or an idle
// worker leaving. When none is left to uncount, every waiting worker has
// been claimed, and an idle worker must stay for the call on its way.
func takeWaiting() bool {
	for {
		n := waiting.Load()
		if n <= 0 {
			return false
		}
		if waiting.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// work runs c, then further calls while fewer than maxWaiting workers wait
// and one comes within idleFor. It counts itself waiting before it hands
// c's outcome back, so that the caller's next call finds it.
func work(c *call) {
	var idle *time.Timer
	for {
		p := c.run()
		stay := waiting.Load() < maxWaiting
		if stay {
			waiting.Add(1)
		}
		c.done <- p
		if !stay {
			return
		}
		if d := time.Duration(idleFor.Load()); idle == nil {
			idle = time.NewTimer(d)
		} else {
			idle.Reset(d)
		}
		select {
		case c = <-calls:
		case <-idle.C:
			if takeWaiting() {
				return
			}
			c = <-calls // every waiting worker is claimed: a call is on its way
		}
	}
}

// run runs the call's function and returns its panic, if any.
func (c *call) run() (p any) {
	defer func() { p = recover() }()
	c.fn()
	return nil
}
