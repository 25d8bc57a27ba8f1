//go:build !race

package mockserver_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// Without the race detector only: it slows the matcher tenfold, and this
// test is about time. store.TestMatchAnnotationDoesNotHoldTheLock checks
// the locking under the race detector.

// Issue 19's target: with 20,000 annotations, a 100 KB query is answered
// within 200 ms, and other users' requests are not held up meanwhile. The
// test's bounds are generous (a loaded machine); `make bench` reports the
// times.
func TestAnnotationMatchingAtScale(t *testing.T) {
	snap := store.Snapshot{Version: store.SnapshotVersion, ExportedAt: time.Now().UTC(),
		AnnotationReply: &store.AnnotationSetting{ScoreThreshold: 0.8, EmbeddingProviderName: "p", EmbeddingModelName: "m"}}
	base := time.Unix(1700000000, 0).UTC()
	for i := range 20000 {
		snap.Annotations = append(snap.Annotations, store.SnapAnnotation{
			ID:       fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			Question: fmt.Sprintf("what are the opening hours of shop %d in %s", i, strings.Repeat("x", i%40+1)),
			Answer:   "9 to 5.", CreatedAt: base.Add(time.Duration(i) * time.Second),
		})
	}
	data, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, mockserver.Config{})
	if ok, err := e.srv.LoadState(path); !ok || err != nil {
		t.Fatalf("load: %v %v", ok, err)
	}
	query := strings.Repeat("what are the opening hours of shop 7 in xxxxxxxx ", 2000) // 100 KB
	body := chatBody(query, "heavy")

	var wg sync.WaitGroup
	var worst time.Duration
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // another user's requests while the heavy ones run
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			resp, _ := e.do("GET", "/conversations?user=someone-else", nil)
			if resp.StatusCode != 200 {
				t.Errorf("other user: %d", resp.StatusCode)
				return
			}
			worst = max(worst, time.Since(t0))
		}
	}()
	for i := range 5 {
		start := time.Now()
		resp := e.send("POST", "/chat-messages", body)
		first := time.Since(start)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get(mockserver.HeaderAnnotation) == "" {
			t.Fatalf("heavy chat %d: %d, annotation %q", i, resp.StatusCode, resp.Header.Get(mockserver.HeaderAnnotation))
		}
		t.Logf("20,000 annotations, %d-byte query: headers after %v", len(query), first)
		if first > 3*time.Second {
			t.Errorf("a 100 KB query over 20,000 annotations took %v to answer (target 200 ms)", first)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("another user's slowest GET /conversations meanwhile: %v", worst)
	if worst > 3*time.Second {
		t.Errorf("another user's request waited %v behind annotation matching", worst)
	}
}
