//go:build unix

package main

import "syscall"

// reuseAddr sets SO_REUSEADDR on a socket the client binds to a port of its
// own choosing: without it, bind(2) refuses a port that a connection of an
// earlier run still holds in TIME_WAIT (the client closes first when it
// reads the last chunk before the server's FIN), and one run's contiguous
// block of such ports made the next run fail to find a port.
func reuseAddr(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	}); cerr != nil {
		return cerr
	}
	return err
}
