package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
)

// The profiling listener (serve --pprof-addr) is opt-in and separate from
// the API: its own loopback listener and mux, no CORS, no API key, and it
// never shares a port with /v1. It serves the runtime's profiles
// (/debug/pprof/) and the goroutine count (/debug/goroutines, which does
// not stop the world, so polling it does not disturb replay timing).
// /debug/pprof/cmdline is not served: the command line may hold API keys.

// checkLoopback accepts host:port when host is a loopback IP or
// "localhost"; an empty host (every interface) or any other name is refused.
func checkLoopback(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--pprof-addr %q: %v", addr, err)
	}
	if netguard.IsLoopbackAddr(addr) {
		return nil
	}
	return fmt.Errorf("--pprof-addr %q: profiles are served on a loopback address only (e.g. 127.0.0.1:6060)", addr)
}

// listenPprof opens the profiling listener on a loopback address; the
// address actually bound must be loopback too ("localhost" could resolve
// elsewhere).
func listenPprof(addr string) (net.Listener, error) {
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: %v", err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("--pprof-addr %q bound %s, which is not a loopback address", addr, ln.Addr())
	}
	return ln, nil
}

// pprofHandler serves the profiles. Requests must name a loopback host, so a
// web page that rebinds its DNS name to 127.0.0.1 cannot read them.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/goroutines", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, runtime.NumGoroutine())
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not served: the command line may hold API keys", http.StatusNotFound)
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !(netguard.Policy{}).AllowsHost(r.Host) {
			http.Error(w, "forbidden: the profiling listener answers loopback hosts only", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// startPprof serves the profiling listener until the returned stop is
// called; the caller has already opened ln with listenPprof.
func startPprof(ln net.Listener) (stop func()) {
	// Lock contention is what a CPU profile of many streams does not show
	// (/debug/pprof/mutex); sampled (1 in 100), so it costs little, and
	// only while the listener is on. No block profile: every stream's wait
	// for its next frame is a blocking event.
	runtime.SetMutexProfileFraction(100)
	defer func() {
		prev := stop
		stop = func() {
			prev()
			runtime.SetMutexProfileFraction(0)
		}
	}()
	hs := &http.Server{
		Handler:           pprofHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		// CPU profiles and traces take their ?seconds= (default 30 s).
		IdleTimeout: time.Minute,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln) // ends with http.ErrServerClosed on stop
	}()
	return func() {
		_ = hs.Close()
		<-done
	}
}
