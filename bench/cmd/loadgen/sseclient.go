package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The streams client is part of the measurement (a late frame counts
// whether the server or the client was slow), so it is built to cost as
// little as the server's side of a stream: a raw TCP connection per stream,
// the request written once from pre-encoded bytes, the response header read
// with http.ReadResponse on a small pooled buffer, and the body decoded as
// it arrives (ssebody.go). From 2,000 streams on Linux one event loop reads
// every stream's body (sseloop_linux.go, --event-loop): a read per arrival
// and no goroutine woken, where a goroutine per stream blocked in Read cost
// two reads, a poller wake-up and a scheduler hand-off per frame, and at
// 10,000 streams made the client a third of the machine's CPU. No
// http.Transport (which adds a read and a write goroutine and 8 KiB of
// buffers per connection).

// sseTarget is where the streams go and how their requests look.
type sseTarget struct {
	addr    string // host:port of the server
	path    string // request path, e.g. /v1/chat-messages
	headers string // the request's fixed header lines, each ending in \r\n
	// sources are local addresses to dial from, in turn (nil: the kernel
	// picks the address and the port). With sources the client also picks
	// each connection's port itself (ports).
	sources []net.IP
	ports   portPicker
	// loop: bodies are read by the event loop (readOnLoop), not by each
	// stream's goroutine (readBody).
	loop bool
	// loopPace paces the event loop (sseloop_linux.go).
	loopPace time.Duration
}

func newSSETarget(endpoint string, header http.Header, sources []net.IP) (*sseTarget, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%s: the streams client speaks plain http only", endpoint)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	var h bytes.Buffer
	fmt.Fprintf(&h, "Host: %s\r\n", u.Host)
	for k, vs := range header {
		for _, v := range vs {
			fmt.Fprintf(&h, "%s: %s\r\n", k, v)
		}
	}
	h.WriteString("Connection: close\r\n")
	return &sseTarget{addr: host, path: u.RequestURI(), headers: h.String(), sources: sources}, nil
}

// request renders the full request for body, sent with API key key.
func (t *sseTarget) request(key string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nAuthorization: Bearer %s\r\n%sContent-Length: %d\r\n\r\n", t.path, key, t.headers, len(body))
	b.Write(body)
	return b.Bytes()
}

// dial connects a stream: from the next source address and port when
// there are sources (a port something else holds is skipped), else from
// whatever the kernel picks.
func (t *sseTarget) dial(ctx context.Context) (net.Conn, error) {
	d := net.Dialer{Timeout: 30 * time.Second}
	if len(t.sources) == 0 {
		return d.DialContext(ctx, "tcp", t.addr)
	}
	d.Control = reuseAddr
	var err error
	var local *net.TCPAddr
	for range maxPortTries {
		local = t.ports.next(t.sources)
		d.LocalAddr = local
		var conn net.Conn
		if conn, err = d.DialContext(ctx, "tcp", t.addr); err == nil || !portTaken(err) {
			return conn, err
		}
	}
	// A long run of taken ports (another program's): the kernel's search,
	// slower, but it finds one if there is one.
	d.LocalAddr = &net.TCPAddr{IP: local.IP}
	conn, err2 := d.DialContext(ctx, "tcp", t.addr)
	if err2 != nil {
		return nil, fmt.Errorf("no free local port after %d tries (%w), nor from the kernel: %w", maxPortTries, err, err2)
	}
	return conn, nil
}

// The client binds each connection to a port of its own choosing because
// the kernel's choice is what limited the ramp. For connect(2) on an
// unbound socket, Linux searches the ephemeral range (32768–60999) from a
// per-destination offset, even ports first, checking every port in use
// for a clash; once the ~14,000 even ports are taken, every connect walks
// all of them. In a 16,000-stream run the search took 55 % of the
// machine's CPU for 2.5 s and made every live stream's frames up to
// 700 ms late (bench/history.md, "Issue 21, ninth round"). A port bound
// explicitly costs one hash lookup at bind and at connect.
const (
	firstPort    = 1024 // the unprivileged ports, on each source address
	lastPort     = 65535
	maxPortTries = 64
)

// portPicker hands out (source address, port) pairs in turn: stream k
// gets source k mod len(sources), and each source's ports run up from a
// random starting point, so that two runs after each other mostly use
// different ports (a port still in TIME_WAIT is usable, reuseAddr, but
// not for the same server address and port).
type portPicker struct {
	once  sync.Once
	start uint64
	n     atomic.Uint64
}

func (p *portPicker) next(sources []net.IP) *net.TCPAddr {
	p.once.Do(func() { p.start = rand.Uint64N(lastPort - firstPort + 1) })
	k := p.n.Add(1) - 1
	src := sources[k%uint64(len(sources))]
	port := firstPort + (p.start+k/uint64(len(sources)))%(lastPort-firstPort+1)
	return &net.TCPAddr{IP: src, Port: int(port)}
}

// portTaken reports whether a dial failed because its local port (or the
// whole connection, address and ports) was in use.
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EADDRNOTAVAIL)
}

// loopbackSources returns n loopback source addresses starting at
// 127.0.0.2 (all of 127.0.0.0/8 reaches the loopback interface on Linux;
// macOS needs `ifconfig lo0 alias 127.0.0.N` for each), or nil for n < 1.
func loopbackSources(n int) []net.IP {
	if n < 1 {
		return nil
	}
	out := make([]net.IP, n)
	for i := range out {
		k := i + 2
		out[i] = net.IPv4(127, byte(k>>16), byte(k>>8), byte(k))
	}
	return out
}

var (
	headPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 1<<10) }}
)

// errStatus is a response that is not 200.
type errStatus struct {
	code int
	body string
}

func (e *errStatus) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// stream sends req on conn and calls frame(at, size) as each complete,
// non-empty SSE frame arrives (at is the arrival of the read that
// completed the frame). It returns nil at a clean end of the body; ctx ends
// it early.
func (t *sseTarget) stream(ctx context.Context, conn net.Conn, req []byte, frame func(at arrival, size int)) error {
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	tc := newTimedConn(conn)
	if _, err := conn.Write(req); err != nil {
		return err
	}
	br := headPool.Get().(*bufio.Reader)
	br.Reset(tc)
	defer func() { br.Reset(nil); headPool.Put(br) }()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &errStatus{resp.StatusCode, string(bytes.TrimSpace(msg))}
	}
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		return fmt.Errorf("a stream's body should be chunked; Transfer-Encoding %v", resp.TransferEncoding)
	}
	// The body is decoded here, not by resp.Body, so that the event loop
	// can read it (readOnLoop): first what the header's read brought along.
	body := &streamBody{frame: frame}
	if early, _ := br.Peek(br.Buffered()); len(early) > 0 {
		if done, err := body.push(early, tc.last); done || err != nil {
			return err
		}
	}
	if !stop() {
		return ctx.Err()
	}
	if t.loop {
		return readOnLoop(ctx, tc, body, t.loopPace)
	}
	return readBody(ctx, tc, body)
}

// parseSources reads --sources: a count of loopback source addresses
// ("4": 127.0.0.2–127.0.0.5; "0": the kernel picks), "auto", or a
// comma-separated list of addresses. On Linux, auto is one loopback source
// per 50,000 streams (each has the 64,512 unprivileged ports); elsewhere,
// where 127.0.0.2 and up may not be configured, it is the kernel's choice
// up to 20,000 streams and one source per 20,000 above.
func parseSources(s string, streams int) ([]net.IP, error) {
	switch s {
	case "", "auto":
		if runtime.GOOS == "linux" {
			return loopbackSources((streams + 49_999) / 50_000), nil
		}
		if streams <= 20_000 {
			return nil, nil
		}
		return loopbackSources((streams + 19_999) / 20_000), nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return nil, errors.New("--sources: negative count")
		}
		return loopbackSources(n), nil
	}
	var out []net.IP
	for _, f := range bytes.Split([]byte(s), []byte(",")) {
		ip := net.ParseIP(string(bytes.TrimSpace(f)))
		if ip == nil {
			return nil, fmt.Errorf("--sources: %q is not an IP address", f)
		}
		out = append(out, ip)
	}
	return out, nil
}
