package dify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// failThen answers failures[i] (a status, or -1 to drop the connection) to
// request i+1 and success to the rest.
func failThen(t *testing.T, success func(http.ResponseWriter, *http.Request, int), failures ...int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		if n > len(failures) {
			success(w, r, n)
			return
		}
		switch f := failures[n-1]; f {
		case -1:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
		default:
			jsonReply(f, fmt.Sprintf(`{"code":"x","message":"status %d","status":%d}`, f, f))(w, r, n)
		}
	}
}

type logLine struct {
	msg    string
	fields map[string]any
}

type logSink struct {
	mu    sync.Mutex
	lines []logLine
}

func (l *logSink) logf(_ context.Context, msg string, fields map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, logLine{msg, fields})
}

func TestRetryIdempotentCalls(t *testing.T) {
	info := jsonReply(200, `{"name":"n","mode":"agent"}`)
	for _, tc := range []struct {
		name     string
		failures []int
		attempts int
		ok       bool
	}{
		{"503 twice then success", []int{503, 503}, 3, true},
		{"429 then success", []int{429}, 2, true},
		{"500 502 504", []int{500, 502, 504}, 4, true},
		{"dropped connection", []int{-1}, 2, true},
		{"501 is final", []int{501}, 1, false},
		{"4xx is final", []int{404}, 1, false},
		{"attempts are bounded", []int{503, 503, 503, 503, 503}, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{respond: failThen(t, info, tc.failures...)}
			logs := &logSink{}
			c := newTestClient(t, rec, WithLogger(logs.logf))
			_, err := c.AppInfo(testContext(t))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if got := rec.count(); got != tc.attempts {
				t.Errorf("attempts = %d, want %d", got, tc.attempts)
			}
			if len(logs.lines) != tc.attempts-1 {
				t.Errorf("logged %d retries, want %d", len(logs.lines), tc.attempts-1)
			}
			for i, l := range logs.lines {
				f := l.fields
				if f["method"] != "GET" || f["path"] != "/info" || f["attempt"] != i+1 || f["max_attempts"] != 4 || f["wait"] == nil {
					t.Errorf("log line %d = %q %v", i, l.msg, f)
				}
				if tc.failures[i] > 0 && f["status"] != tc.failures[i] {
					t.Errorf("log line %d status = %v", i, f["status"])
				}
				if strings.Contains(fmt.Sprint(f), testKey) || strings.Contains(fmt.Sprint(f), "user-1") {
					t.Errorf("log line leaks a secret or the user: %v", f)
				}
			}
			if !tc.ok && len(tc.failures) > 0 && tc.failures[0] > 0 {
				if apiErr, ok := AsAPIError(err); !ok || apiErr.Status != tc.failures[tc.attempts-1] {
					t.Errorf("final error = %v", err)
				}
			}
		})
	}
}

func TestRetryIdempotentWrites(t *testing.T) {
	ok := jsonReply(200, `{"result":"success","id":"c1","name":"n"}`)
	for name, call := range map[string]func(*Client) error{
		"stop": func(c *Client) error { return c.StopChatMessage(context.Background(), "t1", "") },
		"rename": func(c *Client) error {
			_, err := c.RenameConversation(context.Background(), "c1", RenameRequest{Name: "n"})
			return err
		},
		"delete": func(c *Client) error { return c.DeleteConversation(context.Background(), "c1", "") },
		"text-to-audio": func(c *Client) error {
			a, err := c.TextToAudio(context.Background(), TextToAudioRequest{Text: "x"})
			if err == nil {
				a.Body.Close()
			}
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{respond: failThen(t, ok, 503, 500)}
			c := newTestClient(t, rec)
			if err := call(c); err != nil {
				t.Fatal(err)
			}
			if rec.count() != 3 {
				t.Errorf("attempts = %d, want 3", rec.count())
			}
			// Every attempt carried the full body.
			for _, r := range rec.requests {
				if len(r.Body) == 0 {
					t.Errorf("attempt without body: %+v", r)
				}
			}
		})
	}
}

// Chat messages, uploads and audio-to-text must not be re-sent once they
// may have reached the server.
func TestNoRetryOnceSent(t *testing.T) {
	for _, failure := range []int{503, 429, 500, -1} {
		for name, call := range map[string]func(*Client) error{
			"chat": func(c *Client) error {
				_, err := c.SendChatMessage(context.Background(), ChatRequest{Query: "q"})
				return err
			},
			"upload": func(c *Client) error {
				_, err := c.UploadFile(context.Background(), Upload{Filename: "a.txt", Reader: strings.NewReader("abc")})
				return err
			},
			"audio-to-text": func(c *Client) error {
				_, err := c.AudioToText(context.Background(), Upload{Filename: "a.mp3", Reader: strings.NewReader("abc")})
				return err
			},
		} {
			t.Run(fmt.Sprintf("%s/%d", name, failure), func(t *testing.T) {
				rec := &recorder{respond: failThen(t, jsonReply(200, `{}`), failure, failure, failure)}
				c := newTestClient(t, rec)
				err := call(c)
				if err == nil {
					t.Fatal("no error")
				}
				if rec.count() != 1 {
					t.Errorf("attempts = %d, want 1", rec.count())
				}
				if failure == 429 {
					apiErr, _ := AsAPIError(err)
					if !IsRateLimited(err) || apiErr.RetryAfter != 0 {
						t.Errorf("err = %#v", err)
					}
				}
			})
		}
	}
}

// flakyDialer fails the first dial with a dial error, proving nothing was
// sent, then dials normally.
type flakyDialer struct{ dials atomic.Int32 }

func (d *flakyDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.dials.Add(1) == 1 {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused (simulated)")}
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func TestRetryUnsentOnDialError(t *testing.T) {
	for name, call := range map[string]func(*Client) error{
		"chat": func(c *Client) error {
			s, err := c.SendChatMessage(context.Background(), ChatRequest{Query: "q"})
			if err == nil {
				_, err = Collect(s)
			}
			return err
		},
		"upload": func(c *Client) error {
			_, err := c.UploadFile(context.Background(), Upload{Filename: "a.txt", Reader: io.MultiReader(strings.NewReader("ab"), strings.NewReader("c"))})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			stream := readTestdata(t, "new-agent.sse")
			rec := &recorder{respond: func(w http.ResponseWriter, r *http.Request, n int) {
				if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
					jsonReply(201, uploadReply)(w, r, n)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(stream)
			}}
			d := &flakyDialer{}
			hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
			c := newTestClient(t, rec, WithHTTPClient(hc))
			if err := call(c); err != nil {
				t.Fatal(err)
			}
			if d.dials.Load() != 2 || rec.count() != 1 {
				t.Errorf("dials = %d, requests = %d; want 2 and 1", d.dials.Load(), rec.count())
			}
			if body := string(rec.last(t).Body); name == "upload" && (!strings.Contains(body, "\r\n\r\nabc\r\n--") || !strings.HasSuffix(body, "--\r\n")) {
				t.Errorf("retried upload body incomplete: %q", body)
			}
		})
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	rec := &recorder{respond: func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			jsonReply(429, `{"code":"too_many_requests","message":"Too many requests. Please try again later.","status":429}`)(w, r, n)
			return
		}
		jsonReply(200, `{"name":"n"}`)(w, r, n)
	}}
	c := newTestClient(t, rec, WithRetryPolicy(RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Second}))
	start := time.Now()
	if _, err := c.AppInfo(testContext(t)); err != nil {
		t.Fatal(err)
	}
	// Without the header the wait would be at most 1ms.
	if elapsed := time.Since(start); elapsed < 900*time.Millisecond || elapsed > 8*time.Second {
		t.Errorf("elapsed %v, want about 1s", elapsed)
	}

	// MaxDelay caps a long Retry-After.
	rec2 := &recorder{respond: func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "3600")
			jsonReply(503, `{}`)(w, r, n)
			return
		}
		jsonReply(200, `{"name":"n"}`)(w, r, n)
	}}
	c = newTestClient(t, rec2, WithRetryPolicy(RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}))
	start = time.Now()
	if _, err := c.AppInfo(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Retry-After not capped by MaxDelay: %v", elapsed)
	}
}

func TestRetryWaitRespectsContext(t *testing.T) {
	slow := RetryPolicy{MaxAttempts: 5, BaseDelay: time.Hour, MaxDelay: time.Hour}
	unavailable := func(w http.ResponseWriter, r *http.Request, n int) {
		jsonReply(503, `{"code":"unavailable","message":"down","status":503}`)(w, r, n)
	}

	t.Run("deadline shorter than the wait", func(t *testing.T) {
		// Retry-After makes the wait deterministic: an hour.
		rec := &recorder{respond: func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Retry-After", "3600")
			unavailable(w, r, n)
		}}
		c := newTestClient(t, rec, WithRetryPolicy(slow))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.AppInfo(ctx)
		if apiErr, ok := AsAPIError(err); !ok || apiErr.Status != 503 {
			t.Errorf("err = %v, want the 503", err)
		}
		if time.Since(start) > 3*time.Second || rec.count() != 1 {
			t.Errorf("waited %v over %d attempts for a retry that could not finish", time.Since(start), rec.count())
		}
	})

	t.Run("cancelled while waiting", func(t *testing.T) {
		rec := &recorder{respond: func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Retry-After", "3600")
			unavailable(w, r, n)
		}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The retry log line comes right before the hour-long wait.
		cancelOnRetry := func(context.Context, string, map[string]any) { cancel() }
		c := newTestClient(t, rec, WithRetryPolicy(slow), WithLogger(cancelOnRetry))
		start := time.Now()
		_, err := c.AppInfo(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if apiErr, ok := AsAPIError(err); !ok || apiErr.Status != 503 {
			t.Errorf("last attempt's APIError lost: %v", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("cancel not honoured promptly: %v", time.Since(start))
		}
	})
}

func TestRetryPolicyWait(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}.withDefaults()
	if p.MaxAttempts != DefaultMaxAttempts {
		t.Errorf("zero MaxAttempts = %d", p.MaxAttempts)
	}
	for retry, ceiling := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 40: time.Second} {
		var maxSeen time.Duration
		for range 2000 {
			w := p.wait(retry, 0)
			if w < 0 || w > ceiling {
				t.Fatalf("wait(%d) = %v outside [0, %v]", retry, w, ceiling)
			}
			maxSeen = max(maxSeen, w)
		}
		// Full jitter spreads over the whole range.
		if maxSeen < ceiling/2 {
			t.Errorf("wait(%d) never exceeded %v in 2000 draws (ceiling %v)", retry, maxSeen, ceiling)
		}
	}
	if w := p.wait(1, 300*time.Millisecond); w != 300*time.Millisecond {
		t.Errorf("hint not used: %v", w)
	}
	if w := p.wait(1, time.Hour); w != time.Second {
		t.Errorf("hint not capped: %v", w)
	}
	if d := (RetryPolicy{}).withDefaults(); d != DefaultRetryPolicy() {
		t.Errorf("zero policy = %+v", d)
	}
	if d := (RetryPolicy{MaxAttempts: -1, BaseDelay: time.Minute, MaxDelay: time.Second}).withDefaults(); d.MaxAttempts != 1 || d.BaseDelay != time.Second {
		t.Errorf("normalised = %+v", d)
	}
}

// A create is sent again after a 429 that proves Dify refused it before
// writing anything (its rate-limit codes, or a Retry-After), and after
// nothing else: a bare 429 or a 5xx may have been acted on.
func TestRetryCreateOnRefusal(t *testing.T) {
	const quota = `{"code":"too_many_requests","message":"Too many requests. Please try again later.","status":429}`
	const daily = `{"code":"rate_limit_error","message":"Rate Limit Error","status":429}`
	refusals := map[string]func(http.ResponseWriter, *http.Request, int){
		"retry-after": func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Retry-After", "1")
			jsonReply(429, `<html>slow down</html>`)(w, r, n)
		},
		"too_many_requests": jsonReply(429, quota),
		"rate_limit_error":  jsonReply(429, daily),
	}
	stream := readTestdata(t, "new-agent.sse")
	creates := map[string]func(*Client) error{
		"chat": func(c *Client) error {
			s, err := c.SendChatMessage(testContext(t), ChatRequest{Query: "q"})
			if err == nil {
				_, err = Collect(s)
			}
			return err
		},
		"annotation": func(c *Client) error {
			_, err := c.CreateAnnotation(testContext(t), AnnotationRequest{Question: "q", Answer: "a"})
			return err
		},
	}
	succeed := func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path == "/v1/chat-messages" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(stream)
			return
		}
		jsonReply(200, `{"id":"0b2e9c1a-5d3f-4e61-9a55-0c7e2f3b8d11","question":"q","answer":"a","hit_count":0,"created_at":1}`)(w, r, n)
	}
	policy := WithRetryPolicy(RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second})
	for refusal, refuse := range refusals {
		for name, create := range creates {
			t.Run(name+"/"+refusal, func(t *testing.T) {
				rec := &recorder{respond: func(w http.ResponseWriter, r *http.Request, n int) {
					if n == 1 {
						refuse(w, r, n)
						return
					}
					succeed(w, r, n)
				}}
				c := newTestClient(t, rec, policy)
				if err := create(c); err != nil {
					t.Fatal(err)
				}
				if rec.count() != 2 {
					t.Errorf("requests = %d, want 2 (the refusal and the retry)", rec.count())
				}
			})
		}
	}

	t.Run("exhausted", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(429, quota)}
		c := newTestClient(t, rec, policy)
		err := creates["chat"](c)
		rep, ok := RetryReportOf(err)
		if !ok || rep.Attempts != 3 || rep.MaxAttempts != 3 || rep.Stop != RetryExhausted || !rep.CreatesOnce || rec.count() != 3 {
			t.Errorf("report = %+v (%v), %d requests; want 3 attempts, exhausted", rep, ok, rec.count())
		}
		if !IsRateLimited(err) {
			t.Errorf("the 429 is lost: %v", err)
		}
	})

	t.Run("not proven", func(t *testing.T) {
		for _, failure := range []int{429, 500, 503} { // failThen's 429 has neither mark
			rec := &recorder{respond: failThen(t, succeed, failure, failure)}
			c := newTestClient(t, rec, policy)
			err := creates["chat"](c)
			rep, ok := RetryReportOf(err)
			if !ok || rep.Attempts != 1 || rep.Stop != RetryNotAllowed || rec.count() != 1 {
				t.Errorf("%d: report = %+v (%v), %d requests; want one attempt, not allowed", failure, rep, ok, rec.count())
			}
		}
	})

	t.Run("retry-after beyond the deadline", func(t *testing.T) {
		rec := &recorder{respond: func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Retry-After", "60")
			jsonReply(429, quota)(w, r, n)
		}}
		c := newTestClient(t, rec, WithRetryPolicy(RetryPolicy{MaxAttempts: 3, MaxDelay: time.Minute}))
		ctx, cancel := context.WithTimeout(testContext(t), 5*time.Second)
		defer cancel()
		_, err := c.SendChatMessage(ctx, ChatRequest{Query: "q"})
		rep, _ := RetryReportOf(err)
		if rep.Stop != RetryNoTime || rep.Wait != time.Minute || rec.count() != 1 {
			t.Errorf("report = %+v, %d requests; want no time for a 1m wait, one request", rep, rec.count())
		}
	})

	t.Run("upload body read once", func(t *testing.T) {
		rec := &recorder{respond: func(w http.ResponseWriter, r *http.Request, n int) {
			_, _ = io.Copy(io.Discard, r.Body) // the transport sends the body
			w.Header().Set("Retry-After", "1")
			jsonReply(429, quota)(w, r, n)
		}}
		c := newTestClient(t, rec, policy)
		_, err := c.UploadFile(testContext(t), Upload{Filename: "a.txt", Reader: strings.NewReader("abc")})
		rep, _ := RetryReportOf(err)
		if rep.Stop != RetryBodySent || rec.count() != 1 {
			t.Errorf("report = %+v, %d requests; want the body-sent stop after one request", rep, rec.count())
		}
	})
}
