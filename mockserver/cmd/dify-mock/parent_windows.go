package main

import (
	"context"
	"os"
)

// waitParentGone blocks until the process ppid has exited (true) or ctx
// ends (false). Windows keeps a process's parent id after the parent exits,
// so the parent's own handle is waited on.
func waitParentGone(ctx context.Context, ppid int) bool {
	p, err := os.FindProcess(ppid)
	if err != nil {
		return true // no such process: gone already
	}
	exited := make(chan struct{})
	go func() {
		_, _ = p.Wait()
		close(exited)
	}()
	select {
	case <-ctx.Done():
		return false
	case <-exited:
		return true
	}
}
