//go:build unix

package main

import (
	"context"
	"os"
	"time"
)

// waitParentGone blocks until the process ppid is no longer this process's
// parent (an orphan is re-parented to init or a subreaper, so getppid
// changes) and reports true, or until ctx ends (false). A parent pid of 1
// at start means the parent had already gone.
func waitParentGone(ctx context.Context, ppid int) bool {
	if ppid == 1 {
		return true
	}
	tick := time.NewTicker(parentPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
			if os.Getppid() != ppid {
				return true
			}
		}
	}
}
