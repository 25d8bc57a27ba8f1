package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
)

// runHealth asks a running mock for GET /v1/ (no key needed, docs/api §1.1) and
// exits 0 on HTTP 200. It is the container image's HEALTHCHECK: the image has
// no shell or curl, so the binary checks itself. X-Dify-Mock-Fault: none
// keeps a server-wide --fault (a 5xx, slow headers) from marking a mock that
// is up as unhealthy.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newFlags("health", "dify-mock health [flags]",
		"Exits 0 when a running mock answers GET /v1/ with HTTP 200, 1 otherwise.")
	url := f.fs.String("url", "", "API base URL to check (default: from --addr / DIFY_MOCK_ADDR, else http://127.0.0.1:5001/v1)")
	addr := f.fs.String("addr", "", "the serve address to check, host:port (a wildcard host means this machine)")
	timeout := f.fs.Duration("timeout", 3*time.Second, "give up after this long")
	// The same variable as serve's --addr: a container sets it once for both.
	f.withEnv("addr")
	if err := f.parse(args, os.Getenv, stdout, stderr); err != nil {
		return exitCode(err)
	}
	if err := f.noArgs(stderr); err != nil {
		return exitCode(err)
	}
	target := *url
	if target == "" {
		target = baseURLFor(*addr)
	}
	target = strings.TrimSuffix(target, "/") + "/"
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		fmt.Fprintf(stderr, "dify-mock health: %v\n", err)
		return 2
	}
	req.Header.Set(fault.Header, fault.None)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "dify-mock health: %v\n", err)
		return 1
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "dify-mock health: GET %s: HTTP %d\n", target, resp.StatusCode)
		return 1
	}
	fmt.Fprintf(stdout, "ok %s\n", target)
	return 0
}

// baseURLFor turns a listen address into the URL a local client uses: a
// wildcard or missing host becomes 127.0.0.1.
func baseURLFor(addr string) string {
	if addr == "" {
		addr = "127.0.0.1:5001"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/v1"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/v1"
}
