package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listen opens a TCP listener on addr. When the port is taken, the error
// says how to find the process holding it: a `go run` stopped by its PID,
// for one, leaves the real server running.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		return ln, err
	}
	_, port, _ := net.SplitHostPort(addr)
	return nil, fmt.Errorf("%w\n  another process holds port %s; find it with `ss -ltnp 'sport = :%s'` or `lsof -i :%s`,\n"+
		"  stop it, or pick another port with --addr 127.0.0.1:PORT", err, port, port, port)
}
