package mockserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
)

// TestSoak runs mixed traffic for SOAK_DURATION (default 3s, `make soak`
// 30m) against a server whose state bound is SOAK_MAX_STATE_MIB (16): chats (new and follow-up turns, some with in-stream faults or HTTP
// faults, some left early by the client), uploads, listings, renames and
// deletes by SOAK_WORKERS concurrent users. It checks that the live heap
// plateaus (the last quarter's peak within twice the second quarter's plus
// 32 MiB), that goroutines return to their baseline, and that no completed
// conversation or message is lost or duplicated (conversations evicted by
// the state bound, which the server logs, are excused). Figures are logged
// with the prefix "soak:" (bench/results.md).
func TestSoak(t *testing.T) {
	dur := 3 * time.Second
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SOAK_DURATION=%q: %v", v, err)
		}
		dur = d
	}
	workers := envInt(t, "SOAK_WORKERS", 8)
	// A small state bound, so a long soak reaches it and shows the plateau.
	// Conversations the state bound evicts are excused; the server says
	// which through OnEvict (its log has one summary line per 10 s).
	// The ledger is the test's own bookkeeping, in the same process as the
	// server: it keeps only what the final check needs, so that the heap the
	// soak samples is the server's, not a list of every id ever seen.
	ledger := newSoakLedger()
	s := newSoakServer(t, mockserver.Config{Speed: 0, MaxStateBytes: int64(envInt(t, "SOAK_MAX_STATE_MIB", 16)) << 20, OnEvict: ledger.evict})
	// Every exchange is bounded: a client left waiting for a response
	// that never ends is a failure the soak reports, not a hang.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}, Timeout: soakExchangeLimit}
	defer client.CloseIdleConnections()

	cassettes := []stormCassette{}
	for _, name := range s.srv.CassetteNames() {
		c, _ := s.srv.Cassette(name)
		if len(c.Turns) > 0 && (c.Turns[0].Status == 0 || c.Turns[0].Status == 200) && c.Meta.Fault == "" {
			cassettes = append(cassettes, stormCassette{name, c.Turns[0].Request.Query})
		}
	}
	runtime.GC()
	baseGoroutines := runtime.NumGoroutine()

	users := make([]*soakUser, workers)
	var ops [8]atomic.Int64 // chat, follow-up, fault, left, upload, list, rename, delete
	var failures, stuck atomic.Int64
	// timedOut counts an exchange that ran out of time as stuck.
	timedOut := func(err error) {
		if err != nil && os.IsTimeout(err) {
			stuck.Add(1)
		}
	}
	drain := func(body io.Reader) {
		_, err := io.Copy(io.Discard, body)
		timedOut(err)
	}
	var heapPeaks [4]atomic.Uint64
	start := time.Now()
	deadline := start.Add(dur)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()

	// Sampler: the live heap's peak per quarter of the run.
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for ctx.Err() == nil {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			q := min(int(4*time.Since(start)/dur), 3)
			if m.HeapAlloc > heapPeaks[q].Load() {
				heapPeaks[q].Store(m.HeapAlloc)
			}
			select {
			case <-ctx.Done():
			case <-time.After(max(dur/200, 10*time.Millisecond)):
			}
		}
	}()

	send := func(method, path string, body io.Reader, hdr ...string) (*http.Response, error) {
		req, _ := http.NewRequest(method, s.ts.URL+"/v1"+path, body)
		req.Header.Set("Authorization", "Bearer app-soak")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		timedOut(err)
		return resp, err
	}
	// chat plays one turn; it returns the conversation and message ids of
	// a completed turn ("" when the turn did not complete).
	chat := func(rng *rand.Rand, user, conv string, c stormCassette, faultSpec string, leave bool) (string, string) {
		body := map[string]any{"query": c.query, "inputs": map[string]any{}, "user": user, "response_mode": "streaming"}
		if conv != "" {
			body["conversation_id"] = conv
		}
		b, _ := json.Marshal(body)
		hdr := []string{"Content-Type", "application/json", mockserver.HeaderCassette, c.name, mockserver.HeaderSpeed, "0"}
		if faultSpec != "" {
			hdr = append(hdr, "X-Dify-Mock-Fault", faultSpec)
		}
		resp, err := send(http.MethodPost, "/chat-messages", bytes.NewReader(b), hdr...)
		if err != nil {
			return "", ""
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			drain(resp.Body)
			return "", ""
		}
		fr := dify.NewFrameReader(resp.Body)
		var convID, msgID, last string
		for n := 0; ; n++ {
			f, err := fr.Next()
			if err != nil {
				timedOut(err)
				break
			}
			if leave && n == 1+rng.IntN(3) {
				return "", "" // the client goes away mid-stream
			}
			var ev struct {
				Event          string `json:"event"`
				ConversationID string `json:"conversation_id"`
				MessageID      string `json:"message_id"`
			}
			if f.Data != nil && json.Unmarshal(f.Data, &ev) == nil {
				convID, msgID, last = ev.ConversationID, ev.MessageID, ev.Event
			}
		}
		if last != "message_end" {
			return "", ""
		}
		return convID, msgID
	}

	var wg sync.WaitGroup
	for w := range workers {
		users[w] = &soakUser{convs: map[string][]string{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			user := fmt.Sprintf("soak-%d", w)
			st := users[w]
			pickConv := func() string { return ledger.pick(st, rng) }
			record := func(conv, msg string) { ledger.record(st, conv, msg) }
			for ctx.Err() == nil {
				c := cassettes[rng.IntN(len(cassettes))]
				switch op := rng.IntN(10); {
				case op < 3:
					ops[0].Add(1)
					record(chat(rng, user, "", c, "", false))
				case op == 3:
					if conv := pickConv(); conv != "" {
						ops[1].Add(1)
						if cv, m := chat(rng, user, conv, c, "", false); cv != "" {
							record(cv, m)
						}
					}
				case op == 4:
					ops[2].Add(1)
					faults := []string{"status:503", "status:429;retry-after=1", "error-after:2", "empty-response"}
					chat(rng, user, "", c, faults[rng.IntN(len(faults))], false)
				case op == 5:
					ops[3].Add(1)
					chat(rng, user, "", c, "", true)
				case op == 6:
					ops[4].Add(1)
					body, ct := multipartBody(t, part{field: "user", filename: "-", data: strings.NewReader(user)},
						part{field: "file", filename: "notes.txt", contentType: "text/plain", data: strings.NewReader(strings.Repeat("n", 1+rng.IntN(4096)))})
					if resp, err := send(http.MethodPost, "/files/upload", body, "Content-Type", ct); err == nil {
						drain(resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusCreated {
							failures.Add(1)
						}
					}
				case op == 7:
					ops[5].Add(1)
					if resp, err := send(http.MethodGet, "/conversations?limit=20&user="+user, nil); err == nil {
						drain(resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							failures.Add(1)
						}
					}
				case op == 8:
					if conv := pickConv(); conv != "" {
						ops[6].Add(1)
						b := fmt.Sprintf(`{"name":"renamed %d","user":%q}`, rng.IntN(1000), user)
						if resp, err := send(http.MethodPost, "/conversations/"+conv+"/name", strings.NewReader(b), "Content-Type", "application/json"); err == nil {
							drain(resp.Body)
							resp.Body.Close()
						}
					}
				default:
					if conv := pickConv(); conv != "" && rng.IntN(3) == 0 {
						ops[7].Add(1)
						b := fmt.Sprintf(`{"user":%q}`, user)
						resp, err := send(http.MethodDelete, "/conversations/"+conv, strings.NewReader(b), "Content-Type", "application/json")
						if err == nil {
							drain(resp.Body)
							resp.Body.Close()
							if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusOK {
								ledger.forget(st, conv)
							}
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	<-sampled
	elapsed := time.Since(start)
	if path := os.Getenv("SOAK_HEAPPROFILE"); path != "" {
		// What is live once the traffic stopped, the server still up:
		// `go tool pprof -sample_index=inuse_space` shows what grows.
		if f, err := os.Create(path); err == nil {
			runtime.GC()
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}

	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	if ledger.truncatedPasses > 0 {
		t.Fatalf("%d eviction passes named only some of their records: the check cannot tell evicted from lost", ledger.truncatedPasses)
	}
	checked, msgs := 0, 0
	for w, st := range users {
		user := fmt.Sprintf("soak-%d", w)
		listed := map[string]int{}
		for _, c := range listAll(t, s, user) {
			listed[c.ID]++
		}
		for conv, want := range st.convs {
			if ledger.recentlyEvicted(conv) {
				continue
			}
			checked++
			if listed[conv] != 1 {
				t.Errorf("%s: conversation %s listed %d times, want once", user, conv, listed[conv])
				continue
			}
			page := getJSON[dify.MessagePage](t, s, "/messages?limit=100&user="+user+"&conversation_id="+conv)
			seen := map[string]int{}
			for _, m := range page.Data {
				seen[m.ID]++
			}
			for _, id := range want {
				msgs++
				if seen[id] != 1 {
					t.Errorf("%s: message %s of %s stored %d times, want once", user, id, conv, seen[id])
				}
			}
		}
	}
	client.CloseIdleConnections()
	settle(t, 10*time.Second, func() bool { return runtime.NumGoroutine() <= baseGoroutines+2 },
		func() string {
			return fmt.Sprintf("goroutines %d, baseline %d", runtime.NumGoroutine(), baseGoroutines)
		})
	s.checkLogs(t)

	var total int64
	for i := range ops {
		total += ops[i].Load()
	}
	used, bound := s.srv.StateUsage()
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	t.Logf("soak: %v, %d workers, %d operations (%.0f/s): chats %d, follow-ups %d, faulted %d, left early %d, uploads %d, listings %d, renames %d, deletes %d",
		elapsed.Round(time.Second), workers, total, float64(total)/elapsed.Seconds(),
		ops[0].Load(), ops[1].Load(), ops[2].Load(), ops[3].Load(), ops[4].Load(), ops[5].Load(), ops[6].Load(), ops[7].Load())
	t.Logf("soak: heap (HeapAlloc, garbage included) peak per quarter %.1f / %.1f / %.1f / %.1f MiB; state %.1f of %.0f MiB; %d conversations evicted",
		mib(heapPeaks[0].Load()), mib(heapPeaks[1].Load()), mib(heapPeaks[2].Load()), mib(heapPeaks[3].Load()), mib(uint64(used)), mib(uint64(bound)), ledger.evicted)
	t.Logf("soak: %d conversations and %d messages checked (none lost or duplicated), goroutines back to %d (baseline %d), %d unexpected statuses",
		checked, msgs, runtime.NumGoroutine(), baseGoroutines, failures.Load())
	if n := stuck.Load(); n > 0 {
		t.Errorf("soak: %d exchanges got no complete response within %v: a client waited for a response (or the end of a stream) that never came", n, soakExchangeLimit)
	}
	if failures.Load() > 0 {
		t.Errorf("%d uploads or listings failed", failures.Load())
	}
	if q2, q4 := heapPeaks[1].Load(), heapPeaks[3].Load(); q4 > 2*q2+32<<20 {
		t.Errorf("the live heap did not plateau: peak %.1f MiB in the last quarter, %.1f MiB in the second", mib(q4), mib(q2))
	}
	// A long run (make soak) is held to the flat-heap target: the last
	// quarter's peak within 20 % of the second's, and within
	// soakHeapMultiple state bounds plus the journal's bound (docs/security.md).
	if dur >= 5*time.Minute {
		q2, q4 := heapPeaks[1].Load(), heapPeaks[3].Load()
		if float64(q4) > 1.2*float64(q2) {
			t.Errorf("the heap grew: last quarter's peak %.1f MiB is more than 20%% over the second's %.1f MiB", mib(q4), mib(q2))
		}
		if limit := uint64(soakHeapMultiple*bound) + journal.DefaultBytes; q4 > limit {
			t.Errorf("the heap peak %.1f MiB passes %d state bounds plus the journal's bound (%.0f MiB)", mib(q4), soakHeapMultiple, mib(limit))
		}
	}
}

// soakUser is one worker's completed turns: conversation → message ids.
type soakUser struct{ convs map[string][]string }

// soakLedger is what the soak expects the server to hold, pruned as the
// server evicts: an evicted conversation leaves its user's map at once, and
// its id is kept only for soakEvictWindow, to excuse a turn that completes
// (or a follow-up that lands) just before the eviction while the worker has
// not recorded it yet. A ledger that kept every evicted id and every message
// ever sent grew by ~20 MB in 4 minutes, in the heap the soak measures.
type soakLedger struct {
	mu              sync.Mutex
	owner           map[string]*soakUser // conversation → the user that recorded it
	recent, older   map[string]bool      // ids evicted in this window and the last one
	rotated         time.Time
	evicted         int
	truncatedPasses int
}

const soakEvictWindow = 30 * time.Second

func newSoakLedger() *soakLedger {
	return &soakLedger{owner: map[string]*soakUser{}, recent: map[string]bool{}, older: map[string]bool{}, rotated: time.Now()}
}

// evict is the server's OnEvict.
func (l *soakLedger) evict(ev mockserver.Eviction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.rotated) > soakEvictWindow {
		l.older, l.recent, l.rotated = l.recent, map[string]bool{}, time.Now()
	}
	for _, id := range ev.IDs {
		l.recent[id] = true
		if u := l.owner[id]; u != nil {
			delete(u.convs, id)
			delete(l.owner, id)
		}
	}
	l.evicted += ev.Count()
	if len(ev.IDs) < ev.Count() {
		l.truncatedPasses++
	}
}

func (l *soakLedger) recentlyEvicted(id string) bool { return l.recent[id] || l.older[id] }

// record notes a completed turn, unless its conversation was just evicted.
func (l *soakLedger) record(u *soakUser, conv, msg string) {
	if conv == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.recentlyEvicted(conv) {
		return
	}
	u.convs[conv] = append(u.convs[conv], msg)
	l.owner[conv] = u
}

func (l *soakLedger) forget(u *soakUser, conv string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(u.convs, conv)
	delete(l.owner, conv)
}

// pick returns one of the user's conversations ("" when it has none).
func (l *soakLedger) pick(u *soakUser, rng *rand.Rand) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(u.convs) == 0 {
		return ""
	}
	ids := make([]string, 0, len(u.convs))
	for id := range u.convs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids[rng.IntN(len(ids))]
}

// soakHeapMultiple is how many state bounds (plus the journal's bound) the
// soak's heap peak may reach, garbage included: the state itself, the
// collector's headroom, and the test client's buffers in the same process.
const soakHeapMultiple = 4

// soakExchangeLimit bounds one request and its response: a speed-0 stream
// or any other exchange here takes milliseconds, so one that takes this
// long is stuck.
const soakExchangeLimit = 30 * time.Second

// soakLog keeps warnings, errors and the state bound's eviction lines, not
// the access log: over a long soak the kept lines would otherwise be the
// heap growth the test measures.
type soakLog struct{ slog.Handler }

func (h soakLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn && !strings.HasPrefix(r.Message, "state bound reached") {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func newSoakServer(t *testing.T, cfg mockserver.Config) *loggedServer {
	t.Helper()
	logs := &lockedBuffer{}
	cfg.Logger = slog.New(soakLog{slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})})
	srv, err := mockserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener = srv.Listener(ts.Listener) // as `dify-mock serve`: streams detached
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
