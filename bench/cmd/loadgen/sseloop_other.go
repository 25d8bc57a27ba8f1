//go:build !linux

package main

import (
	"context"
	"net"
)

// watch reads the rest of body from conn; without Linux's epoll this is
// the stream's own goroutine (sseloop_linux.go says what the loop saves).
func watch(ctx context.Context, conn net.Conn, body *streamBody) error {
	return readBody(ctx, conn, body)
}
