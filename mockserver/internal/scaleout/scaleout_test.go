package scaleout

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

const replicas = 3

// haproxyBin finds HAProxy ($HAPROXY, else haproxy on PATH, else Debian's
// /usr/sbin/haproxy) or skips the test saying how to get one.
func haproxyBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HAPROXY"); p != "" {
		return p
	}
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	t.Skip("no haproxy binary: scripts/ensure-haproxy.sh installs Debian's haproxy package (as root), or set HAPROXY=/path/to/haproxy")
	return ""
}

// balancer is three replicas behind HAProxy.
type balancer struct {
	url      string   // HAProxy's API base URL
	replicas []string // each replica's own API base URL, by server name mock1…
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startBalancer starts the replicas (in-process mocks at speed 1, each its
// own store, as separate dify-mock processes would be) and HAProxy with the
// documented configuration, its addresses replaced by free ones.
func startBalancer(t *testing.T) *balancer {
	bin := haproxyBin(t)
	cfg, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "mock", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(cfg)
	b := &balancer{}
	for i := 1; i <= replicas; i++ {
		srv, err := mockserver.New(mockserver.Config{Speed: 1})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
			_ = hs.Shutdown(ctx)
		})
		placeholder := fmt.Sprintf("127.0.0.1:500%d", i)
		if !strings.Contains(text, placeholder) {
			t.Fatalf("haproxy.cfg has no server %s", placeholder)
		}
		text = strings.ReplaceAll(text, placeholder, ln.Addr().String())
		b.replicas = append(b.replicas, "http://"+ln.Addr().String()+"/v1")
	}
	front := freeAddr(t)
	text = strings.ReplaceAll(text, "127.0.0.1:5000", front)
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-q", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-db", "-f", path)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	b.url = "http://" + front + "/v1"
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(b.url + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return b
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy did not answer on %s: %v\n%s", front, err, logs.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("haproxy exited: %v\n%s", err, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// replicaRecorder notes which replica answered each request (HAProxy's
// X-Replica header) and asks for speed 0 unless a test sets another.
type replicaRecorder struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (r *replicaRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if req.Header.Get("X-Dify-Mock-Speed") == "" {
		req.Header.Set("X-Dify-Mock-Speed", "0")
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.seen[resp.Header.Get("X-Replica")] = true
		r.mu.Unlock()
	}
	return resp, err
}

func (r *replicaRecorder) replicas() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.seen {
		out = append(out, k)
	}
	return out
}

// TestReplicasBehindHAProxy: 20 end users each upload a file, start a chat
// that uses it, continue it, start a second one, rate a message, delete a
// conversation and list what is left, all through HAProxy. Every request of
// a user reaches the same replica (an upload, a conversation or a message
// on another replica would be a 400 or 404 here), the listings are exactly
// the user's, and the users are spread over the replicas. App-wide lists
// (feedbacks) are per replica, as docs/mock/scale-out.md says.
func TestReplicasBehindHAProxy(t *testing.T) {
	b := startBalancer(t)
	const users = 20
	ctx := t.Context()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		byUser   = map[string]string{} // user → its replica
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for u := range users {
		user := fmt.Sprintf("scale-user-%02d", u)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := &replicaRecorder{seen: map[string]bool{}}
			c, err := dify.NewClient(b.url, "app-scale", dify.WithUser(user), dify.WithHTTPClient(&http.Client{Transport: rec}))
			if err != nil {
				fail("%s: %v", user, err)
				return
			}
			if err := userSession(ctx, c, user); err != nil {
				fail("%s: %v", user, err)
				return
			}
			seen := rec.replicas()
			if len(seen) != 1 || seen[0] == "" {
				fail("%s was answered by replicas %q, want exactly one", user, seen)
				return
			}
			mu.Lock()
			byUser[user] = seen[0]
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d users failed:\n%s", len(failures), users, strings.Join(failures, "\n"))
	}
	perReplica := map[string]int{}
	for _, r := range byUser {
		perReplica[r]++
	}
	if len(perReplica) < 2 {
		t.Fatalf("all %d users went to one replica: %v", users, perReplica)
	}
	t.Logf("users per replica: %v", perReplica)

	// Feedback lists are app-wide, so per replica: each replica lists the
	// ratings of its own users, and only together do they hold all 20.
	total := 0
	for i, base := range b.replicas {
		c, _ := dify.NewClient(base, "app-scale")
		page, err := c.ListAppFeedbacks(ctx, dify.ListAppFeedbacksParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if want := perReplica[fmt.Sprintf("mock%d", i+1)]; len(page.Data) != want {
			t.Errorf("replica mock%d lists %d feedbacks, want its %d users' ratings", i+1, len(page.Data), want)
		}
		total += len(page.Data)
	}
	if total != users {
		t.Errorf("the replicas hold %d feedbacks together, want %d", total, users)
	}
}

// userSession is one end user's work; each step depends on the state the
// earlier ones left on the user's replica.
func userSession(ctx context.Context, c *dify.Client, user string) error {
	up, err := c.UploadFile(ctx, dify.Upload{Filename: "notes.txt", Reader: strings.NewReader("notes of " + user)})
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	first, err := chat(ctx, c, dify.ChatRequest{Query: "Summarize my notes", Inputs: map[string]any{},
		Files: []dify.InputFile{{Type: dify.FileTypeDocument, TransferMethod: dify.TransferLocalFile, UploadFileID: up.ID}}})
	if err != nil {
		return fmt.Errorf("chat with the upload: %w", err)
	}
	followUp, err := chat(ctx, c, dify.ChatRequest{Query: "And then?", Inputs: map[string]any{}, ConversationID: first.ConversationID})
	if err != nil {
		return fmt.Errorf("follow-up turn: %w", err)
	}
	if followUp.ConversationID != first.ConversationID {
		return fmt.Errorf("follow-up went to conversation %s, not %s", followUp.ConversationID, first.ConversationID)
	}
	second, err := chat(ctx, c, dify.ChatRequest{Query: "A new topic", Inputs: map[string]any{}})
	if err != nil {
		return fmt.Errorf("second conversation: %w", err)
	}
	if err := c.SendFeedback(ctx, followUp.MessageID, dify.FeedbackRequest{Rating: dify.RatingLike}); err != nil {
		return fmt.Errorf("feedback: %w", err)
	}
	msgs, err := c.ListMessages(ctx, dify.ListMessagesParams{ConversationID: first.ConversationID, Limit: 20})
	if err != nil {
		return fmt.Errorf("messages: %w", err)
	}
	if len(msgs.Data) != 2 || msgs.Data[0].ID != first.MessageID || msgs.Data[1].ID != followUp.MessageID {
		return fmt.Errorf("messages of the first conversation: %d, want its 2 turns in order", len(msgs.Data))
	}
	files := msgs.Data[0].MessageFiles
	if len(files) != 1 || files[0].UploadFileID == nil || *files[0].UploadFileID != up.ID {
		return fmt.Errorf("the first turn's files %+v do not reference upload %s", files, up.ID)
	}
	if msgs.Data[1].Feedback == nil || msgs.Data[1].Feedback.Rating != dify.RatingLike {
		return fmt.Errorf("the rated message has feedback %+v", msgs.Data[1].Feedback)
	}
	if err := c.DeleteConversation(ctx, second.ConversationID, ""); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	convs, err := c.ListConversations(ctx, dify.ListConversationsParams{Limit: 100})
	if err != nil {
		return fmt.Errorf("conversations: %w", err)
	}
	if len(convs.Data) != 1 || convs.Data[0].ID != first.ConversationID {
		ids := make([]string, len(convs.Data))
		for i, cv := range convs.Data {
			ids[i] = cv.ID
		}
		return fmt.Errorf("conversations listed %v, want only %s", ids, first.ConversationID)
	}
	return nil
}

type turnIDs struct{ ConversationID, MessageID string }

func chat(ctx context.Context, c *dify.Client, req dify.ChatRequest) (turnIDs, error) {
	s, err := c.SendChatMessage(ctx, req)
	if err != nil {
		return turnIDs{}, err
	}
	turn, err := dify.Collect(s)
	if err != nil {
		return turnIDs{}, err
	}
	return turnIDs{turn.ConversationID, turn.MessageID}, nil
}

// TestStreamsKeepTheirTimingThroughHAProxy: 20 streams at recorded speed
// through the balancer, at once. Each frame's lateness is measured as the
// bench measures it (bench/README.md): arrival minus recorded offset,
// against the stream's own start (its least late frame), so connection
// set-up does not count. Every frame must arrive; over all frames of all
// streams the median lateness must stay under 100 ms and the worst under
// 1 s. HAProxy buffering frames until later ones (the recorded gaps are
// 250 ms and more) or holding them for the ~200 ms it does without
// `option http-no-delay` moves the median past the bound; a busy machine
// stalling every stream once (seen: one frame of each stream ~220 ms late
// at load 22) moves only the tail, which the 1 s bound leaves to noise.
func TestStreamsKeepTheirTimingThroughHAProxy(t *testing.T) {
	b := startBalancer(t)
	set, err := cassette.LoadFS(cassettes.FS(), "built-in cassettes")
	if err != nil {
		t.Fatal(err)
	}
	cas, _ := set.Get("plain-answer")
	frames := cas.Turns[0].Frames
	const streams = 20
	const medianBound, worstBound = 100 * time.Millisecond, time.Second
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lateness []time.Duration
	errs := make(chan error, streams)
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"query":"hi","inputs":{},"response_mode":"streaming","user":"timing-%d"}`, i)
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, b.url+"/chat-messages", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer app-scale")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Dify-Mock-Cassette", "plain-answer")
			req.Header.Set("X-Dify-Mock-Speed", "1")
			sent := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			fr := dify.NewFrameReader(bufio.NewReader(resp.Body))
			var arrivals []time.Duration
			for {
				f, err := fr.Next()
				at := time.Since(sent)
				if err == io.EOF {
					break
				}
				if err != nil {
					errs <- fmt.Errorf("stream %d after %d frames: %w", i, len(arrivals), err)
					return
				}
				if !f.Empty() {
					arrivals = append(arrivals, at)
				}
			}
			if len(arrivals) != len(frames) {
				errs <- fmt.Errorf("stream %d: %d frames, the recording has %d", i, len(arrivals), len(frames))
				return
			}
			start := arrivals[0] - frames[0].Offset
			for n, at := range arrivals {
				start = min(start, at-frames[n].Offset)
			}
			mu.Lock()
			defer mu.Unlock()
			for n, at := range arrivals {
				l := at - frames[n].Offset - start
				lateness = append(lateness, l)
				if l > worstBound {
					errs <- fmt.Errorf("stream %d frame %d (recorded at %v) was %v late", i, n, frames[n].Offset, l)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(lateness) == 0 {
		return
	}
	slices.Sort(lateness)
	median, worst := lateness[len(lateness)/2], lateness[len(lateness)-1]
	t.Logf("lateness over %d frames: median %v, worst %v", len(lateness), median, worst)
	if median > medianBound {
		t.Errorf("median lateness %v through the balancer, want ≤ %v (frames held back)", median, medianBound)
	}
}
