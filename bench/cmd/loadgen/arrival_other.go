//go:build !linux

package main

import "net"

// newTimedConn times reads when they return: the kernel's receive time is
// read on Linux only (arrival_linux.go).
func newTimedConn(conn net.Conn) *timedConn { return &timedConn{Conn: conn} }
