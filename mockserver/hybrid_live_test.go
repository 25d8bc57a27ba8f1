package mockserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/lint"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// The live lane against an upstream that breaks, sends odd bytes or
// echoes its key (docs/mock/hybrid.md).

// The upstream's ids in the frames upFrame writes.
const (
	upConvID = "c1c1c1c1-0000-4000-8000-000000000001"
	upMsgID  = "a1a1a1a1-0000-4000-8000-000000000002"
	upTaskID = "b1b1b1b1-0000-4000-8000-000000000003"
)

// upFrame is a Dify frame of the upstream's: event with fields (JSON
// members without braces) and the envelope.
func upFrame(event, fields string) string {
	if fields != "" {
		fields += ","
	}
	return `data: {"event":"` + event + `",` + fields + `"conversation_id":"` + upConvID + `","message_id":"` + upMsgID +
		`","created_at":1764471600,"task_id":"` + upTaskID + `"}` + "\n\n"
}

func upDelta(answer string) string {
	a, _ := json.Marshal(answer)
	return upFrame("agent_message", `"id":"`+upMsgID+`","answer":`+string(a))
}

// upUsage is a whole message_end usage, as Dify sends it.
const upUsage = `{"prompt_tokens":42,"prompt_unit_price":"0.001","prompt_price_unit":"0.001","prompt_price":"0.0000420",` +
	`"completion_tokens":15,"completion_unit_price":"0.002","completion_price_unit":"0.001","completion_price":"0.0000300",` +
	`"total_tokens":57,"total_price":"0.0000720","currency":"USD","latency":0.62}`

func upEnd(usage string) string {
	return upFrame("message_end", `"id":"`+upMsgID+`","metadata":{"usage":`+usage+`},"files":null`)
}

// streamAnswer makes the stand-in answer with chunks, each written and
// flushed on its own; abort ends the connection without ending the body.
func streamAnswer(up *fakeUpstream, abort bool, chunks ...string) {
	up.answer = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		for _, c := range chunks {
			_, _ = io.WriteString(w, c)
			_ = rc.Flush()
		}
		if abort {
			panic(http.ErrAbortHandler)
		}
	}
	up.mode.Store("answer")
}

// rawAsk asks a new question and returns the response and its body as the
// client received it.
func rawAsk(e *env, query string) (*http.Response, []byte) {
	e.t.Helper()
	resp := e.send(http.MethodPost, "/chat-messages", map[string]any{"query": query, "user": "fe-dev", "inputs": map[string]any{}, "response_mode": "streaming"})
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("reading the stream: %v", err)
	}
	return resp, body
}

// wholeFrames parses body as an SSE client does and fails unless every
// frame is whole, carries a JSON object and the stream ends with exactly
// one error event (Dify's shape: status, code, message) and nothing after.
func wholeFrames(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	fr := dify.NewFrameReader(bytes.NewReader(body))
	for {
		f, err := fr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("frame %d is not whole (%v): %q", len(out), err, f.Raw)
		}
		var m map[string]any
		if err := json.Unmarshal(f.Data, &m); err != nil {
			t.Fatalf("frame %d is not a JSON object (%v): %q", len(out), err, f.Raw)
		}
		out = append(out, m)
	}
	errs := 0
	for i, m := range out {
		if m["event"] == "error" {
			errs++
			if i != len(out)-1 {
				t.Errorf("frame %d is an error event, but %d frame(s) follow it", i, len(out)-1-i)
			}
			if _, ok := m["status"].(float64); !ok || m["code"] != "internal_server_error" || !strings.HasPrefix(fmt.Sprint(m["message"]), "dify-mock: the upstream stream broke") {
				t.Errorf("error event %v, want Dify's shape with internal_server_error", m)
			}
		}
	}
	if errs != 1 {
		t.Fatalf("%d error events, want exactly one at the end:\n%s", errs, body)
	}
	return out
}

// A connection the upstream breaks in the middle of a frame: the client
// gets the whole frames, then one well-formed error event, and nothing of
// the cut frame.
func TestHybridLiveCutMidFrame(t *testing.T) {
	up := newFakeUpstream(t)
	e, _ := hybridEnv(t, up, t.TempDir(), nil)
	whole := upDelta("Saturday: the palace. ")
	cut := upDelta("HALF-FRAME-MARKER Sunday: the market.")
	streamAnswer(up, true, whole, upDelta("Then dinner. "), cut[:len(cut)/2])

	resp, body := rawAsk(e, "Plan my weekend, upstream cut")
	if resp.Header.Get(mockserver.HeaderUpstream) != "live" {
		t.Fatalf("not answered live: %v", resp.Header)
	}
	frames := wholeFrames(t, body)
	if len(frames) != 3 || frames[0]["answer"] != "Saturday: the palace. " || frames[1]["answer"] != "Then dinner. " {
		t.Fatalf("frames %v, want the two whole deltas and the error", frames)
	}
	if bytes.Contains(body, []byte("HALF-FRAME-MARKER")) {
		t.Errorf("the client got part of the cut frame:\n%s", body)
	}
	if frames[2]["conversation_id"] != frames[0]["conversation_id"] {
		t.Errorf("the error event names conversation %v, the stream %v", frames[2]["conversation_id"], frames[0]["conversation_id"])
	}
	// The journal holds the bytes the client read: the relayed frames
	// (shared with the recorder, not copied) and the mock's error event.
	en := e.chatEntry()
	var journaled strings.Builder
	for _, f := range en.Frames {
		journaled.WriteString(f.Data)
	}
	if journaled.String() != string(body) || len(en.Frames) != 3 || en.Frames[2].Index != -1 || en.Frames[2].Event != "error" {
		t.Errorf("the journal's %d frames (last %+v)\n%s\nthe client read\n%s", len(en.Frames), en.Frames[len(en.Frames)-1], journaled.String(), body)
	}
}

// Frames the upstream sends together (Dify's agent_thought and its
// agent_message) reach the client together, in one chunk of the response,
// as a plain relay passes them; each chunk holds whole frames only.
func TestHybridLiveFramesSentTogetherGoOutTogether(t *testing.T) {
	up := newFakeUpstream(t)
	e, _ := hybridEnv(t, up, t.TempDir(), nil)
	together := upDelta("TOGETHER-ONE ") + upDelta("TOGETHER-TWO ")
	streamAnswer(up, false, upDelta("First. "), together, upEnd(upUsage))

	addr := strings.TrimPrefix(e.ts.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"query":"Plan my weekend, two at once","user":"fe-dev","inputs":{},"response_mode":"streaming"}`
	fmt.Fprintf(conn, "POST /v1/chat-messages HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		addr, e.authorization(), len(body), body)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get(mockserver.HeaderUpstream) != "live" || len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("not a chunked live answer: %v %v %s", resp.TransferEncoding, resp.Header, msg)
	}
	// http.ReadResponse would join the chunks: read them one by one from
	// the connection's bytes.
	var chunks []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("chunk size: %v", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		if err != nil {
			t.Fatalf("chunk size %q: %v", line, err)
		}
		if n == 0 {
			break
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(br, data); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, string(data[:n]))
	}
	sent := 0
	for _, c := range chunks {
		if !strings.HasSuffix(c, "\n\n") {
			t.Errorf("a chunk ends inside a frame: %q", c)
		}
		if strings.Contains(c, "TOGETHER-ONE") != strings.Contains(c, "TOGETHER-TWO") {
			t.Errorf("the two frames sent together went out apart: %q", c)
		}
		sent += strings.Count(c, "data: ")
	}
	if sent != 4 {
		t.Errorf("%d frames relayed, want 4:\n%q", sent, chunks)
	}
}

// The answer cap (record.Config.MaxBody, 64 MiB by default) cuts a live
// answer as a broken connection does: whole frames, then one error event.
func TestHybridLiveAnswerCap(t *testing.T) {
	up := newFakeUpstream(t)
	const limit = 64 << 10
	e, _ := hybridEnvRec(t, up, t.TempDir(), func(c *record.Config) { c.MaxBody = limit }, nil)
	var chunks []string
	size := 0
	for i := 0; size < 2*limit; i++ {
		f := upDelta(fmt.Sprintf("delta %04d %s ", i, strings.Repeat("x", 900)))
		chunks = append(chunks, f)
		size += len(f)
	}
	chunks = append(chunks, upEnd(upUsage))
	streamAnswer(up, false, chunks...)

	resp, body := rawAsk(e, "A very long answer, please")
	if resp.Header.Get(mockserver.HeaderUpstream) != "live" {
		t.Fatalf("not answered live: %v", resp.Header)
	}
	frames := wholeFrames(t, body)
	n := len(frames) - 1
	if n == 0 || n*len(chunks[0]) > limit {
		t.Fatalf("%d whole frames of %d bytes relayed under a %d-byte cap", n, len(chunks[0]), limit)
	}
	if msg := fmt.Sprint(frames[n]["message"]); !strings.Contains(msg, "larger than the limit") {
		t.Errorf("the error event says %q; want the cap named", msg)
	}
	for i := range n {
		if want := fmt.Sprintf("delta %04d ", i); !strings.HasPrefix(fmt.Sprint(frames[i]["answer"]), want) {
			t.Fatalf("frame %d answers %.20q, want %q…", i, frames[i]["answer"], want)
		}
	}
}

// heapAlloc is the live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// peakHeap runs f and returns the highest heap (HeapAlloc, garbage not yet
// collected included, as resident memory has it) seen while f ran,
// sampled every 5 ms.
func peakHeap(f func()) uint64 {
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load()
}

// The bounds TestHybridLiveAnswerMemory asserts (docs/mock/hybrid.md
// quotes the measured figures): what a live answer costs at its peak, from
// its first frame to the end of its save, is a small multiple of what the
// mock keeps of it afterwards (the stored message, the saved cassette's
// turn in the catalog and the recorder's session, the journal's share),
// and that is a small multiple of the answer.
const (
	livePeakPerKept   = 4
	liveKeptPerAnswer = 7
)

// A large live answer costs a small multiple of what is kept of it: the
// frames are held once (the relay rewrites ids in place, the recorder keeps
// the same bytes and lets go of them once the save has its copy), and the
// save adds its encoding and checks.
func TestHybridLiveAnswerMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("streams a 4 MiB answer; the race detector's own memory would blur the figure")
	}
	up := newFakeUpstream(t)
	dir := t.TempDir()
	e, logs := hybridEnv(t, up, dir, nil)
	const answerSize = 4 << 20
	delta := upDelta(strings.Repeat("All work and no play. ", 180)) // about 4 KiB
	n := answerSize / len(delta)
	up.answer = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for range n {
			_, _ = io.WriteString(w, delta)
		}
		_, _ = io.WriteString(w, upEnd(upUsage))
	}
	up.mode.Store("answer")
	size := float64(n * len(delta))

	base := heapAlloc()
	peak := peakHeap(func() {
		resp := e.send(http.MethodPost, "/chat-messages", map[string]any{"query": "Write me a long essay", "user": "fe-dev", "inputs": map[string]any{}, "response_mode": "streaming"})
		got, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got < int64(size) {
			t.Errorf("the client got %d bytes of a %.0f-byte answer", got, size)
		}
		mockserver.WaitLiveSaves(e.srv)
	})
	kept := float64(heapAlloc() - base)
	grew := float64(peak - base)
	const mib = 1 << 20
	t.Logf("a %.1f MiB live answer: kept %.1f MiB (%.1f× the answer); the heap grew by %.1f MiB at its peak (%.1f× what is kept, %.1f× the answer)",
		size/mib, kept/mib, kept/size, grew/mib, grew/kept, grew/size)
	if _, err := os.Stat(filepath.Join(dir, "write-me-a-long-essay.yaml")); err != nil {
		t.Fatalf("not saved: %v\n%.2000s", err, logs)
	}
	if grew > livePeakPerKept*kept {
		t.Errorf("the peak is %.1f× what is kept, want at most %d×", grew/kept, livePeakPerKept)
	}
	if kept > liveKeptPerAnswer*size {
		t.Errorf("%.1f× the answer is kept, want at most %d×", kept/size, liveKeptPerAnswer)
	}
}

// lastChat is the journal's newest chat entry.
func lastChat(e *env) journal.Entry {
	list := e.srv.Journal().List(journal.Filter{Route: "POST /v1/chat-messages"}) // oldest first
	if len(list) == 0 {
		e.t.Fatal("no chat in the journal")
	}
	return list[len(list)-1]
}

// An upstream that sends odd bytes (a BOM, CRLF and lone CR line ends,
// comments, an id field, data: without its space, invalid UTF-8) is
// relayed and saved in Dify's own form: the file passes lint, and the log
// and the journal say what was normalised. A usage field that cannot be
// mended (latency as a string) is refused instead: the client still gets
// its answer, the journal and the log say why nothing was saved.
func TestHybridLiveOddBytes(t *testing.T) {
	up := newFakeUpstream(t)
	dir := t.TempDir()
	e, logs := hybridEnv(t, up, dir, nil)
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	cr := func(s string) string { return strings.ReplaceAll(s, "\n", "\r") }
	streamAnswer(up, false,
		"\xef\xbb\xbf"+crlf(upDelta("Hello ")),
		": keep-alive\n\n",
		cr(upDelta("from Seoul")),
		"id: 7\n"+strings.Replace(strings.Replace(upDelta("cafX "), "cafX", "caf\xe9", 1), "data: ", "data:", 1),
		": a comment line\n"+upEnd(upUsage))

	resp, body := rawAsk(e, "Odd bytes from the upstream")
	if resp.Header.Get(mockserver.HeaderUpstream) != "live" {
		t.Fatalf("not answered live: %v", resp.Header)
	}
	var answer string
	for i, f := range bytes.SplitAfter(body, []byte("\n\n")) {
		if len(f) == 0 {
			continue
		}
		if !bytes.HasPrefix(f, []byte("data: {")) || bytes.ContainsAny(f, "\r\ufeff") {
			t.Errorf("client frame %d is not in Dify's form: %q", i, f)
		}
		var m map[string]any
		if err := json.Unmarshal(bytes.TrimSpace(bytes.TrimPrefix(f, []byte("data: "))), &m); err != nil {
			t.Fatalf("client frame %d: %v: %q", i, err, f)
		}
		if m["event"] == "agent_message" {
			answer += m["answer"].(string)
		}
	}
	if answer != "Hello from Seoulcaf\uFFFD " {
		t.Errorf("answer %q", answer)
	}
	mockserver.WaitLiveSaves(e.srv)
	saved := filepath.Join(dir, "odd-bytes-from-the-upstream.yaml")
	if _, err := os.Stat(saved); err != nil {
		t.Fatalf("not saved: %v\n%s", err, logs)
	}
	if rep := lint.Paths([]string{saved}); !rep.OK() {
		t.Fatalf("the saved file fails lint: %v", rep.Problems)
	}
	en := lastChat(e)
	for _, want := range []string{"CR/CRLF line ends became LF", "invalid UTF-8", "comments", "rewritten"} {
		if !strings.Contains(en.Normalised, want) {
			t.Errorf("journal normalised %q lacks %q", en.Normalised, want)
		}
	}
	if !en.Saved || !strings.Contains(logs.String(), "normalised") {
		t.Errorf("journal saved %v; log:\n%s", en.Saved, logs)
	}

	// Usage that cannot be mended: answered, not saved, saying why.
	streamAnswer(up, false, upDelta("Fine."), upEnd(strings.Replace(upUsage, `"latency":0.62`, `"latency":"fast"`, 1)))
	resp, body = rawAsk(e, "How much did that cost?")
	if resp.Header.Get(mockserver.HeaderUpstream) != "live" || !bytes.Contains(body, []byte(`"answer":"Fine."`)) || !bytes.Contains(body, []byte("message_end")) {
		t.Fatalf("the client did not get its answer: %v\n%s", resp.Header, body)
	}
	mockserver.WaitLiveSaves(e.srv)
	if _, err := os.Stat(filepath.Join(dir, "how-much-did-that-cost.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a cassette lint rejects was saved (%v)", err)
	}
	en = lastChat(e)
	if en.Saved || !strings.Contains(en.NotSaved, "would fail dify-mock lint") || !strings.Contains(en.NotSaved, "latency") {
		t.Errorf("journal: saved %v, not_saved %q", en.Saved, en.NotSaved)
	}
	if !strings.Contains(logs.String(), "would fail dify-mock lint") {
		t.Errorf("the log does not say why:\n%s", logs)
	}
	if rep := lint.Paths([]string{dir}); !rep.OK() {
		t.Errorf("the folder fails lint: %v", rep.Problems)
	}
}

// The client's response ends with the stream; the save comes after. A
// save held up by the test hook does not hold the response.
func TestHybridLiveSaveAfterTheResponse(t *testing.T) {
	up := newFakeUpstream(t)
	dir := t.TempDir()
	entered, release := make(chan string, 1), make(chan struct{})
	e, logs := hybridEnvRec(t, up, dir, func(c *record.Config) {
		c.BeforeSave = func(name string) {
			entered <- name
			<-release
		}
	}, func(c *mockserver.Config) { c.Speed = 0 })
	streamAnswer(up, false, upDelta("Quick "), upDelta("answer."), upEnd(upUsage))

	answered := make(chan []byte, 1)
	go func() {
		resp := e.send(http.MethodPost, "/chat-messages", map[string]any{"query": "A slow save", "user": "fe-dev", "inputs": map[string]any{}, "response_mode": "streaming"})
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- b
	}()
	if name := <-entered; name != "a-slow-save" {
		t.Errorf("saving %q", name)
	}
	// The save is held: the response must end anyway.
	select {
	case b := <-answered:
		if !bytes.Contains(b, []byte("message_end")) {
			t.Errorf("the response ended without message_end:\n%s", b)
		}
	case <-time.After(20 * time.Second):
		close(release)
		t.Fatal("the response did not end while its save was held")
	}
	if _, err := os.Stat(filepath.Join(dir, "a-slow-save.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file exists before the save ran (%v)", err)
	}
	close(release)
	mockserver.WaitLiveSaves(e.srv)
	if _, err := os.Stat(filepath.Join(dir, "a-slow-save.yaml")); err != nil {
		t.Fatalf("not saved once released: %v\n%s", err, logs)
	}
	if en := lastChat(e); !en.Saved || en.Cassette != "a-slow-save" || en.Turn == nil || *en.Turn != 0 {
		t.Errorf("journal after the save: saved %v cassette %q turn %v", en.Saved, en.Cassette, en.Turn)
	}
}

// A saved turn is served at once without reading the folder again: a
// file in the folder that does not load (which a reload would trip on)
// changes nothing, and is not loaded.
func TestHybridLiveSaveUpdatesTheIndexWithoutAReload(t *testing.T) {
	up := newFakeUpstream(t)
	dir := t.TempDir()
	e, logs := hybridEnv(t, up, dir, func(c *mockserver.Config) { c.Speed = 0 })
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("dify_mock: [not, a, cassette\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	streamAnswer(up, false, upDelta("Gyeongbokgung at nine."), upEnd(upUsage))
	if resp, _ := rawAsk(e, "When does the palace open?"); resp.Header.Get(mockserver.HeaderUpstream) != "live" {
		t.Fatalf("not answered live: %v", resp.Header)
	}
	mockserver.WaitLiveSaves(e.srv)
	before := up.chats.Load()
	resp, frames := hybridAsk(e, "When does the palace open?", "")
	if h := resp.Header; h.Get(mockserver.HeaderMatch) != "exact" || h.Get(mockserver.HeaderCassette) != "when-does-the-palace-open" || up.chats.Load() != before {
		t.Fatalf("asked again: match %q cassette %q (upstream asked %d more time(s))\n%s", h.Get(mockserver.HeaderMatch), h.Get(mockserver.HeaderCassette), up.chats.Load()-before, logs)
	}
	if _, answer := answerOf(frames); answer != "Gyeongbokgung at nine." {
		t.Errorf("replayed answer %q", answer)
	}
	for _, name := range e.srv.CassetteNames() {
		if name == "broken" {
			t.Error("the folder was read again: broken.yaml is loaded")
		}
	}
	if strings.Contains(logs.String(), "cassettes reloaded") || strings.Contains(logs.String(), "not reloaded") {
		t.Errorf("the folder was reloaded:\n%s", logs)
	}
}

// An upstream that echoes the key, split across two reads: the key is in
// none of what the live turn produces.
func TestHybridLiveKeyEcho(t *testing.T) {
	up := newFakeUpstream(t)
	dir := t.TempDir()
	e, logs := hybridEnv(t, up, dir, nil)
	echo := upDelta("Your key is " + hybridKey + ", keep it safe. ")
	at := strings.Index(echo, hybridKey) + len(hybridKey)/2
	streamAnswer(up, false, upDelta("Sure. "), echo[:at], echo[at:], upEnd(upUsage))

	resp, body := rawAsk(e, "What is my key?")
	if resp.Header.Get(mockserver.HeaderUpstream) != "live" || !bytes.Contains(body, []byte("keep it safe")) {
		t.Fatalf("not answered live: %v\n%s", resp.Header, body)
	}
	mockserver.WaitLiveSaves(e.srv)
	var conv string
	for _, f := range wholeFramesNoError(t, body) {
		conv, _ = f["conversation_id"].(string)
	}
	_, history := e.do(http.MethodGet, "/messages?user=fe-dev&conversation_id="+conv, nil)
	if !bytes.Contains(history, []byte("keep it safe")) {
		t.Fatalf("history: %s", history)
	}
	files := folderFiles(t, dir)
	if _, ok := files[filepath.Join(dir, "what-is-my-key.yaml")]; !ok {
		t.Fatalf("not saved:\n%s", logs)
	}
	lower := strings.ToLower(hybridKey)
	places := map[string][]byte{"stream": body, "history": history, "journal": journalJSON(t, e.ts.URL), "log": []byte(logs.String())}
	for name, data := range files {
		places[name] = data
	}
	for where, data := range places {
		if strings.Contains(strings.ToLower(string(data)), lower) {
			t.Errorf("the %s holds the upstream key", where)
		}
	}
}

// wholeFramesNoError parses a stream that ends cleanly.
func wholeFramesNoError(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	fr := dify.NewFrameReader(bytes.NewReader(body))
	for {
		f, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		var m map[string]any
		if err != nil || json.Unmarshal(f.Data, &m) != nil {
			t.Fatalf("frame %d: %v %q", len(out), err, f.Raw)
		}
		out = append(out, m)
	}
}

// A live follow-up moves its conversation's updated_at to the turn's
// start, as a replayed follow-up does (one way to open a conversation,
// chat_admit.go).
func TestHybridLiveFollowUpMovesUpdatedAt(t *testing.T) {
	up := newFakeUpstream(t)
	var clock atomic.Int64
	clock.Store(1800000000)
	e, _ := hybridEnv(t, up, t.TempDir(), func(c *mockserver.Config) {
		c.Now = func() time.Time { return time.Unix(clock.Load(), 0) }
	})
	streamAnswer(up, false, upDelta("First."), upEnd(upUsage))
	_, body := rawAsk(e, "Start a conversation")
	frames := wholeFramesNoError(t, body)
	conv, _ := frames[0]["conversation_id"].(string)
	conversation := func() dify.Conversation {
		t.Helper()
		_, b := e.do(http.MethodGet, "/conversations?user=fe-dev", nil)
		p := decode[dify.ConversationPage](t, b)
		if len(p.Data) != 1 || p.Data[0].ID != conv {
			t.Fatalf("conversations: %s", b)
		}
		return p.Data[0]
	}
	if c := conversation(); c.UpdatedAt != 1800000000 {
		t.Fatalf("after the first turn: updated_at %d", c.UpdatedAt)
	}
	clock.Store(1800000100)
	resp, follow := hybridAsk(e, "And then?", conv)
	if resp.Header.Get(mockserver.HeaderUpstream) != "live" || len(follow) == 0 || follow[0].str("conversation_id") != conv {
		t.Fatalf("follow-up: %v", resp.Header)
	}
	if c := conversation(); c.UpdatedAt != 1800000100 || c.CreatedAt != 1800000000 {
		t.Errorf("after a live follow-up: created_at %d updated_at %d; want updated_at 1800000100", c.CreatedAt, c.UpdatedAt)
	}
}

// A follow-up whose stream ends before its first turn's save has run is
// saved after it, as the cassette's next turn: saves run in the order the
// streams ended.
func TestHybridLiveFollowUpBeforeTheFirstSave(t *testing.T) {
	up := newFakeUpstream(t)
	dir := t.TempDir()
	release := make(chan struct{})
	var saves atomic.Int32
	e, logs := hybridEnvRec(t, up, dir, func(c *record.Config) {
		c.BeforeSave = func(string) {
			if saves.Add(1) == 1 {
				<-release // the first save waits until the follow-up has ended
			}
		}
	}, func(c *mockserver.Config) { c.Speed = 0 })
	streamAnswer(up, false, upDelta("Day one."), upEnd(upUsage))
	_, body := rawAsk(e, "Plan two days in Busan")
	conv, _ := wholeFramesNoError(t, body)[0]["conversation_id"].(string)
	streamAnswer(up, false, upDelta("Day two."), upEnd(upUsage))
	resp, follow := hybridAsk(e, "And the second day?", conv)
	if resp.Header.Get(mockserver.HeaderUpstream) != "live" || len(follow) == 0 {
		t.Fatalf("follow-up: %v", resp.Header)
	}
	close(release)
	mockserver.WaitLiveSaves(e.srv)
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := set.Get("plan-two-days-in-busan")
	if !ok || len(c.Turns) != 2 || c.Turns[1].Request.Query != "And the second day?" {
		t.Fatalf("cassette %+v; want both turns in order\n%s", c, logs)
	}
	if rep := lint.Paths([]string{dir}); !rep.OK() {
		t.Errorf("lint: %v", rep.Problems)
	}
}
