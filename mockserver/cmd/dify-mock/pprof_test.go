package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestPprofAddrRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "[::]:6060", "192.168.1.10:6060", "example.com:6060", "10.0.0.1:0", "6060", "127.0.0.1"} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--pprof-addr", addr}, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "--pprof-addr") {
			t.Errorf("--pprof-addr %s: exit %d, stderr %q", addr, code, errOut.String())
		}
		if strings.Contains(out.String(), "API base URL") {
			t.Errorf("--pprof-addr %s: the server started:\n%s", addr, out.String())
		}
		// The environment variable is checked the same way.
		_, err := parseServe(nil, func(k string) string {
			if k == "DIFY_MOCK_PPROF_ADDR" {
				return addr
			}
			return ""
		}, io.Discard, io.Discard)
		if err == nil {
			t.Errorf("DIFY_MOCK_PPROF_ADDR=%s accepted", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:6060", "127.0.0.2:0", "[::1]:6060", "localhost:6060", ""} {
		o, err := parseServe([]string{"--pprof-addr", addr}, func(string) string { return "" }, io.Discard, io.Discard)
		if err != nil || o.pprofAddr != addr {
			t.Errorf("--pprof-addr %q: %v", addr, err)
		}
	}
}

// TestPprofListener starts serve with --pprof-addr on a free port: profiles
// and the goroutine count answer there, without CORS, and only there.
func TestPprofListener(t *testing.T) {
	s := startServe(t, "--addr", "127.0.0.1:0", "--speed", "0", "--log-level", "warn", "--cors-origin", "*", "--api-key", "app-secret-key", "--pprof-addr", "127.0.0.1:0")
	addrs := s.waitBanner(
		regexp.MustCompile(`API base URL  (http://127\.0\.0\.1:\d+)/v1`),
		regexp.MustCompile(`pprof         (http://127\.0\.0\.1:\d+)/debug/pprof/`))
	api, dbg := addrs[0], addrs[1]
	if api == dbg {
		t.Fatal("the profiles share the API port")
	}
	get := func(url string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				req.Host = hdr[i+1]
			} else {
				req.Header.Set(hdr[i], hdr[i+1])
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get(dbg+"/debug/goroutines", "Origin", "http://evil.example")
	if n, err := strconv.Atoi(strings.TrimSpace(body)); resp.StatusCode != 200 || err != nil || n < 1 {
		t.Errorf("/debug/goroutines: %d %q", resp.StatusCode, body)
	}
	if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Errorf("CORS on the profiling listener: %q", v)
	}
	if resp, body := get(dbg+"/debug/pprof/", "Origin", "http://evil.example"); resp.StatusCode != 200 || !strings.Contains(body, "goroutine") || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("/debug/pprof/: %d %v %.200s", resp.StatusCode, resp.Header, body)
	}
	if resp, body := get(dbg + "/debug/pprof/heap?debug=1"); resp.StatusCode != 200 || !strings.Contains(body, "heap profile") {
		t.Errorf("heap: %d %.200s", resp.StatusCode, body)
	}
	if resp, body := get(dbg + "/debug/pprof/cmdline"); resp.StatusCode != 404 || strings.Contains(body, "app-secret-key") {
		t.Errorf("cmdline: %d %q", resp.StatusCode, body)
	}
	// A page that rebinds its DNS name to 127.0.0.1 sends its own Host.
	if resp, _ := get(dbg+"/debug/goroutines", "Host", "attacker.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d", resp.StatusCode)
	}
	// The loopback names of the other guards (a *.localhost name resolves to
	// loopback in browsers) count here too.
	if resp, _ := get(dbg+"/debug/goroutines", "Host", "app.localhost"); resp.StatusCode != http.StatusOK {
		t.Errorf("Host app.localhost: %d", resp.StatusCode)
	}
	// The API port has no profiles.
	for _, p := range []string{"/debug/pprof/", "/debug/goroutines", "/v1/debug/pprof/"} {
		if resp, _ := get(api+p, "Authorization", "Bearer app-secret-key"); resp.StatusCode != 404 {
			t.Errorf("API port %s: %d", p, resp.StatusCode)
		}
	}
	s.stop()
	if _, err := http.Get(dbg + "/debug/goroutines"); err == nil {
		t.Error("profiling listener still serving after shutdown")
	}
}
