//go:build linux

package rawstream

import (
	"errors"
	"sync"
	"syscall"
)

// The hang-up watcher: one goroutine waits in epoll_wait(2) on every live
// stream's socket, in an epoll set of its own beside the runtime's poller
// (which keeps the socket for the stream's writes). An SSE client sends
// nothing while it reads a stream, so the socket becomes readable only when
// the client hangs up (EOF, reset) or pipelines its next request; then the
// stream gets its reader goroutine, which reads that as before. Why: a
// goroutine per stream parked in a one-byte Read was half of a 10,000-stream
// run's goroutines, each a stack the collector scans in every cycle
// (bench/results.md, "Issue 21, eighth round").

type hangupWatcher struct {
	epfd int

	mu      sync.Mutex
	streams map[uint64]*Stream // by registration token
	next    uint64
}

var (
	watcherOnce sync.Once
	theWatcher  *hangupWatcher
)

func sharedWatcher() *hangupWatcher {
	watcherOnce.Do(func() {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return // every stream gets its own reader, as elsewhere than Linux
		}
		theWatcher = &hangupWatcher{epfd: fd, streams: map[uint64]*Stream{}}
		go theWatcher.run()
	})
	return theWatcher
}

// watchHangup registers s's socket with the watcher and marks s watched;
// false when it cannot (no watcher, not a socket, already closed), and s
// needs its own reader.
func watchHangup(s *Stream) bool {
	w := sharedWatcher()
	if w == nil {
		return false
	}
	conn := s.conn
	if pc, ok := conn.(*prefixConn); ok { // a connection handed back before
		if len(pc.early) > 0 {
			return false // bytes the socket will not signal again
		}
		conn = pc.Conn
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	tok := w.next
	// One-shot: the first readiness wakes the stream and disarms the
	// registration. A stream that ends first removes it (forgetHangup); a
	// closed socket leaves the set by itself.
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT,
		Fd: int32(uint32(tok)), Pad: int32(uint32(tok >> 32))}
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cerr = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
		if errors.Is(cerr, syscall.EEXIST) { // served a stream before, woken and handed back since
			cerr = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
		}
	}); err != nil || cerr != nil {
		return false
	}
	// Before the stream is in the map: the watcher reaches s only through
	// it, under w.mu, so it sees these fields set.
	s.watched, s.token, s.rc = true, tok, rc
	w.streams[tok] = s
	return true
}

// forgetHangup removes s's registration (the stream ended before its
// client did anything). Removed, not left armed: the client's close after
// the stream's end would wake the watcher for nothing, once per stream, at
// the moment a cohort of streams ends together.
func forgetHangup(s *Stream) {
	w := theWatcher
	if w == nil {
		return
	}
	w.mu.Lock()
	delete(w.streams, s.token)
	w.mu.Unlock()
	_ = s.rc.Control(func(fd uintptr) { _ = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil) })
}

func (w *hangupWatcher) run() {
	events := make([]syscall.EpollEvent, 256)
	for {
		n, err := syscall.EpollWait(w.epfd, events, -1)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			panic("rawstream: epoll_wait: " + err.Error()) // cannot happen with a valid epoll descriptor
		}
		for _, ev := range events[:n] {
			tok := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			w.mu.Lock()
			s := w.streams[tok]
			delete(w.streams, tok)
			w.mu.Unlock()
			if s != nil {
				s.wake()
			}
		}
	}
}
