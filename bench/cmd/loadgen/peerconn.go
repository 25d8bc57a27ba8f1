package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// The peers' closed loop sends GET /v1/parameters over raw keep-alive
// connections: one request written whole, the response read with
// net/http's parser. The load generator shares the two vCPUs with the
// server it measures, and net/http's client cost about 60 µs of CPU per
// request there, more than the mock itself (bench/history.md, "Issue 21,
// thirteenth round"): its transport hands every request to a write
// goroutine and every response to a read goroutine. Every server gets the
// same bytes on the same kind of connection; what the client saves goes to
// whichever server is measured, so it no longer narrows the gap between a
// fast server and a slow one.

// peerConns is a target's pool of keep-alive connections for the loop.
type peerConns struct {
	addr string
	req  []byte // the request, written whole

	mu   sync.Mutex
	idle []*peerConn
}

// peerConn is one keep-alive connection and its reader.
type peerConn struct {
	c  net.Conn
	br *bufio.Reader
}

// newPeerConns prepares GET <base>/parameters?user=bench with the same
// headers the check of the bodies sends (getParameters).
func newPeerConns(base string) (*peerConns, error) {
	u, err := url.Parse(base + "/parameters?user=bench")
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%s: the closed loop speaks plain http", base)
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer app-bench\r\nUser-Agent: loadgen\r\n\r\n", u.RequestURI(), u.Host)
	return &peerConns{addr: u.Host, req: []byte(req)}, nil
}

// get takes an idle connection or dials one.
func (p *peerConns) get() (*peerConn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		pc := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return pc, nil
	}
	p.mu.Unlock()
	c, err := net.DialTimeout("tcp", p.addr, 30*time.Second)
	if err != nil {
		return nil, err
	}
	return &peerConn{c: c, br: bufio.NewReaderSize(c, 16<<10)}, nil
}

// put keeps pc for the next loop.
func (p *peerConns) put(pc *peerConn) {
	p.mu.Lock()
	p.idle = append(p.idle, pc)
	p.mu.Unlock()
}

// closeIdle closes the pool's idle connections.
func (p *peerConns) closeIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.idle {
		_ = pc.c.Close()
	}
	p.idle = nil
}

// do sends the request on pc and reads the whole response; it reports
// whether pc can carry the next one.
func (p *peerConns) do(pc *peerConn, deadline time.Time) (status int, keep bool, err error) {
	_ = pc.c.SetDeadline(deadline)
	if _, err := pc.c.Write(p.req); err != nil {
		return 0, false, err
	}
	resp, err := http.ReadResponse(pc.br, nil)
	if err != nil {
		return 0, false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, err == nil && !resp.Close, err
}
