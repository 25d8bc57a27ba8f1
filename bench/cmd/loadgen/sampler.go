package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sampler polls the server processes from outside while a run is going:
// resident memory from /proc/<pid>/status and, when a server runs with its
// profiling listener (dify-mock serve --pprof-addr), its goroutine count.
// Polling is cheap for the server (runtime.NumGoroutine does not stop the
// world). With several servers each figure is their sum at one sample, so
// a peak is the most they held together.
type sampler struct {
	servers []server
	client  *http.Client

	mu             sync.Mutex
	peakRSSKiB     int64
	peakThreads    int
	peakGoroutines int
	procErr        error
}

func newSampler(servers ...server) *sampler {
	return &sampler{servers: servers, client: &http.Client{Timeout: 2 * time.Second}}
}

// run samples every interval until ctx is done.
func (s *sampler) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *sampler) sample(ctx context.Context) {
	var rss int64
	var threads, goroutines int
	var procErr error
	for _, sv := range s.servers {
		if sv.pid > 0 {
			ps, err := readProcStatus(sv.pid)
			if err != nil {
				procErr = err
			}
			rss += ps.RSSKiB
			threads += ps.Threads
		}
		if sv.debugURL != "" {
			if n, err := s.goroutines(ctx, sv.debugURL); err == nil {
				goroutines += n
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if procErr != nil {
		s.procErr = procErr
	}
	s.peakRSSKiB = max(s.peakRSSKiB, rss)
	s.peakThreads = max(s.peakThreads, threads)
	s.peakGoroutines = max(s.peakGoroutines, goroutines)
}

func (s *sampler) goroutines(ctx context.Context, debugURL string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, debugURL+"/debug/goroutines", nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// serverFigures is what a run reports about the server process.
type serverFigures struct {
	PeakRSSKiB     int64  `json:"peak_rss_kib"`    // max VmRSS seen while sampling
	HWMKiB         int64  `json:"hwm_kib"`         // VmHWM at the end: peak since the server started
	PeakThreads    int    `json:"peak_threads"`    // OS threads
	PeakGoroutines int    `json:"peak_goroutines"` // 0 without the profiling listener
	ProcError      string `json:"proc_error,omitempty"`
}

func (s *sampler) figures() serverFigures {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := serverFigures{PeakRSSKiB: s.peakRSSKiB, PeakThreads: s.peakThreads, PeakGoroutines: s.peakGoroutines}
	for _, sv := range s.servers {
		if sv.pid > 0 {
			if ps, err := readProcStatus(sv.pid); err == nil {
				f.HWMKiB += ps.HWMKiB
			}
		}
	}
	if s.procErr != nil {
		f.ProcError = s.procErr.Error()
	}
	return f
}

// fetchProfile saves a CPU profile of the server taken over d.
func fetchProfile(ctx context.Context, debugURL string, d time.Duration, path string) error {
	u := strings.TrimRight(debugURL, "/") + "/debug/pprof/profile?seconds=" + strconv.Itoa(int(d.Seconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: d + 30*time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &httpStatusError{resp.StatusCode}
	}
	return writeFileFrom(path, resp.Body)
}

type httpStatusError struct{ status int }

func (e *httpStatusError) Error() string { return "HTTP " + strconv.Itoa(e.status) }
