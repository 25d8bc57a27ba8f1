package mockserver_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// The floods of issue 20, each sent by a client any web page can be (/v1
// accepts any origin and key): the live heap after each stays under the
// documented bound (state, journal) plus a small constant. The live heap
// (HeapAlloc after a collection) is what the bound governs; the process's
// RSS adds the collector's headroom (GOGC) on top.

// Each flood sends well over the limit checked (bounds plus slack), in
// pieces of 512 KB (the were 3 MB; under the race detector each
// megabyte costs seconds), so a kind that no bound counts fails.
const (
	floodStateBound   = 1 << 20
	floodJournalBound = 1 << 20
	floodSlack        = 4 << 20 // the server, the test's own buffers, the collector's leftovers
)

func floodEnv(t *testing.T) (*env, uint64) {
	e := newEnv(t, mockserver.Config{Speed: 0, MaxStateBytes: floodStateBound, Control: mockserver.ControlConfig{JournalBytes: floodJournalBound}})
	return e, heapAfterGC()
}

func checkHeap(t *testing.T, what string, base uint64, sent int64) {
	t.Helper()
	grew := int64(heapAfterGC()) - int64(base)
	limit := int64(floodStateBound + floodJournalBound + floodSlack)
	t.Logf("%s: sent %d MiB, live heap grew %.1f MiB (limit %d MiB)", what, sent>>20, float64(grew)/(1<<20), limit>>20)
	if grew > limit {
		t.Errorf("%s: the live heap grew by %.1f MiB, over the bounds (%d MiB state + %d MiB journal) plus %d MiB", what, float64(grew)/(1<<20), floodStateBound>>20, floodJournalBound>>20, floodSlack>>20)
	}
}

func TestFloodFeedbackComments(t *testing.T) {
	e, base := floodEnv(t)
	comment := strings.Repeat("c", 512<<10)
	const n = 20
	for i := range n {
		user := fmt.Sprintf("fb-%d", i)
		_, frames := e.chat(chatBody("Hello", user))
		msg := frames[len(frames)-1].str("message_id")
		resp, body := e.do(http.MethodPost, "/messages/"+msg+"/feedbacks", map[string]any{"rating": "like", "user": user, "content": comment})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("feedback %d: %d %s", i, resp.StatusCode, body)
		}
	}
	comment = ""
	checkHeap(t, "feedback comments", base, n*512<<10)
}

func TestFloodAnnotations(t *testing.T) {
	e, base := floodEnv(t)
	answer := strings.Repeat("a", 512<<10)
	const n = 20
	refused := 0
	for i := range n {
		resp, body := e.do(http.MethodPost, "/apps/annotations", map[string]any{"question": fmt.Sprintf("question %d", i), "answer": answer})
		switch resp.StatusCode {
		case http.StatusCreated:
		case http.StatusRequestEntityTooLarge:
			refused++
			if !strings.Contains(string(body), "--max-state-bytes") {
				t.Errorf("refusal does not name the bound: %s", body)
			}
		default:
			t.Fatalf("annotation %d: %d %s", i, resp.StatusCode, body)
		}
	}
	if refused == 0 {
		t.Error("no annotation was refused past the state bound")
	}
	answer = ""
	checkHeap(t, "annotations", base, n*512<<10)
}

func TestFloodLongQueries(t *testing.T) {
	e, base := floodEnv(t)
	pad := strings.Repeat("p", 700<<10)
	const n = 60
	for i := range n {
		resp, _ := e.do(http.MethodGet, fmt.Sprintf("/conversations?user=q%d&pad=%s", i, pad), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	pad = ""
	checkHeap(t, "700 KB query strings", base, n*700<<10)
}

func TestFloodLongChatQueries(t *testing.T) {
	e, base := floodEnv(t)
	query := strings.Repeat("q", 512<<10)
	const n = 20
	for i := range n {
		e.chat(chatBody(query, fmt.Sprintf("cq-%d", i)))
	}
	query = ""
	checkHeap(t, "512 KB chat queries", base, n*512<<10)
}
