//go:build linux

package main

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"
	"unsafe"
)

// newTimedConn asks the kernel to stamp conn's received data with the time
// it arrived (SO_TIMESTAMPNS; TCP hands back the stamp of the last segment
// a read consumed) and reads it with recvmsg(2). Where that cannot be set,
// reads are timed when they return.
func newTimedConn(conn net.Conn) *timedConn {
	tc := &timedConn{Conn: conn}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return tc
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return tc
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return tc
	}
	oob := make([]byte, 64)
	// Reads wait through the runtime's poller, as net.Conn's do.
	tc.rx = func(p []byte) (n int, at arrival, err error) {
		var rerr error
		err = rc.Read(func(fd uintptr) bool {
			n, at, rerr = recvArrival(int(fd), p, oob)
			return !errors.Is(rerr, syscall.EAGAIN)
		})
		if err == nil {
			err = rerr
		}
		if err == nil && n == 0 && len(p) > 0 {
			err = io.EOF
		}
		return n, at, err
	}
	return tc
}

// recvArrival is one recvmsg(2) on fd (non-blocking) with the arrival of
// what it returned: the receive time the kernel attached, or the read time
// when there is none (SO_TIMESTAMPNS not set, or nothing read).
func recvArrival(fd int, p, oob []byte) (int, arrival, error) {
	for {
		n, oobn, _, _, err := syscall.Recvmsg(fd, p, oob, 0)
		at := readNow()
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return max(n, 0), at, err
		}
		if t, ok := rxTime(oob[:oobn]); ok {
			// The kernel's time is the wall clock's, which this VM has
			// seen stepped by 25 s mid-run: only how long ago the data
			// came is taken from it (two wall readings microseconds
			// apart), and placed on the monotonic clock of the read.
			if ago := at.read.Sub(t); ago >= 0 && ago < maxRxAge {
				at.socket = at.read.Add(-ago)
			}
		}
		return n, at, nil
	}
}

// maxRxAge bounds how long before its read a receive time may be: an
// older one means the wall clock stepped between the two, and the read's
// time is kept.
const maxRxAge = 10 * time.Second

// rxTime finds SCM_TIMESTAMPNS in a recvmsg(2) control buffer. It walks
// the headers itself: syscall.ParseSocketControlMessage allocates a slice
// on every call, and this runs on every read of every stream.
func rxTime(oob []byte) (time.Time, bool) {
	for len(oob) >= syscall.SizeofCmsghdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if int(h.Len) < syscall.SizeofCmsghdr || int(h.Len) > len(oob) {
			return time.Time{}, false
		}
		data := oob[syscall.CmsgLen(0):h.Len]
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&data[0]))
			if ts.Sec == 0 && ts.Nsec == 0 {
				return time.Time{}, false
			}
			return time.Unix(int64(ts.Sec), int64(ts.Nsec)), true
		}
		next := syscall.CmsgSpace(int(h.Len) - syscall.CmsgLen(0))
		if next > len(oob) {
			break
		}
		oob = oob[next:]
	}
	return time.Time{}, false
}
