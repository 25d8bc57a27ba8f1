//go:build !linux

package main

import (
	"context"
	"time"
)

// readOnLoop reads the rest of body from conn; without Linux's epoll this
// is the stream's own goroutine (sseloop_linux.go says what the loop saves).
func readOnLoop(ctx context.Context, conn *timedConn, body *streamBody, _ time.Duration) error {
	return readBody(ctx, conn, body)
}
