package main

import (
	"net"
	"time"
)

// arrival is when bytes reached the load generator: at its socket, and
// when the read that returned them did. A frame's lateness is taken at the
// socket: that is when the mock's frame arrived, whatever the load
// generator was doing then. On a 2-vCPU virtual machine the client's own
// wake-up added up to 2.3 ms to a lone stream's frames on an idle machine,
// so its read time is the load generator's lateness as much as the mock's
// (bench/history.md, "Issue 21, thirteenth round"). Both are kept: the
// read time is reported beside (streamsResult.LatenessRead).
type arrival struct {
	socket time.Time // the kernel's receive time (Linux), else = read
	read   time.Time
}

// readNow is an arrival without a receive time: both are now.
func readNow() arrival {
	now := time.Now()
	return arrival{socket: now, read: now}
}

// timedConn is a connection whose reads remember their arrival (last).
type timedConn struct {
	net.Conn
	rx   func(p []byte) (int, arrival, error) // nil where the kernel gives no receive time
	last arrival
}

func (c *timedConn) Read(p []byte) (int, error) {
	if c.rx == nil {
		n, err := c.Conn.Read(p)
		c.last = readNow()
		return n, err
	}
	n, at, err := c.rx(p)
	c.last = at
	return n, err
}
