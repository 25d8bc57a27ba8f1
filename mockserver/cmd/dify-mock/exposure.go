package main

import (
	"fmt"
	"net"
	"sort"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
)

// A mock reachable from other machines lets anyone who reaches it use it
// and read every conversation stored in it. `serve --addr` beyond loopback
// therefore needs a decision: --allow-remote, or --api-key so that only key
// holders get in (docs/security.md).

// checkExposure refuses a non-loopback --addr without an explicit opt-in.
func checkExposure(addr string, allowRemote bool, apiKeys int) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--addr %q: %v", addr, err)
	}
	if netguard.IsLoopbackAddr(addr) || allowRemote || apiKeys > 0 {
		return nil
	}
	return fmt.Errorf("--addr %s listens beyond this machine: anyone who can reach it could use the mock and read every conversation stored in it.\n"+
		"  Pass --api-key KEY so only clients with that key get in, or --allow-remote to open it on purpose;\n"+
		"  use --addr 127.0.0.1:PORT to stay on this machine", addr)
}

// reachableBaseURLs lists the API base URLs clients can use for a listener
// bound to addr: the address itself, or for an unspecified address
// (0.0.0.0, ::) loopback plus every interface address of that family.
func reachableBaseURLs(addr net.Addr, ifaceAddrs func() ([]net.Addr, error)) []string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return []string{"http://" + addr.String() + "/v1"}
	}
	port := fmt.Sprint(ta.Port)
	url := func(ip net.IP) string { return "http://" + net.JoinHostPort(ip.String(), port) + "/v1" }
	if !ta.IP.IsUnspecified() {
		return []string{url(ta.IP)}
	}
	v4 := ta.IP.To4() != nil
	out := []string{url(net.IPv4(127, 0, 0, 1))}
	if !v4 {
		// "::" also accepts IPv4 on dual-stack hosts; list both loopbacks.
		out = append(out, url(net.IPv6loopback))
	}
	all, err := ifaceAddrs()
	if err != nil {
		return out
	}
	var others []string
	for _, a := range all {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		if v4 && ipn.IP.To4() == nil {
			continue
		}
		others = append(others, url(ipn.IP))
	}
	sort.Strings(others)
	return append(out, others...)
}

// exposed reports that the listener accepts connections from other machines.
func exposed(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return !ok || !ta.IP.IsLoopback()
}
