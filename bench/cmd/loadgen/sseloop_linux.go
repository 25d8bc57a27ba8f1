//go:build linux

package main

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"
	"time"
)

// The event loop: one goroutine waits in epoll_wait(2) for every stream's
// socket and reads each as it becomes readable, on level-triggered
// readiness, so a read shorter than the buffer means the socket is drained
// and no read is wasted on EAGAIN. The stream's own goroutine only waits
// for the result. Why: a goroutine per stream blocked in Read costs, per
// frame, a read that returns the frame, a read that returns EAGAIN, the
// runtime's poller waking the goroutine and a scheduler hand-off; at
// 10,000 streams on 2 CPUs that made the client a third of the machine's
// CPU at the busiest moment, and every cycle it takes is one the server
// under test does not get (bench/history.md, "Issue 21, fourth round").
//
// The loop is paced (--loop-pace): after it wakes it lets arrivals gather
// for the rest of the pace before it waits again. Why: the kernel wakes a
// reader asleep in epoll_wait(2) inside the writer's write(2), so on a
// busy run the server paid for a wake-up (and, on a virtual machine, an
// interrupt to the other CPU) per frame; paced, the loop is seldom asleep
// in epoll_wait and reads a batch per wake-up (bench/history.md, "Issue 21,
// tenth round"). A frame is then read up to the pace after it arrived; its
// lateness is taken at its arrival on the socket (arrival.go), and the
// read time, which includes the pace, is reported beside.

// loop is the process's event loop; loopOnce starts it on first use.
type loop struct {
	epfd int
	pace time.Duration // the least time from one wake-up to the next wait; 0: none

	mu      sync.Mutex // held while a stream is read, and to add or drop one
	streams map[int32]*watched
	gen     int32
}

// watched is a stream the loop reads: its own descriptor (a duplicate:
// the net.Conn is closed, so the runtime's poller no longer watches it).
type watched struct {
	fd   int
	gen  int32 // tells a reused descriptor number from this stream
	body *streamBody
	done chan error // gets the outcome once
}

var (
	loopOnce  sync.Once
	theLoop   *loop
	errNoLoop error
)

// sharedLoop is the process's loop; the first caller's pace is its pace
// (a process runs one measurement).
func sharedLoop(pace time.Duration) (*loop, error) {
	loopOnce.Do(func() { theLoop, errNoLoop = newLoop(pace) })
	return theLoop, errNoLoop
}

// newLoop starts a loop; it runs as long as the process.
func newLoop(pace time.Duration) (*loop, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	l := &loop{epfd: fd, pace: pace, streams: map[int32]*watched{}}
	go l.run()
	return l, nil
}

// readOnLoop reads the rest of body from conn on the process's event loop
// (paced by pace, when it starts it) and returns its outcome; it falls back
// to readBody when the loop cannot take conn.
func readOnLoop(ctx context.Context, conn *timedConn, body *streamBody, pace time.Duration) error {
	l, err := sharedLoop(pace)
	if err != nil {
		return readBody(ctx, conn, body)
	}
	return l.read(ctx, conn, body)
}

// read reads the rest of body from conn on l.
func (l *loop) read(ctx context.Context, conn *timedConn, body *streamBody) error {
	sc, ok := conn.Conn.(syscall.Conn)
	if !ok {
		return readBody(ctx, conn, body)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return readBody(ctx, conn, body)
	}
	fd := -1
	if cerr := rc.Control(func(f uintptr) { fd, err = syscall.Dup(int(f)) }); cerr != nil || err != nil {
		return readBody(ctx, conn, body)
	}
	// The duplicate shares the socket (and its O_NONBLOCK): closing the
	// Conn takes it out of the runtime's poller and sends nothing.
	_ = conn.Close()
	w := &watched{fd: fd, body: body, done: make(chan error, 1)}
	if err := l.add(w); err != nil {
		_ = syscall.Close(fd)
		return err
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		l.finish(w, ctx.Err())
		return <-w.done // the loop may have finished it first
	}
}

func (l *loop) add(w *watched) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	w.gen = l.gen
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(w.fd), Pad: w.gen}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, w.fd, &ev); err != nil {
		return err
	}
	l.streams[int32(w.fd)] = w
	return nil
}

// finish ends w with err, once: the descriptor leaves the loop and closes.
func (l *loop) finish(w *watched, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.finishLocked(w, err)
}

func (l *loop) finishLocked(w *watched, err error) {
	if l.streams[int32(w.fd)] != w {
		return // already finished
	}
	delete(l.streams, int32(w.fd))
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, w.fd, nil)
	_ = syscall.Close(w.fd)
	w.done <- err
}

func (l *loop) run() {
	events := make([]syscall.EpollEvent, 512)
	buf := make([]byte, 64<<10)
	oob := make([]byte, 64)
	var woke time.Time
	for {
		if !woke.IsZero() {
			l.gather(woke)
		}
		n, err := syscall.EpollWait(l.epfd, events, -1)
		woke = time.Now()
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			panic("loadgen: epoll_wait: " + err.Error()) // cannot happen with a valid epoll descriptor
		}
		for _, ev := range events[:n] {
			l.mu.Lock()
			if w := l.streams[ev.Fd]; w != nil && w.gen == ev.Pad {
				l.readLocked(w, buf, oob)
			}
			l.mu.Unlock()
		}
	}
}

// gather sleeps out the rest of the pace from woke, so that what arrives
// meanwhile is read in one batch instead of waking the loop once each. It
// sleeps in nanosleep(2) on the loop's thread, as epoll_wait blocks it:
// the runtime's timers round a sleep this short up to a millisecond.
func (l *loop) gather(woke time.Time) {
	d := l.pace - time.Since(woke)
	if d <= 0 {
		return
	}
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}

// readLocked reads w until its socket is drained, pushing what arrives
// with its arrival (recvArrival: the duplicate descriptor shares the
// socket's SO_TIMESTAMPNS).
func (l *loop) readLocked(w *watched, buf, oob []byte) {
	for {
		n, at, err := recvArrival(w.fd, buf, oob)
		switch {
		case n > 0:
			done, perr := w.body.push(buf[:n], at)
			if done || perr != nil {
				l.finishLocked(w, perr)
				return
			}
			if n < len(buf) {
				return // drained; level-triggered readiness brings the rest
			}
		case n == 0 && err == nil:
			l.finishLocked(w, io.ErrUnexpectedEOF) // the body's end never came
			return
		case errors.Is(err, syscall.EAGAIN):
			return
		default:
			l.finishLocked(w, err)
			return
		}
	}
}
