package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	want := "dify-mock dev (commit none, " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 0 || out.String() != want {
			t.Errorf("%v: exit %d, stdout %q, want %q (stderr %s)", args, code, out.String(), want, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version", "extra"}, &out, &errOut); code != 2 {
		t.Errorf("version extra: exit %d", code)
	}
}

func TestHealthChecksARunningMock(t *testing.T) {
	// A server-wide fault must not make a running mock look unhealthy.
	s := startServe(t, "--addr", "127.0.0.1:0", "--speed", "0", "--log-level", "warn", "--fault", "status:503")
	base := s.waitBanner(regexp.MustCompile(`API base URL  (http://127\.0\.0\.1:\d+/v1)`))[0]
	addr := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/v1")

	for _, args := range [][]string{{"--url", base}, {"--addr", addr}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), append([]string{"health"}, args...), &out, &errOut); code != 0 {
			t.Errorf("health %v: exit %d, stderr %s", args, code, errOut.String())
		}
	}
	s.stop()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"health", "--url", base, "--timeout", "2s"}, &out, &errOut); code != 1 {
		t.Errorf("health after shutdown: exit %d, want 1 (stderr %s)", code, errOut.String())
	}
}

func TestHealthFailsOnAnotherServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Anything that is not a 200 for GET /v1/ is unhealthy: here a server
	// that closes every connection at once.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	defer ln.Close()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"health", "--addr", ln.Addr().String()}, &out, &errOut); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

func TestBaseURLFor(t *testing.T) {
	for addr, want := range map[string]string{
		"":               "http://127.0.0.1:5001/v1",
		"0.0.0.0:5001":   "http://127.0.0.1:5001/v1",
		":8080":          "http://127.0.0.1:8080/v1",
		"[::]:5001":      "http://127.0.0.1:5001/v1",
		"127.0.0.1:7000": "http://127.0.0.1:7000/v1",
		"[::1]:7000":     "http://[::1]:7000/v1",
		"localhost:7000": "http://localhost:7000/v1",
	} {
		if got := baseURLFor(addr); got != want {
			t.Errorf("baseURLFor(%q) = %q, want %q", addr, got, want)
		}
	}
}

// The container image (distribution/image) runs `serve` with this
// environment and no arguments; serve must take it as it is, including any
// opt-in it requires for a non-loopback address.
func TestServeAcceptsTheContainerImageEnvironment(t *testing.T) {
	env := map[string]string{"DIFY_MOCK_ADDR": "0.0.0.0:5001", "DIFY_MOCK_ALLOW_REMOTE": "true"}
	o, err := parseServe(nil, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err != nil {
		t.Fatalf("serve refuses the image's environment: %v", err)
	}
	if o.addr != "0.0.0.0:5001" || !o.allowRemote {
		t.Fatalf("addr %q, allow remote %v", o.addr, o.allowRemote)
	}
	// The opt-in is what makes the difference.
	delete(env, "DIFY_MOCK_ALLOW_REMOTE")
	if _, err := parseServe(nil, func(k string) string { return env[k] }, io.Discard, io.Discard); err == nil {
		t.Fatal("serve took 0.0.0.0:5001 without the remote-listen opt-in")
	}
}
