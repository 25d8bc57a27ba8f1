package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// httpResult is one `loadgen http` run.
type httpResult struct {
	Kind        string  `json:"kind"` // "http"
	Endpoint    string  `json:"endpoint"`
	Route       string  `json:"route"`
	Concurrency int     `json:"concurrency"`
	Seconds     float64 `json:"seconds"`
	Requests    int     `json:"requests"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	RPS         float64 `json:"rps"`
	Latency     summary `json:"latency"`

	Server serverFigures `json:"server"`
}

// httpEndpoint builds the requests of one benchmarked route.
type httpEndpoint struct {
	route string
	want  int
	// firstByte measures the time to the response's first body byte (a
	// stream's first frame) instead of to its end.
	firstByte bool
	// setup prepares state and returns the request maker (called by many
	// workers at once; n is a global request number).
	setup func(ctx context.Context, c *http.Client, base, user string) (func(n int64) (*http.Request, error), error)
}

var httpEndpoints = map[string]httpEndpoint{
	"parameters": {route: "GET /parameters", want: http.StatusOK,
		setup: func(_ context.Context, _ *http.Client, base, user string) (func(int64) (*http.Request, error), error) {
			return func(int64) (*http.Request, error) {
				return http.NewRequest(http.MethodGet, base+"/parameters?user="+user, nil)
			}, nil
		}},
	"conversations": {route: "GET /conversations", want: http.StatusOK,
		setup: func(ctx context.Context, c *http.Client, base, user string) (func(int64) (*http.Request, error), error) {
			if _, err := seedConversations(ctx, c, base, user, 20); err != nil {
				return nil, err
			}
			return func(int64) (*http.Request, error) {
				return http.NewRequest(http.MethodGet, base+"/conversations?limit=20&user="+user, nil)
			}, nil
		}},
	"conversations-crowded": {route: "GET /conversations (10,000 other conversations stored)", want: http.StatusOK,
		setup: func(ctx context.Context, c *http.Client, base, user string) (func(int64) (*http.Request, error), error) {
			if _, err := seedConversations(ctx, c, base, user, 20); err != nil {
				return nil, err
			}
			if err := seedCrowd(ctx, c, base, 10000, 100, 50); err != nil {
				return nil, err
			}
			return func(int64) (*http.Request, error) {
				return http.NewRequest(http.MethodGet, base+"/conversations?limit=20&user="+user, nil)
			}, nil
		}},
	"rename": {route: "POST /conversations/:id/name", want: http.StatusOK,
		setup: func(ctx context.Context, c *http.Client, base, user string) (func(int64) (*http.Request, error), error) {
			ids, err := seedConversations(ctx, c, base, user, 20)
			if err != nil {
				return nil, err
			}
			return func(n int64) (*http.Request, error) {
				body := fmt.Sprintf(`{"name":"renamed %d","user":%q}`, n, user)
				r, err := http.NewRequest(http.MethodPost, base+"/conversations/"+ids[n%int64(len(ids))]+"/name", strings.NewReader(body))
				if err == nil {
					r.Header.Set("Content-Type", "application/json")
				}
				return r, err
			}, nil
		}},
	"upload": {route: "POST /files/upload (1 KiB)", want: http.StatusCreated,
		setup: func(_ context.Context, _ *http.Client, base, user string) (func(int64) (*http.Request, error), error) {
			body, ctype, err := uploadBody(user, "notes.txt", bytes.Repeat([]byte("0123456789abcdef"), 64))
			if err != nil {
				return nil, err
			}
			return func(int64) (*http.Request, error) {
				r, err := http.NewRequest(http.MethodPost, base+"/files/upload", bytes.NewReader(body))
				if err == nil {
					r.Header.Set("Content-Type", ctype)
				}
				return r, err
			}, nil
		}},
}

func uploadBody(user, name string, content []byte) ([]byte, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("user", user); err != nil {
		return nil, "", err
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
	h.Set("Content-Type", "text/plain")
	p, err := mw.CreatePart(h)
	if err != nil {
		return nil, "", err
	}
	if _, err := p.Write(content); err != nil {
		return nil, "", err
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), mw.FormDataContentType(), nil
}

// seedConversations creates n conversations for user (replayed without
// delays) and returns their ids.
func seedConversations(ctx context.Context, c *http.Client, base, user string, n int) ([]string, error) {
	var ids []string
	for i := range n {
		body := fmt.Sprintf(`{"query":"Hello %d","inputs":{},"user":%q,"response_mode":"streaming"}`, i, user)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat-messages", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer app-bench")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Dify-Mock-Speed", "0")
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("seeding conversations: HTTP %d: %s", resp.StatusCode, data)
		}
		i := bytes.Index(data, []byte(`"conversation_id":"`))
		if i < 0 || len(data) < i+19+36 {
			return nil, errors.New("seeding conversations: no conversation_id in the stream")
		}
		ids = append(ids, string(data[i+19:i+19+36]))
	}
	return ids, nil
}

// seedCrowd creates n conversations spread over users other users, with
// conc requests in flight: the store a long-running mock accumulates.
func seedCrowd(ctx context.Context, c *http.Client, base string, n, users, conc int) error {
	return forEach(0, n, conc, func(i int) error {
		_, err := seedConversations(ctx, c, base, "crowd-"+strconv.Itoa(i%users), 1)
		return err
	})
}

func runHTTP(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "mock API base URL, e.g. http://127.0.0.1:5001/v1 (required)")
	name := fs.String("endpoint", "", "parameters, conversations, conversations-crowded, rename, upload, annotation-chat or conversations-during-annotation (required)")
	conc := fs.Int("concurrency", 50, "requests in flight (closed loop: each worker sends its next request when the last one is answered)")
	warmup := fs.Duration("warmup", time.Second, "unmeasured run first (connections, caches)")
	dur := fs.Duration("duration", 5*time.Second, "measured run")
	pid := fs.Int("pid", 0, "server process id, for RSS from /proc (0 = skip)")
	debugURL := fs.String("debug-url", "", "the server's profiling listener (serve --pprof-addr): goroutines, profiles")
	profile := fs.String("profile", "", "save a CPU profile of the server over the measured run (needs --debug-url)")
	out := fs.String("out", "", "append the JSON result to this file (default stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ep, ok := httpEndpoints[*name]
	if *url == "" || !ok || *conc < 1 {
		return errors.New("--url and --endpoint (parameters, conversations, conversations-crowded, rename, upload, annotation-chat, conversations-during-annotation) are required; --concurrency must be positive")
	}
	if *profile != "" && *debugURL == "" {
		return errors.New("--profile needs --debug-url")
	}
	base := strings.TrimRight(*url, "/")
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: *conc, MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc, DisableCompression: true,
	}}
	user := "bench-http-" + *name
	makeReq, err := ep.setup(ctx, client, base, user)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "loadgen: %s at concurrency %d for %v (after %v warm-up)\n", ep.route, *conc, *dur, *warmup)

	smp := newSampler(server{pid: *pid, debugURL: strings.TrimRight(*debugURL, "/")})
	var (
		seq        atomic.Int64
		measuring  atomic.Bool
		stopAt     atomic.Int64
		mu         sync.Mutex
		lat        durations
		errs       int
		firstError string
		wg         sync.WaitGroup
	)
	begin := time.Now()
	stopAt.Store(begin.Add(*warmup + *dur).UnixNano())
	profileErr := make(chan error, 1)
	time.AfterFunc(*warmup, func() {
		measuring.Store(true)
		if *profile != "" {
			go func() { profileErr <- fetchProfile(ctx, *debugURL, *dur, *profile) }()
		}
	})
	sctx, stopSampling := context.WithCancel(ctx)
	go smp.run(sctx, 250*time.Millisecond)
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make(durations, 0, 4096)
			localErrs, localFirst := 0, ""
			for time.Now().UnixNano() < stopAt.Load() && ctx.Err() == nil {
				req, err := makeReq(seq.Add(1))
				if err != nil {
					localErrs++
					localFirst = err.Error()
					break
				}
				req = req.WithContext(ctx)
				req.Header.Set("Authorization", "Bearer app-bench")
				t0 := time.Now()
				resp, err := client.Do(req)
				var status int
				var d time.Duration
				if err == nil {
					if ep.firstByte {
						_, err = resp.Body.Read(make([]byte, 1))
						d = time.Since(t0)
					}
					if _, cerr := io.Copy(io.Discard, resp.Body); err == nil || err == io.EOF {
						err = cerr
					}
					resp.Body.Close()
					status = resp.StatusCode
				}
				if !ep.firstByte || d == 0 {
					d = time.Since(t0)
				}
				if !measuring.Load() {
					continue
				}
				if err != nil || status != ep.want {
					localErrs++
					if localFirst == "" {
						localFirst = fmt.Sprintf("HTTP %d %v", status, err)
					}
					continue
				}
				local = append(local, d)
			}
			mu.Lock()
			lat = append(lat, local...)
			errs += localErrs
			if firstError == "" {
				firstError = localFirst
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	stopSampling()
	measured := time.Since(begin) - *warmup
	res := httpResult{Kind: "http", Endpoint: *name, Route: ep.route, Concurrency: *conc, Seconds: measured.Seconds(),
		Requests: len(lat), Errors: errs, FirstError: firstError, Latency: lat.summarize(), Server: smp.figures()}
	res.RPS = float64(res.Requests) / res.Seconds
	if *profile != "" {
		if err := <-profileErr; err != nil {
			fmt.Fprintf(stderr, "loadgen: CPU profile failed: %v\n", err)
		}
	}
	fmt.Fprintf(stderr, "%s: %.0f req/s, p50=%v p99=%v max=%v, %d errors\n", ep.route, res.RPS, res.Latency.P50, res.Latency.P99, res.Latency.Max, errs)
	return appendResult(*out, res)
}
