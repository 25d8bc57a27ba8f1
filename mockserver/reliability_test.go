package mockserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// Reliability suite: many clients misbehaving at once must leave the server
// exactly as it was (goroutines, open files), log no panic or error, and
// keep every stored turn intact. It runs in the normal `go test -race` and
// stays within a few seconds.

// lockedBuffer collects log output written from many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// openFiles counts this process's open file descriptors (-1 where /proc is
// missing).
func openFiles() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}

// settle waits until cond holds, failing with describe() after limit.
func settle(t *testing.T, limit time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loggedServer is the mock with its own and net/http's logs captured.
type loggedServer struct {
	srv  *mockserver.Server
	ts   *httptest.Server
	logs *lockedBuffer
}

func newLoggedServer(t *testing.T, cfg mockserver.Config) *loggedServer {
	t.Helper()
	logs := &lockedBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := mockserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener = srv.Listener(ts.Listener) // streams as `dify-mock serve` runs them
	// Panics that escape the handler are reported here by net/http.
	ts.Config.ErrorLog = log.New(logs, "net/http: ", 0)
	ts.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})
	return &loggedServer{srv: srv, ts: ts, logs: logs}
}

// checkLogs fails on panic or error lines; level=ERROR is what the mock
// logs for a recovered panic.
func (s *loggedServer) checkLogs(t *testing.T) {
	t.Helper()
	for _, line := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(line, "panic") || strings.Contains(line, "level=ERROR") {
			t.Errorf("log line: %s", line)
		}
	}
}

// stormCassette is a built-in cassette a storm client replays, with the
// query that picks it.
type stormCassette struct{ name, query string }

// dropper is one way of leaving a stream (or a request) early.
type dropper func(ctx context.Context, rng *rand.Rand, s *loggedServer, c stormCassette, user string) error

func stormBody(c stormCassette, user string) []byte {
	body, _ := json.Marshal(map[string]any{"query": c.query, "inputs": map[string]any{}, "user": user, "response_mode": "streaming"})
	return body
}

// chatRequestBytes is a complete raw HTTP/1.1 chat request.
func chatRequestBytes(host string, c stormCassette, user, speed string) []byte {
	body := stormBody(c, user)
	return []byte(fmt.Sprintf("POST /v1/chat-messages HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nAuthorization: Bearer app-storm\r\n"+
		"Content-Type: application/json\r\n%s: %s\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		host, mockserver.HeaderCassette, c.name, mockserver.HeaderSpeed, speed, len(body), body))
}

func dialRaw(s *loggedServer) (*net.TCPConn, error) {
	c, err := net.DialTimeout("tcp", s.ts.Listener.Addr().String(), 5*time.Second)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// closeAbruptly resets the connection (RST) half of the time instead of a
// clean FIN, as a killed browser tab or a crashed client would.
func closeAbruptly(rng *rand.Rand, c *net.TCPConn) {
	if rng.IntN(2) == 0 {
		_ = c.SetLinger(0)
	}
	_ = c.Close()
}

var droppers = map[string]dropper{
	// Cancel the request after reading k whole frames (k = 0: right after
	// the response headers).
	"after-k-frames": func(ctx context.Context, rng *rand.Rand, s *loggedServer, c stormCassette, user string) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		speed, frames := "20", rng.IntN(20)
		if rng.IntN(4) == 0 {
			// At recorded speed a replay that ignored the disconnect would
			// outlive the test's settle limit, so a leak cannot hide. Only
			// the first frames, so the client does not wait long for them.
			speed, frames = "1", rng.IntN(3)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.ts.URL+"/v1/chat-messages", bytes.NewReader(stormBody(c, user)))
		req.Header.Set("Authorization", "Bearer app-storm")
		req.Header.Set("Content-Type", "application/json") // Dify reads the body with get_json()
		req.Header.Set(mockserver.HeaderCassette, c.name)
		req.Header.Set(mockserver.HeaderSpeed, speed)
		resp, err := stormClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		fr := dify.NewFrameReader(resp.Body)
		for k := frames; k > 0; k-- {
			if _, err := fr.Next(); err != nil {
				break
			}
		}
		return nil
	},
	// Read a random number of raw bytes (headers included), so the drop
	// lands anywhere, mid-frame too; then close or reset.
	"mid-frame": func(ctx context.Context, rng *rand.Rand, s *loggedServer, c stormCassette, user string) error {
		conn, err := dialRaw(s)
		if err != nil {
			return err
		}
		defer closeAbruptly(rng, conn)
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write(chatRequestBytes("x", c, user, "20")); err != nil {
			return err
		}
		_, err = io.CopyN(io.Discard, conn, int64(1+rng.IntN(6000)))
		var netErr net.Error
		if err == io.EOF || (errors.As(err, &netErr) && netErr.Timeout()) {
			// The whole stream was shorter, or (on a loaded machine) the
			// bytes came slower than the client's own deadline: either way
			// the client leaves mid-stream, which is the point. Only dial
			// and write failures say the server stopped accepting.
			err = nil
		}
		return err
	},
	// Drop after a random time, wherever the stream is.
	"after-a-while": func(ctx context.Context, rng *rand.Rand, s *loggedServer, c stormCassette, user string) error {
		conn, err := dialRaw(s)
		if err != nil {
			return err
		}
		defer closeAbruptly(rng, conn)
		if _, err := conn.Write(chatRequestBytes("x", c, user, "20")); err != nil {
			return err
		}
		_ = conn.SetReadDeadline(time.Now().Add(time.Duration(rng.IntN(800)) * time.Millisecond))
		_, _ = io.Copy(io.Discard, conn)
		return nil
	},
	// Send the headers and part of the body, then go away.
	"mid-request": func(ctx context.Context, rng *rand.Rand, s *loggedServer, c stormCassette, user string) error {
		conn, err := dialRaw(s)
		if err != nil {
			return err
		}
		defer closeAbruptly(rng, conn)
		raw := chatRequestBytes("x", c, user, "20")
		_, err = conn.Write(raw[:1+rng.IntN(len(raw)-1)])
		return err
	},
}

// stormClient has no idle connections, so nothing stays open after a run.
var stormClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// TestDisconnectStorm: 1,200 clients leave streams and requests at random
// points (a mix of cancels after k frames, mid-frame closes and resets,
// timeouts and half-sent requests; the seed is logged), 200 at a time, against replays
// at speed 20 (some at speed 1). Afterwards goroutines and open files are
// back to their baseline, nothing panicked or logged an error, every stored
// turn is a prefix of the recorded answer, and the server still serves.
//
// scripts/reliability.sh runs it bigger (STORM_CLIENTS, STORM_CONCURRENCY).
func TestDisconnectStorm(t *testing.T) {
	clients, concurrency := envInt(t, "STORM_CLIENTS", 1200), envInt(t, "STORM_CONCURRENCY", 200)
	s := newLoggedServer(t, mockserver.Config{Speed: 20})
	set, err := mockserver.BuiltinSet()
	if err != nil {
		t.Fatal(err)
	}
	var cassettes []stormCassette
	for _, name := range []string{"tool-use", "long-with-pings", "korean-answer", "plain-answer", "run-limit", "legacy-agent-chat"} {
		c, ok := set.Get(name)
		if !ok {
			t.Fatalf("no built-in cassette %q", name)
		}
		cassettes = append(cassettes, stormCassette{name, c.Turns[0].Request.Query})
	}

	// Full answers, from complete replays, before the baseline is taken.
	full := map[string]string{}
	for _, c := range cassettes {
		full[c.name] = completeTurn(t, s, c, "storm-reference")
	}
	stormClient.CloseIdleConnections()
	baseGoroutines, baseFiles := runtime.NumGoroutine(), openFiles()

	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("STORM_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (STORM_SEED=%d repeats each worker's random choices)", seed, seed)
	names := []string{"after-k-frames", "mid-frame", "after-a-while", "mid-request"}
	var counts [4]atomic.Int64
	jobs := make(chan int)
	var wg sync.WaitGroup
	var clientErrs atomic.Int64
	var firstErrs sync.Map
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range jobs {
				k := rng.IntN(len(names))
				counts[k].Add(1)
				c := cassettes[rng.IntN(len(cassettes))]
				if err := droppers[names[k]](t.Context(), rng, s, c, fmt.Sprintf("storm-%d", i%16)); err != nil {
					clientErrs.Add(1)
					firstErrs.LoadOrStore(names[k], err.Error())
				}
			}
		}()
	}
	for i := range clients {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	stormClient.CloseIdleConnections()
	for k, n := range names {
		t.Logf("%s: %d clients", n, counts[k].Load())
	}
	// Dial or write failures would mean the server stopped accepting.
	if n := clientErrs.Load(); n > 0 {
		firstErrs.Range(func(k, v any) bool { t.Logf("%s: %v", k, v); return true })
		t.Errorf("%d storm clients could not even send their request", n)
	}

	settle(t, 15*time.Second, func() bool { return runtime.NumGoroutine() <= baseGoroutines }, func() string {
		buf := make([]byte, 1<<20)
		return fmt.Sprintf("goroutines stay at %d (baseline %d):\n%s", runtime.NumGoroutine(), baseGoroutines, buf[:runtime.Stack(buf, true)])
	})
	if baseFiles >= 0 {
		settle(t, 15*time.Second, func() bool { return openFiles() <= baseFiles }, func() string {
			return fmt.Sprintf("open files stay at %d (baseline %d)", openFiles(), baseFiles)
		})
	}
	s.checkLogs(t)

	// Every stored turn holds a prefix of what was recorded: a drop never
	// mixes streams or corrupts the state.
	stored := 0
	for u := range 16 {
		user := fmt.Sprintf("storm-%d", u)
		for _, conv := range listAll(t, s, user) {
			msgs := getJSON[dify.MessagePage](t, s, "/messages?user="+user+"&conversation_id="+conv.ID)
			if len(msgs.Data) != 1 {
				t.Fatalf("conversation %s has %d messages", conv.ID, len(msgs.Data))
			}
			m := msgs.Data[0]
			ok := false
			for _, f := range full {
				ok = ok || (strings.HasPrefix(f, m.Answer) && m.Query != "")
			}
			if !ok || m.ConversationID != conv.ID {
				t.Fatalf("stored turn of %s is not a prefix of any recorded answer: %+v", conv.ID, m)
			}
			stored++
		}
	}
	t.Logf("%d turns stored from %d clients", stored, clients)
	if stored == 0 {
		t.Error("no dropped turn was stored: the storm never reached the replays")
	}
	// Still serving: a complete replay after the storm.
	if got := completeTurn(t, s, cassettes[0], "storm-after"); got != full[cassettes[0].name] {
		t.Errorf("after the storm the answer is %q, want %q", got, full[cassettes[0].name])
	}
}

// envInt reads a positive integer knob from the environment.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// completeTurn replays c to its end (no delays) and returns the stored answer.
func completeTurn(t *testing.T, s *loggedServer, c stormCassette, user string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.ts.URL+"/v1/chat-messages", bytes.NewReader(stormBody(c, user)))
	req.Header.Set("Authorization", "Bearer app-storm")
	req.Header.Set("Content-Type", "application/json") // Dify reads the body with get_json()
	req.Header.Set(mockserver.HeaderCassette, c.name)
	req.Header.Set(mockserver.HeaderSpeed, "0")
	resp, err := stormClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	conv := ""
	fr := dify.NewFrameReader(resp.Body)
	for {
		f, err := fr.Next()
		if err != nil {
			break
		}
		var ev struct {
			ConversationID string `json:"conversation_id"`
		}
		if conv == "" && f.Data != nil && json.Unmarshal(f.Data, &ev) == nil {
			conv = ev.ConversationID
		}
	}
	if resp.StatusCode != http.StatusOK || conv == "" {
		t.Fatalf("%s: HTTP %d, conversation %q", c.name, resp.StatusCode, conv)
	}
	msgs := getJSON[dify.MessagePage](t, s, "/messages?user="+user+"&conversation_id="+conv)
	if len(msgs.Data) == 0 {
		t.Fatalf("%s: no stored message", c.name)
	}
	return msgs.Data[len(msgs.Data)-1].Answer
}

func getJSON[T any](t *testing.T, s *loggedServer, path string) T {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.ts.URL+"/v1"+path, nil)
	req.Header.Set("Authorization", "Bearer app-storm")
	resp, err := stormClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, data)
	}
	return decode[T](t, data)
}

// listAll pages through a user's conversations (oldest first, by
// created_at, so concurrent renames cannot reorder pages).
func listAll(t *testing.T, s *loggedServer, user string) []dify.Conversation {
	t.Helper()
	var all []dify.Conversation
	last := ""
	for range 1000 {
		p := getJSON[dify.ConversationPage](t, s, "/conversations?limit=100&sort_by=created_at&user="+user+"&last_id="+last)
		all = append(all, p.Data...)
		if !p.HasMore || len(p.Data) == 0 {
			return all
		}
		last = p.Data[len(p.Data)-1].ID
	}
	t.Fatal("paging never ended")
	return nil
}

// TestConcurrentUsersStayIsolated: eight users upload, chat (with and
// without their uploads), rename and delete at once while readers list
// every user's conversations, and each user also tries the other users'
// ids. No user ever sees another's conversation or file, nothing is lost,
// and when the dust settles every list is exactly what each user made,
// with the names they gave (run with -race).
func TestConcurrentUsersStayIsolated(t *testing.T) {
	const (
		users   = 8
		workers = 3 // per user
		rounds  = 5 // per worker: upload, chat, chat with the upload, rename, maybe delete
	)
	e := newEnv(t, mockserver.Config{Speed: 50})
	type convState struct {
		owner, name string
		deleted     bool
		upload      string // upload_file_id the first message carries, "" for none
	}
	var (
		mu      sync.Mutex
		convs   = map[string]*convState{}
		uploads = map[string]string{} // upload id → owner
	)
	userName := func(u int) string { return fmt.Sprintf("iso-%d", u) }
	tag := func(u int) string { return fmt.Sprintf("c%d", u) } // the user's inputs.city (≤ 10 characters)
	foreign := func(self string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		for id, c := range convs {
			if c.owner != self {
				return id, true
			}
		}
		return "", false
	}
	call := func(method, path string, body any, hdr ...string) (int, []byte) {
		var r io.Reader
		if body != nil {
			j, _ := json.Marshal(body)
			r = bytes.NewReader(j)
		}
		req, _ := http.NewRequest(method, e.url(path), r)
		req.Header.Set("Authorization", "Bearer app-test")
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := e.hc.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	convOf := func(stream []byte) string {
		fr := dify.NewFrameReader(bytes.NewReader(stream))
		for {
			f, err := fr.Next()
			if err != nil {
				return ""
			}
			var ev struct {
				ConversationID string `json:"conversation_id"`
			}
			if json.Unmarshal(f.Data, &ev) == nil && ev.ConversationID != "" {
				return ev.ConversationID
			}
		}
	}

	stop := make(chan struct{})
	var readers sync.WaitGroup
	// Readers: a listed conversation is never someone else's.
	for u := range users {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				status, data := call(http.MethodGet, "/conversations?limit=100&user="+userName(u), nil)
				if status != http.StatusOK {
					t.Errorf("list: %d %s", status, data)
					return
				}
				var page dify.ConversationPage
				if err := json.Unmarshal(data, &page); err != nil {
					t.Errorf("list: %v", err)
					return
				}
				mu.Lock()
				for _, c := range page.Data {
					if st, ok := convs[c.ID]; ok && st.owner != userName(u) {
						t.Errorf("%s lists %s, a conversation of %s", userName(u), c.ID, st.owner)
					}
					if strings.HasPrefix(c.Name, "iso-") && !strings.HasPrefix(c.Name, userName(u)+"/") {
						t.Errorf("%s lists a conversation named %q", userName(u), c.Name)
					}
				}
				mu.Unlock()
			}
		}()
	}

	var wg sync.WaitGroup
	for u := range users {
		user := userName(u)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					// Upload a document.
					resp, body := e.multipart("/files/upload", userPart(user), filePart(fmt.Sprintf("%s-%d-%d.txt", user, w, r), "text/plain", user))
					if resp.StatusCode != http.StatusCreated {
						t.Errorf("upload: %d %s", resp.StatusCode, body)
						return
					}
					var up struct {
						ID string `json:"id"`
					}
					_ = json.Unmarshal(body, &up)
					mu.Lock()
					uploads[up.ID] = user
					mu.Unlock()

					// A chat, alternately carrying the upload.
					chat := map[string]any{"query": "Count to three", "inputs": map[string]any{"city": tag(u)}, "user": user, "response_mode": "streaming"}
					withFile := r%2 == 1
					if withFile {
						chat["query"] = "Read my file"
						chat["files"] = []map[string]any{{"type": "document", "transfer_method": "local_file", "upload_file_id": up.ID}}
					}
					status, stream := call(http.MethodPost, "/chat-messages", chat)
					conv := convOf(stream)
					if status != http.StatusOK || conv == "" {
						t.Errorf("chat: %d %s", status, stream)
						return
					}
					st := &convState{owner: user, name: "New conversation"}
					if withFile {
						st.upload = up.ID
					}
					mu.Lock()
					convs[conv] = st
					mu.Unlock()

					// Rename it.
					name := fmt.Sprintf("%s/%d/%d", user, w, r)
					if status, data := call(http.MethodPost, "/conversations/"+conv+"/name", map[string]any{"name": name, "user": user}); status != http.StatusOK {
						t.Errorf("rename: %d %s", status, data)
					}
					mu.Lock()
					st.name = name
					mu.Unlock()

					// Try someone else's conversation and upload: all refused.
					if other, ok := foreign(user); ok {
						if status, data := call(http.MethodPost, "/conversations/"+other+"/name", map[string]any{"name": user + "/stolen", "user": user}); status != http.StatusNotFound {
							t.Errorf("renaming another user's conversation: %d %s", status, data)
						}
						if status, data := call(http.MethodDelete, "/conversations/"+other, map[string]any{"user": user}); status != http.StatusNotFound {
							t.Errorf("deleting another user's conversation: %d %s", status, data)
						}
						if status, data := call(http.MethodGet, "/messages?user="+user+"&conversation_id="+other, nil); status != http.StatusNotFound {
							t.Errorf("reading another user's messages: %d %s", status, data)
						}
						cont := map[string]any{"query": "more", "inputs": map[string]any{}, "user": user, "conversation_id": other}
						if status, data := call(http.MethodPost, "/chat-messages", cont); status != http.StatusNotFound {
							t.Errorf("continuing another user's conversation: %d %s", status, data)
						}
					}
					mu.Lock()
					var otherUpload string
					for id, owner := range uploads {
						if owner != user {
							otherUpload = id
							break
						}
					}
					mu.Unlock()
					if otherUpload != "" {
						steal := map[string]any{"query": "Read my file", "inputs": map[string]any{"city": tag(u)}, "user": user,
							"files": []map[string]any{{"type": "document", "transfer_method": "local_file", "upload_file_id": otherUpload}}}
						if status, data := call(http.MethodPost, "/chat-messages", steal); status != http.StatusBadRequest || !strings.Contains(string(data), "Invalid upload file") {
							t.Errorf("using another user's upload: %d %s", status, data)
						}
					}

					// Delete every third conversation.
					if r%3 == 2 {
						if status, data := call(http.MethodDelete, "/conversations/"+conv, map[string]any{"user": user}); status != http.StatusNoContent {
							t.Errorf("delete: %d %s", status, data)
						}
						mu.Lock()
						st.deleted = true
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if t.Failed() {
		return
	}

	// Quiet now: every list is exactly what its user made, paging included.
	s := &loggedServer{ts: e.ts}
	for u := range users {
		user := userName(u)
		want := map[string]*convState{}
		for id, c := range convs {
			if c.owner == user && !c.deleted {
				want[id] = c
			}
		}
		got := listAll(t, s, user)
		if len(got) != len(want) {
			t.Errorf("%s: %d conversations listed, want %d", user, len(got), len(want))
		}
		seen := map[string]bool{}
		for _, c := range got {
			st, ok := want[c.ID]
			switch {
			case seen[c.ID]:
				t.Errorf("%s: %s listed twice", user, c.ID)
			case !ok:
				t.Errorf("%s: lists %s, which is deleted or not theirs", user, c.ID)
			case c.Name != st.name:
				t.Errorf("%s: %s is named %q, want %q", user, c.ID, c.Name, st.name)
			}
			seen[c.ID] = true
			if ok {
				// The stored message is the user's own: their inputs, their file.
				msgs := getJSON[dify.MessagePage](t, s, "/messages?user="+user+"&conversation_id="+c.ID)
				if len(msgs.Data) != 1 || msgs.Data[0].Inputs["city"] != tag(u) {
					t.Errorf("%s: %s messages %+v", user, c.ID, msgs.Data)
					continue
				}
				var files []string
				for _, f := range msgs.Data[0].MessageFiles {
					if f.UploadFileID != nil {
						files = append(files, *f.UploadFileID)
					}
				}
				if st.upload != "" && (len(files) != 1 || files[0] != st.upload) {
					t.Errorf("%s: %s carries uploads %v, want [%s]", user, c.ID, files, st.upload)
				}
			}
		}
	}
}

// TestDisconnectInALongGapEndsTheReplayAtOnce: a client that leaves while
// the replay waits out a long recorded gap (long-with-pings: 2.15 s → 10 s)
// ends the replay right away. A server that only noticed the drop when its
// next write failed would keep the goroutine until the next frame is due,
// which is what this test times against (docs/api §34.2).
func TestDisconnectInALongGapEndsTheReplayAtOnce(t *testing.T) {
	const speed = 2
	s := newLoggedServer(t, mockserver.Config{Speed: 1})
	set, err := mockserver.BuiltinSet()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := set.Get("long-with-pings")
	frames := c.Turns[0].Frames
	// The first frame after the first gap of more than 5 s.
	gap := 0
	for i := 1; i < len(frames); i++ {
		if frames[i].Offset-frames[i-1].Offset > 5*time.Second {
			gap = i
			break
		}
	}
	if gap == 0 {
		t.Fatal("long-with-pings has no long gap any more; pick another cassette")
	}
	completeTurn(t, s, stormCassette{"long-with-pings", c.Turns[0].Request.Query}, "gap-warmup")
	stormClient.CloseIdleConnections()
	baseline := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.ts.URL+"/v1/chat-messages",
		bytes.NewReader(stormBody(stormCassette{"long-with-pings", c.Turns[0].Request.Query}, "gap")))
	req.Header.Set("Authorization", "Bearer app-gap")
	req.Header.Set("Content-Type", "application/json") // Dify reads the body with get_json()
	req.Header.Set(mockserver.HeaderCassette, "long-with-pings")
	req.Header.Set(mockserver.HeaderSpeed, fmt.Sprint(speed))
	start := time.Now()
	resp, err := stormClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	fr := dify.NewFrameReader(resp.Body)
	for i := 0; i < gap; i++ {
		if _, err := fr.Next(); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	cancel()
	resp.Body.Close()
	nextDue := start.Add(frames[gap].Offset / speed)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(nextDue) {
			buf := make([]byte, 1<<16)
			t.Fatalf("the replay was still running when its next frame was due (%d goroutines, baseline %d):\n%s",
				runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("back to baseline %v after the drop, %v before the next frame was due", time.Since(start.Add(frames[gap-1].Offset/speed)), time.Until(nextDue))
	s.checkLogs(t)
}
