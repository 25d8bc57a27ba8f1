package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// serve --addr beyond loopback is refused (exit 2, before anything
// listens) unless --allow-remote or --api-key says it is meant; before, it
// listened silently and the banner claimed 127.0.0.1.
func TestServeRefusesRemoteAddrWithoutOptIn(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.0.2.7:5001"} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"serve", "--addr", addr}, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "--allow-remote") || !strings.Contains(errOut.String(), "--api-key") {
			t.Errorf("--addr %s: exit %d, stderr %q; want 2 naming --allow-remote and --api-key", addr, code, errOut.String())
		}
		if out.Len() != 0 {
			t.Errorf("--addr %s: printed a banner: %s", addr, out.String())
		}
	}
	for _, args := range [][]string{
		{"--addr", "0.0.0.0:5001", "--allow-remote"},
		{"--addr", "0.0.0.0:5001", "--api-key", "app-team"},
		{"--addr", "localhost:5001"},
		{"--addr", "[::1]:5001"},
	} {
		var out, errOut bytes.Buffer
		if _, err := parseServe(args, func(string) string { return "" }, &out, &errOut); err != nil {
			t.Errorf("%v: %v %s", args, err, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	env := map[string]string{"DIFY_MOCK_ADDR": "0.0.0.0:5001", "DIFY_MOCK_ALLOW_REMOTE": "true"}
	if _, err := parseServe(nil, func(k string) string { return env[k] }, &out, &errOut); err != nil {
		t.Errorf("DIFY_MOCK_ALLOW_REMOTE=true: %v %s", err, errOut.String())
	}
}

// An unspecified listen address is reported with the addresses clients can
// really use, plus a warning; a loopback one with itself and no warning.
func TestBannerShowsReachableAddresses(t *testing.T) {
	ifaces := func() ([]net.Addr, error) {
		return []net.Addr{
			&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
			&net.IPNet{IP: net.ParseIP("10.1.2.3"), Mask: net.CIDRMask(8, 32)},
			&net.IPNet{IP: net.ParseIP("fe80::1"), Mask: net.CIDRMask(64, 128)},
			&net.IPNet{IP: net.ParseIP("2001:db8::5"), Mask: net.CIDRMask(64, 128)},
		}, nil
	}
	got := reachableBaseURLs(&net.TCPAddr{IP: net.IPv4zero, Port: 5001}, ifaces)
	want := []string{"http://127.0.0.1:5001/v1", "http://10.1.2.3:5001/v1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("0.0.0.0: %v, want %v", got, want)
	}
	got = reachableBaseURLs(&net.TCPAddr{IP: net.IPv6unspecified, Port: 5001}, ifaces)
	if !strings.Contains(strings.Join(got, " "), "http://[2001:db8::5]:5001/v1") || !strings.Contains(strings.Join(got, " "), "http://10.1.2.3:5001/v1") {
		t.Errorf("[::]: %v", got)
	}

	srv, err := mockserver.New(mockserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	o := &serveOptions{speed: 1, cors: listFlag{values: []string{"*"}}, allowRemote: true, maxStateBytes: mockserver.DefaultMaxStateBytes}
	var b bytes.Buffer
	printBanner(&b, srv, "built-in cassettes", &net.TCPAddr{IP: net.IPv4zero, Port: 5001}, nil, o)
	if !strings.Contains(b.String(), "WARNING") || !strings.Contains(b.String(), "read its conversations") {
		t.Errorf("banner for 0.0.0.0 lacks the warning:\n%s", b.String())
	}
	b.Reset()
	printBanner(&b, srv, "built-in cassettes", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5001}, nil, o)
	if strings.Contains(b.String(), "WARNING") || !strings.Contains(b.String(), "API base URL  http://127.0.0.1:5001/v1\n") {
		t.Errorf("banner for 127.0.0.1:\n%s", b.String())
	}
}

// An empty or blank --api-key is refused on every address: it used to count
// as the remote opt-in ("API keys 1 configured") and, on loopback, to match
// "Bearer" followed by a Unicode space.
func TestServeRefusesEmptyAPIKeys(t *testing.T) {
	for _, args := range [][]string{
		{"--addr", "0.0.0.0:0", "--api-key", ""},
		{"--addr", "127.0.0.1:0", "--api-key", ""},
		{"--addr", "127.0.0.1:0", "--api-key", "app-ok", "--api-key", " "},
		{"--addr", "127.0.0.1:0", "--api-key", "\u3000"},
		{"--addr", "127.0.0.1:0", "--admin-token", " "},
	} {
		var out, errOut bytes.Buffer
		if _, err := parseServe(args, func(string) string { return "" }, &out, &errOut); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
