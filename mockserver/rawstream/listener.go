package rawstream

import (
	"errors"
	"net"
	"sync"
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
}

type accepted struct {
	c   net.Conn
	err error
}

// Listen wraps ln.
func Listen(ln net.Listener) *Listener {
	l := &Listener{Listener: ln, back: make(chan net.Conn), accepted: make(chan accepted), closed: make(chan struct{})}
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

// Close closes ln; connections handed back after it are closed.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.closed) })
	return err
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

// SetLinger keeps a fault's reset (SO_LINGER 0) working on a returned
// connection.
func (c *prefixConn) SetLinger(sec int) error {
	if l, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		return l.SetLinger(sec)
	}
	return errors.ErrUnsupported
}
