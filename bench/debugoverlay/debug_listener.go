//go:build benchdebug

// This file is not part of any package in the repository. scripts/bench.sh
// compiles it into the dify-mock command with `go build -overlay -tags
// benchdebug`, so the benchmark runs the real dify-mock (same flags, same
// server) plus a loopback-only listener exposing the goroutine count and
// pprof. The dify-mock that users build has no such listener.
package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
)

// benchDebugEnv names the listen address (host:port, loopback only; port 0
// picks one). The chosen address is printed to stdout before the banner.
const benchDebugEnv = "DIFY_MOCK_BENCH_DEBUG_ADDR"

func init() {
	addr := os.Getenv(benchDebugEnv)
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "%s=%q: want a loopback host:port such as 127.0.0.1:0\n", benchDebugEnv, addr)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", benchDebugEnv, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	// runtime.NumGoroutine does not stop the world, so polling it during a
	// run does not disturb the replay timing being measured.
	mux.HandleFunc("/goroutines", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, runtime.NumGoroutine())
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	fmt.Printf("bench debug listener: http://%s\n", ln.Addr())
	go func() { _ = http.Serve(ln, mux) }()
}
