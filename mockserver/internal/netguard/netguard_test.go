package netguard_test

import (
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
)

func TestLoopbackNamesAndAddrs(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "app.localhost": true, "127.0.0.1": true, "127.8.9.1": true,
		"::1": true, "[::1]": true, "localhost.evil.example": false, "127.0.0.1.evil.example": false,
		"evil.example": false, "10.0.0.1": false, "0.0.0.0": false, "": false,
	} {
		if got := netguard.IsLoopbackName(host); got != want {
			t.Errorf("IsLoopbackName(%q) = %v", host, got)
		}
	}
	// A listen address binds what the resolver gives: *.localhost is not
	// guaranteed to be loopback there, and "" or 0.0.0.0 is every interface.
	for addr, want := range map[string]bool{
		"127.0.0.1:5001": true, "localhost:0": true, "[::1]:5001": true, "app.localhost:5001": false,
		":5001": false, "0.0.0.0:5001": false, "[::]:5001": false, "10.0.0.1:5001": false, "127.0.0.1": false,
	} {
		if got := netguard.IsLoopbackAddr(addr); got != want {
			t.Errorf("IsLoopbackAddr(%q) = %v", addr, got)
		}
	}
}

func TestPolicy(t *testing.T) {
	control := netguard.Policy{Hosts: []string{" mock.internal "}}
	recorder := netguard.Policy{Hosts: []string{"devbox.lan"}, IPLiterals: true}
	hosts := []struct {
		host              string
		control, recorder bool
	}{
		{"localhost:5001", true, true},
		{"[::1]:5001", true, true},
		{"MOCK.internal:5001", true, false},
		{"devbox.lan", false, true},
		{"192.168.1.5:5002", false, true}, // an IP literal cannot be a rebound name
		{"[2001:db8::5]:5002", false, true},
		{"evil.example:5001", false, false},
		{"127.0.0.1.evil.example", false, false},
		{"", false, false},
	}
	for _, c := range hosts {
		if got := control.AllowsHost(c.host); got != c.control {
			t.Errorf("control AllowsHost(%q) = %v", c.host, got)
		}
		if got := recorder.AllowsHost(c.host); got != c.recorder {
			t.Errorf("recorder AllowsHost(%q) = %v", c.host, got)
		}
	}
	origins := []struct {
		origin            string
		control, recorder bool
	}{
		{"http://localhost:5173", true, true},
		{"https://app.localhost", true, true},
		{"http://[::1]:3000", true, true},
		{"http://mock.internal:8080", true, false},
		{"http://devbox.lan:3000", false, true},
		// A page served from an IP address is another site, IPLiterals or not.
		{"http://192.168.1.5:3000", false, false},
		{"ftp://localhost", false, false},
		{"chrome-extension://localhost", false, false},
		{"null", false, false},
		{"https://evil.example", false, false},
		{"", false, false},
	}
	for _, c := range origins {
		if got := control.AllowsOrigin(c.origin); got != c.control {
			t.Errorf("control AllowsOrigin(%q) = %v", c.origin, got)
		}
		if got := recorder.AllowsOrigin(c.origin); got != c.recorder {
			t.Errorf("recorder AllowsOrigin(%q) = %v", c.origin, got)
		}
	}
}

func TestOrigins(t *testing.T) {
	o := netguard.ParseOrigins("http://app.test/, HTTP://Localhost:5173", "", " https://b.test ")
	if o.Any() || o.Empty() {
		t.Fatalf("Any %v Empty %v", o.Any(), o.Empty())
	}
	for origin, want := range map[string]string{
		"http://app.test":       "http://app.test",
		"http://localhost:5173": "http://localhost:5173",
		"https://b.test":        "https://b.test",
		"http://app.test:80":    "",
		"https://app.test":      "",
		"http://evil.test":      "",
		"":                      "",
	} {
		if got := o.Grant(origin); got != want {
			t.Errorf("Grant(%q) = %q, want %q", origin, got, want)
		}
	}
	if a := netguard.ParseOrigins("http://x.test", "*"); !a.Any() || a.Grant("http://evil.test") != "*" {
		t.Errorf("* does not grant every origin")
	}
	if !netguard.ParseOrigins(" , ").Empty() {
		t.Errorf("blank values are origins")
	}
}

func TestHeaderLists(t *testing.T) {
	table := []netguard.Header{{Name: "A", Send: true}, {Name: "B", Read: true}, {Name: "C", Send: true, Read: true}}
	if got := netguard.AllowHeaders(table); got != "A, C" {
		t.Errorf("AllowHeaders = %q", got)
	}
	if got := netguard.ExposeHeaders(table); got != "B, C" {
		t.Errorf("ExposeHeaders = %q", got)
	}
}
