// Package netguard is the one definition of who may reach a dify-mock
// listener by name, and of what a browser on another origin may send and
// read: the loopback checks of listen addresses and Host headers, the
// Host/Origin policy of the control API and the recorder (the DNS-rebinding
// guard, docs/security.md), and CORS origin lists and header lists.
//
// The policies differ only in the parameters of Policy, which each user
// sets explicitly.
package netguard

import (
	"net"
	"net/url"
	"strings"
)

// IsLoopbackName reports whether host (no port; brackets allowed) names this
// machine in a Host or Origin header: "localhost", a name under
// ".localhost" (which browsers resolve to loopback themselves), or a
// loopback IP.
func IsLoopbackName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address (host:port) binds this
// machine only: a loopback IP or "localhost". "" and unspecified addresses
// (0.0.0.0, ::) listen on every interface.
func IsLoopbackAddr(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HostOnly strips the port (and IPv6 brackets) from a Host header value.
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// Policy says which Host and Origin headers a listener answers. Loopback
// names are always accepted. What defeats DNS rebinding is the Host check:
// a page on evil.example whose name resolves to 127.0.0.1 still sends
// Host: evil.example.
type Policy struct {
	// Hosts are the names accepted besides loopback names, in Host and as
	// an http(s) Origin's host (--allow-host, --admin-allow-host).
	Hosts []string
	// IPLiterals accepts any IP address as Host: DNS rebinding needs a
	// name, so an IP literal is the address the client really dialled. It
	// never makes an Origin acceptable (a page served from an IP is another
	// site).
	IPLiterals bool
}

// AllowsHost reports whether a Host header value (host or host:port) may
// reach the listener.
func (p Policy) AllowsHost(hostport string) bool {
	host := strings.ToLower(HostOnly(hostport))
	if host == "" {
		return false
	}
	if IsLoopbackName(host) || (p.IPLiterals && net.ParseIP(host) != nil) {
		return true
	}
	return p.named(host)
}

// AllowsOrigin reports whether a browser Origin header is one of this
// machine's own pages: an http or https origin whose host is a loopback name
// or one of Hosts. "null" (file: pages, sandboxed frames) is not.
func (p Policy) AllowsOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host := strings.ToLower(HostOnly(u.Host))
	return IsLoopbackName(host) || p.named(host)
}

func (p Policy) named(host string) bool {
	for _, a := range p.Hosts {
		if strings.EqualFold(strings.TrimSpace(a), host) {
			return true
		}
	}
	return false
}

// Origins is a CORS origin list as --cors-origin takes it (serve and
// record alike): each value may hold several origins separated by commas;
// "*" means any origin. Origins compare case-insensitively and a trailing
// "/" is ignored (a browser's Origin never has one, a pasted URL often does).
type Origins struct {
	list []string
	any  bool
}

// ParseOrigins reads --cors-origin values.
func ParseOrigins(values ...string) Origins {
	var o Origins
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			switch s = strings.TrimSuffix(strings.TrimSpace(s), "/"); s {
			case "":
			case "*":
				o.any = true
			default:
				o.list = append(o.list, s)
			}
		}
	}
	return o
}

// Any reports whether every origin is granted ("*").
func (o Origins) Any() bool { return o.any }

// Empty reports whether no origin is granted.
func (o Origins) Empty() bool { return !o.any && len(o.list) == 0 }

// Grant is the Access-Control-Allow-Origin value for a request's Origin:
// "*" for a list with "*", origin itself when it is listed, "" otherwise.
func (o Origins) Grant(origin string) string {
	if o.any {
		return "*"
	}
	for _, a := range o.list {
		if origin != "" && strings.EqualFold(a, origin) {
			return origin
		}
	}
	return ""
}

// Header is one header of a CORS header list: whether a page may send it
// (Access-Control-Allow-Headers) and read it (Access-Control-Expose-Headers).
type Header struct {
	Name       string
	Send, Read bool
}

// AllowHeaders is the Access-Control-Allow-Headers value: the headers of
// table a page may send, in table order.
func AllowHeaders(table []Header) string { return join(table, func(h Header) bool { return h.Send }) }

// ExposeHeaders is the Access-Control-Expose-Headers value: the headers of
// table a page may read, in table order.
func ExposeHeaders(table []Header) string { return join(table, func(h Header) bool { return h.Read }) }

func join(table []Header, keep func(Header) bool) string {
	var names []string
	for _, h := range table {
		if keep(h) {
			names = append(names, h.Name)
		}
	}
	return strings.Join(names, ", ")
}
