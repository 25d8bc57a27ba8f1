// Package freshstack runs a function on a new goroutine and waits for it,
// so that a deep call does not grow the caller's stack. A goroutine keeps
// the largest stack it ever needed while it stays blocked in a deep call,
// and a chat stream's connection goroutine stays blocked for the whole
// stream: one deep moment doubles its stack from 8 to 16 KiB for that long
// (mockserver/stack.go has the budget and the guard test).
package freshstack

// Run runs fn on a new goroutine and waits for it; a panic in fn is raised
// again on the caller's goroutine.
func Run(fn func()) {
	done := make(chan any, 1)
	go func() {
		var p any
		defer func() { done <- p }()
		defer func() { p = recover() }()
		fn()
	}()
	if p := <-done; p != nil {
		panic(p)
	}
}
