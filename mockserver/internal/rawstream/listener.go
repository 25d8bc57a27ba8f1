package rawstream

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Listener is the listener an http.Server serves on; connections whose
// stream was taken over (Take) come back through it when the client sends
// its next request, and net/http serves them as new connections.
type Listener struct {
	net.Listener
	back     chan net.Conn
	accepted chan accepted
	once     sync.Once
	closed   chan struct{}

	mu   sync.Mutex
	idle map[*Stream]struct{} // ended streams whose reader waits for a next request
}

type accepted struct {
	c   net.Conn
	err error
}

// Listen wraps ln.
func Listen(ln net.Listener) *Listener {
	l := &Listener{Listener: ln, back: make(chan net.Conn), accepted: make(chan accepted), closed: make(chan struct{}), idle: map[*Stream]struct{}{}}
	go l.acceptLoop()
	return l
}

// acceptLoop runs ln's Accept on a goroutine of its own, so Accept can wait
// for a new connection and a returned one at the same time.
func (l *Listener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- accepted{c, err}:
		case <-l.closed:
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if err != nil && errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Accept returns the next new or returned connection.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.back:
		return c, nil
	case a := <-l.accepted:
		return a.c, a.err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close closes ln; connections waiting for their next request are closed
// now (as http.Server.Shutdown closes idle connections), and any handed
// back later too.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.once.Do(func() { close(l.closed) })
	for s := range l.idle {
		_ = s.conn.SetReadDeadline(time.Now()) // its reader wakes and closes it
	}
	l.mu.Unlock()
	return err
}

// wait bounds the wait of s's reader for the client's next request: to
// s's idle time, or to now once the listener is closed (under l.mu, so
// that Close cannot come between the check and the deadline).
func (l *Listener) wait(s *Stream) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.closed:
		_ = s.conn.SetReadDeadline(time.Now())
		return
	default:
	}
	l.idle[s] = struct{}{}
	_ = s.conn.SetReadDeadline(time.Now().Add(s.idle))
}

func (l *Listener) done(s *Stream) {
	l.mu.Lock()
	delete(l.idle, s)
	l.mu.Unlock()
}

// give hands c to the server's next Accept, or closes it once the listener
// is closed.
func (l *Listener) give(c net.Conn) {
	select {
	case l.back <- c:
	case <-l.closed:
		_ = c.Close()
	}
}

// prefixConn is a returned connection whose first bytes were already read
// (by the Stream's reader, waiting for them).
type prefixConn struct {
	net.Conn
	early []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(p, c.early)
		c.early = c.early[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite keeps the half-close that ends a stream working on a returned
// connection.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// SetLinger keeps a fault's reset (SO_LINGER 0) working on a returned
// connection.
func (c *prefixConn) SetLinger(sec int) error {
	if l, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		return l.SetLinger(sec)
	}
	return errors.ErrUnsupported
}
