package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// parentPollInterval is how often the parent process is checked where
// nothing announces its exit; it bounds how long the mock outlives it.
const parentPollInterval = 200 * time.Millisecond

// exitWithParent returns ctx, also cancelled once the process that started
// this one has exited, however it ended (SIGKILL included): the shutdown is
// then the same as on SIGTERM. Test runners and the npm shim start the mock
// this way (--exit-with-parent) so that it never outlives them.
//
// Linux also gets a parent-death signal (SIGTERM, the moment the parent
// exits); everywhere the parent is checked every parentPollInterval. A write
// to a pipe whose reader is gone (the parent's end of stdout or stderr)
// then fails instead of killing the process mid-shutdown.
func exitWithParent(ctx context.Context, logger *slog.Logger) context.Context {
	signal.Ignore(syscall.SIGPIPE)
	ppid := os.Getppid()
	if err := armParentDeathSignal(); err != nil {
		logger.Warn("no parent-death signal; polling the parent instead", "error", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		if waitParentGone(ctx, ppid) {
			logger.Info("the parent process is gone: shutting down", "parent_pid", ppid)
			cancel()
		}
	}()
	return ctx
}
