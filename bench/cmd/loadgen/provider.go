package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// providerResult is one `terraform plan` of N conversations.
type providerResult struct {
	Kind          string         `json:"kind"` // "provider"
	Conversations int            `json:"conversations"`
	ApplySeconds  float64        `json:"apply_seconds"`
	ApplyRequests int            `json:"apply_requests"`
	PlanSeconds   float64        `json:"plan_seconds"`
	PlanRequests  int            `json:"plan_requests"`
	PlanByRoute   map[string]int `json:"plan_by_route"`
	Terraform     string         `json:"terraform"`
}

// counter is a reverse proxy that counts requests by method and route
// (ids replaced by :id).
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

var uuidRE = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

func (c *counter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + uuidRE.ReplaceAllString(strings.TrimPrefix(r.URL.Path, "/v1"), ":id")
		c.mu.Lock()
		c.n[key]++
		c.mu.Unlock()
		// The request body is read in full before it is forwarded. Left
		// to the proxy's Transport, it is still being read (the check
		// for bytes past Content-Length) when the upstream's answer
		// arrives; the proxy then flushes the answer's header at once
		// (FlushInterval -1), and net/http's server, which on that
		// first write consumes and closes an unfinished request body,
		// made that last read fail. The Transport then closed the
		// upstream connection in the middle of the stream ("ReverseProxy
		// read error during body copy: use of closed network
		// connection") and the client saw the stream end before
		// message_end: about one chat in 200 at speed 0, where the mock
		// answers within microseconds.
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "counting proxy: reading the request body: "+err.Error(), http.StatusBadGateway)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		next.ServeHTTP(w, r)
	})
}

// newCountingProxy is the reverse proxy in front of the mock at target
// (scheme and host), counting requests into cnt.
func newCountingProxy(target *url.URL, cnt *counter) http.Handler {
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy.FlushInterval = -1 // pass stream frames through at once
	return cnt.wrap(proxy)
}

func (c *counter) take() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, v := range c.n {
		total += v
	}
	out := c.n
	c.n = map[string]int{}
	return total, out
}

func runProvider(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("provider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mockURL := fs.String("url", "", "mock API base URL, e.g. http://127.0.0.1:5001/v1 (required; run it with --speed 0: creating the conversations is not what is measured)")
	tf := fs.String("terraform", "", "Terraform CLI (absolute path, required)")
	pluginDir := fs.String("plugin-dir", "", "folder holding the terraform-provider-dify binary (required)")
	sizes := fs.String("conversations", "1,10,100", "comma-separated conversation counts")
	work := fs.String("work-dir", "", "scratch folder (default: a new temporary folder, removed afterwards)")
	out := fs.String("out", "", "append JSON results to this file (default stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mockURL == "" || *tf == "" || *pluginDir == "" {
		return errors.New("--url, --terraform and --plugin-dir are required")
	}
	var counts []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("--conversations %q: want positive integers", *sizes)
		}
		counts = append(counts, n)
	}
	target, err := url.Parse(*mockURL)
	if err != nil {
		return err
	}
	dir := *work
	if dir == "" {
		if dir, err = os.MkdirTemp("", "loadgen-provider-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	absPlugins, err := filepath.Abs(*pluginDir)
	if err != nil {
		return err
	}
	rc := filepath.Join(dir, "terraformrc")
	if err := os.WriteFile(rc, []byte(fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"registry.terraform.io/difyops/dify\" = %q\n  }\n  direct {}\n}\n", absPlugins)), 0o644); err != nil {
		return err
	}
	version, _ := exec.CommandContext(ctx, *tf, "version").Output()
	tfVersion := strings.TrimSpace(strings.SplitN(string(version), "\n", 2)[0])

	// The counting proxy, on loopback.
	cnt := &counter{n: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: newCountingProxy(target, cnt), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	proxyURL := "http://" + ln.Addr().String() + target.Path

	for _, n := range counts {
		wd := filepath.Join(dir, "n"+strconv.Itoa(n))
		if err := os.MkdirAll(wd, 0o755); err != nil {
			return err
		}
		config := fmt.Sprintf(`terraform {
  required_providers {
    dify = { source = "difyops/dify" }
  }
}

provider "dify" {
  base_url = %q
  api_key  = "app-bench"
  user     = "bench-tf-%d"
}

resource "dify_conversation" "bench" {
  count = %d
  query = "Hello number ${count.index}"
}
`, proxyURL, n, n)
		if err := os.WriteFile(filepath.Join(wd, "main.tf"), []byte(config), 0o644); err != nil {
			return err
		}
		terraform := func(args ...string) (time.Duration, error) {
			cmd := exec.CommandContext(ctx, *tf, append([]string{"-chdir=" + wd}, args...)...)
			cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0")
			var outBuf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
			start := time.Now()
			err := cmd.Run()
			d := time.Since(start)
			if err != nil {
				return d, fmt.Errorf("terraform %s: %v\n%s", strings.Join(args, " "), err, tail(outBuf.String(), 40))
			}
			return d, nil
		}
		cnt.take()
		fmt.Fprintf(stderr, "loadgen: terraform apply with %d conversations\n", n)
		applyTime, err := terraform("apply", "-auto-approve", "-input=false", "-no-color")
		if err != nil {
			return err
		}
		applyReqs, _ := cnt.take()
		fmt.Fprintf(stderr, "loadgen: terraform plan (refresh) with %d conversations\n", n)
		// -detailed-exitcode: 0 means no changes, as it must be right after apply.
		planTime, err := terraform("plan", "-input=false", "-no-color", "-detailed-exitcode")
		if err != nil {
			return err
		}
		planReqs, byRoute := cnt.take()
		res := providerResult{Kind: "provider", Conversations: n, ApplySeconds: applyTime.Seconds(), ApplyRequests: applyReqs,
			PlanSeconds: planTime.Seconds(), PlanRequests: planReqs, PlanByRoute: byRoute, Terraform: tfVersion}
		fmt.Fprintf(stderr, "plan with %d conversations: %.2fs, %d requests %s\n", n, res.PlanSeconds, planReqs, routes(byRoute))
		if err := appendResult(*out, res); err != nil {
			return err
		}
	}
	return nil
}

// routes renders a by-route count map in a stable order.
func routes(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
