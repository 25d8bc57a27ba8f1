package author_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/author"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/lint"
)

const scenarioDir = "../../../cassettes/scenarios"

// generate renders a scenario text and parses the result back the way the
// mock loads it.
func generate(t *testing.T, scenario string) (*cassette.Cassette, []byte) {
	t.Helper()
	name, out, err := author.GenerateBytes("test.yaml", []byte(scenario), author.Options{Source: "test.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := cassette.Decode("test.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cassette.ParseChat(name, "test.yaml", f)
	if err != nil {
		t.Fatal(err)
	}
	if probs := lint.Bytes("generated "+name, out); len(probs) > 0 {
		t.Fatalf("generated cassette does not lint clean: %v", probs)
	}
	return c, out
}

func generateFile(t *testing.T, name string) (*cassette.Cassette, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(scenarioDir, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return generate(t, string(data))
}

// frameEvent is a decoded frame with its offset and JSON key order.
type frameEvent struct {
	offset time.Duration
	name   string
	keys   []string
	fields map[string]any
	raw    string
}

func events(t *testing.T, turn *cassette.RecordedTurn) []frameEvent {
	t.Helper()
	var out []frameEvent
	for _, fr := range turn.Frames {
		raw := string(fr.Raw)
		if raw == author.PingFrame {
			out = append(out, frameEvent{offset: fr.Offset, name: "ping", raw: raw})
			continue
		}
		if !strings.HasPrefix(raw, "data: ") || !strings.HasSuffix(raw, "\n\n") || strings.Count(raw, "\n") != 2 {
			t.Fatalf("frame %q is not `data: <json>\\n\\n`", raw)
		}
		data := strings.TrimSuffix(strings.TrimPrefix(raw, "data: "), "\n\n")
		ev := frameEvent{offset: fr.Offset, raw: raw, keys: topLevelKeys(t, data)}
		if err := json.Unmarshal([]byte(data), &ev.fields); err != nil {
			t.Fatal(err)
		}
		ev.name, _ = ev.fields["event"].(string)
		out = append(out, ev)
	}
	return out
}

func topLevelKeys(t *testing.T, data string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(data))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func names(evs []frameEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.name)
	}
	return out
}

func collect(t *testing.T, turn *cassette.RecordedTurn) (*dify.ChatReply, error) {
	t.Helper()
	var body bytes.Buffer
	for _, f := range turn.Frames {
		body.Write(f.Raw)
	}
	return dify.Collect(dify.NewChatStream(io.NopCloser(&body)))
}

// docs/api §1.5: event, conversation_id, message_id, created_at, task_id, id, …
func TestKeyOrderFollowsDify(t *testing.T) {
	for _, name := range []string{"tool-use", "legacy-agent-chat", "run-limit"} {
		c, _ := generateFile(t, name)
		for _, ev := range events(t, c.Turns[0]) {
			if ev.name == "ping" {
				continue
			}
			want := []string{"event", "conversation_id", "message_id", "created_at", "task_id", "id"}
			if ev.name == dify.EventError {
				want = []string{"event", "conversation_id", "message_id", "created_at", "code", "status", "message"}
			}
			if strings.Join(ev.keys[:len(want)], ",") != strings.Join(want, ",") {
				t.Errorf("%s %s keys %v, want prefix %v", name, ev.name, ev.keys, want)
			}
			switch ev.name {
			case dify.EventAgentThought:
				if got := strings.Join(ev.keys[6:], ","); got != "position,thought,observation,tool,tool_labels,tool_input,message_files" {
					t.Errorf("agent_thought keys %s", got)
				}
			case dify.EventMessageEnd:
				usage := ev.fields["metadata"].(map[string]any)["usage"].(map[string]any)
				wantUsage := 14
				if name == "legacy-agent-chat" {
					wantUsage = 12
				}
				if len(usage) != wantUsage {
					t.Errorf("%s: usage has %d fields, want %d: %v", name, len(usage), wantUsage, usage)
				}
			}
		}
	}
}

func TestNewAgentToolTurnShape(t *testing.T) {
	c, _ := generateFile(t, "tool-use")
	if len(c.Turns) != 1 || c.Meta.Mode != dify.ModeAgent || c.Meta.Provenance != cassette.ProvenanceSynthesized {
		t.Fatalf("meta %+v, %d turns", c.Meta, len(c.Turns))
	}
	if !strings.Contains(c.Meta.Source, "no live Dify was involved") {
		t.Errorf("source %q does not say it was synthesized", c.Meta.Source)
	}
	evs := events(t, c.Turns[0])
	// Agent App runner (_AgentProcessRecorder): rows are created with their
	// first content, so the turn opens with the thinking row, not an empty
	// one (that is the legacy agent-chat layout).
	first := evs[0]
	if first.name != dify.EventAgentThought || first.fields["position"] != 1.0 || first.fields["thought"] == "" || first.fields["tool"] != "" {
		t.Fatalf("first event is not the position-1 thinking row: %s", first.raw)
	}
	n := len(evs)
	if evs[n-2].name != dify.EventMessage || evs[n-1].name != dify.EventMessageEnd {
		t.Fatalf("does not close with message, message_end: %v", names(evs))
	}
	if v, ok := evs[n-2].fields["from_variable_selector"]; !ok || v != nil {
		t.Errorf("message.from_variable_selector should be null: %s", evs[n-2].raw)
	}
	end := evs[n-1].fields
	if v, ok := end["files"]; !ok || v != nil {
		t.Errorf("message_end.files should be null")
	}
	// TaskStateMetadata is dumped whole: annotation_reply null,
	// retriever_resources [] (task_entities.py).
	meta := end["metadata"].(map[string]any)
	if rr, ok := meta["retriever_resources"].([]any); !ok || len(rr) != 0 {
		t.Errorf("metadata.retriever_resources should be []: %v", meta)
	}
	if ar, ok := meta["annotation_reply"]; !ok || ar != nil {
		t.Errorf("metadata.annotation_reply should be null: %v", meta)
	}

	// Thought rows: one id per position, re-emitted as they change: a
	// thinking row, a row per tool call (input, then observation), another
	// thinking row, the calculator's row, the answer row.
	ids := map[float64]string{}
	emissions := map[float64]int{}
	for _, e := range evs {
		if e.name != dify.EventAgentThought {
			continue
		}
		pos := e.fields["position"].(float64)
		if id, ok := ids[pos]; ok && id != e.fields["id"] {
			t.Errorf("position %v changed id", pos)
		}
		ids[pos] = e.fields["id"].(string)
		emissions[pos]++
	}
	if len(ids) != 5 {
		t.Errorf("want 5 thought positions (thinking, web_search, thinking, calculator, answer), got %v", emissions)
	}
	if emissions[2] != 2 || emissions[4] != 2 {
		t.Errorf("tool rows emitted %d and %d times; want call, then observation", emissions[2], emissions[4])
	}

	turn, err := collect(t, c.Turns[0])
	if err != nil {
		t.Fatal(err)
	}
	if !turn.Completed || !strings.Contains(turn.Answer, "750 EUR") {
		t.Errorf("client view: completed=%v answer=%q", turn.Completed, turn.Answer)
	}
	var tools []string
	for _, th := range turn.Thoughts {
		if th.Tool != nil && *th.Tool != "" {
			tools = append(tools, *th.Tool)
			if th.Observation == nil || *th.Observation == "" || th.ToolInput == nil || !json.Valid([]byte(*th.ToolInput)) {
				t.Errorf("tool %s: input %v observation %v", *th.Tool, th.ToolInput, th.Observation)
			}
			if _, ok := th.ToolLabels[*th.Tool]; !ok {
				t.Errorf("tool %s has no tool_labels entry", *th.Tool)
			}
		}
	}
	if strings.Join(tools, ",") != "web_search,calculator" {
		t.Errorf("tools %v", tools)
	}
	if turn.Usage == nil || turn.Usage.TotalTokens != turn.Usage.PromptTokens+turn.Usage.CompletionTokens || turn.Usage.TimeToFirstToken == nil {
		t.Errorf("usage %+v", turn.Usage)
	}
}

// Answer deltas arrive in batches batch_interval apart (docs/api §2.5: New Agent
// debounces for 0.5 s), the first time_to_first_token after its row.
func TestAnswerBatchPacing(t *testing.T) {
	c, _ := generate(t, `
name: pacing
query: pace me
pacing: {batch_interval: 500ms, time_to_first_token: 800ms, chars_per_batch: 10, start_delay: 100ms}
steps:
  - answer: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
`)
	evs := events(t, c.Turns[0])
	var offs []time.Duration
	var text strings.Builder
	for _, e := range evs {
		if e.name == dify.EventAgentMessage {
			offs = append(offs, e.offset)
			batch := e.fields["answer"].(string)
			text.WriteString(batch)
			if n := len([]rune(batch)); n > 20 {
				t.Errorf("batch %q is %d characters, want about 10", batch, n)
			}
		}
	}
	if len(offs) < 5 {
		t.Fatalf("only %d batches", len(offs))
	}
	const tol = 2 * time.Millisecond
	// The answer row is created with the first batch (start_delay +
	// time_to_first_token).
	if d := offs[0]; d < 900*time.Millisecond-tol || d > 900*time.Millisecond+tol {
		t.Errorf("first batch at %v, want ≈900ms", d)
	}
	for i := 1; i < len(offs); i++ {
		if gap := offs[i] - offs[i-1]; gap < 500*time.Millisecond-tol || gap > 500*time.Millisecond+tol {
			t.Errorf("gap %d is %v, want ≈500ms", i, gap)
		}
	}
	if text.String() != "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen" {
		t.Errorf("batches do not add up to the answer: %q", text.String())
	}
}

func TestDeterministicBytes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(scenarioDir, "tool-use.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, a, err := author.GenerateBytes("x", data, author.Options{Source: "s"})
	if err != nil {
		t.Fatal(err)
	}
	_, b, _ := author.GenerateBytes("x", data, author.Options{Source: "s"})
	if !bytes.Equal(a, b) {
		t.Fatal("two runs differ")
	}
	renamed := bytes.Replace(data, []byte("name: tool-use"), []byte("name: tool-use-2"), 1)
	_, c, _ := author.GenerateBytes("x", renamed, author.Options{Source: "s"})
	idRE := regexp.MustCompile(`"conversation_id":"([0-9a-f-]{36})"`)
	ida, idc := idRE.FindSubmatch(a), idRE.FindSubmatch(c)
	if ida == nil || idc == nil || bytes.Equal(ida[1], idc[1]) {
		t.Errorf("ids should derive from the scenario name: %s vs %s", ida, idc)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).Match(ida[1]) {
		t.Errorf("id %s is not UUIDv4-shaped", ida[1])
	}
}

func TestLegacyShape(t *testing.T) {
	c, _ := generateFile(t, "legacy-agent-chat")
	if c.Meta.Mode != dify.ModeAgentChat {
		t.Fatalf("mode %q", c.Meta.Mode)
	}
	evs := events(t, c.Turns[0])
	for _, e := range evs {
		if e.name == dify.EventMessage {
			t.Errorf("legacy stream has a closing message event")
		}
		if !strings.HasPrefix(e.raw, `data: {"event": "`) || !strings.Contains(e.raw, `", "conversation_id": "`) {
			t.Errorf("not json.dumps style: %.80s", e.raw)
		}
		for _, r := range e.raw {
			if r > 0x7e {
				t.Errorf("raw non-ASCII %q in a json.dumps (ensure_ascii) frame", r)
				break
			}
		}
	}
	if !strings.Contains(string(c.Turns[0].Frames[len(c.Turns[0].Frames)-1].Raw), `"metadata": {"retriever_resources": [], "usage": {`) {
		t.Errorf("legacy message_end lacks retriever_resources []")
	}
	turn, err := collect(t, c.Turns[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(turn.Answer, "14 °C") {
		t.Errorf("escaped answer did not decode: %q", turn.Answer)
	}
	if len(turn.Thoughts) != 2 {
		t.Fatalf("want 2 rounds, got %d", len(turn.Thoughts))
	}
	th := turn.Thoughts[0]
	var input map[string]map[string]any
	if err := json.Unmarshal([]byte(*th.ToolInput), &input); err != nil || input["current_weather"]["city"] != "Paris" {
		t.Errorf("legacy tool_input should be keyed by tool name: %s", *th.ToolInput)
	}
	if !strings.Contains(*th.ToolInput, `{"current_weather": {"city": "Paris"`) {
		t.Errorf("tool_input not in json.dumps style: %s", *th.ToolInput)
	}
	if last := turn.Thoughts[1]; last.Thought == nil || !strings.Contains(*last.Thought, "umbrella") {
		t.Errorf("final round's thought should carry the answer text: %v", last.Thought)
	}
}

func TestKoreanIsRawUTF8InNewAgent(t *testing.T) {
	c, raw := generateFile(t, "korean-answer")
	if !bytes.Contains(raw, []byte("서울")) || bytes.Contains(raw, []byte(`\uc11c`)) {
		t.Errorf("Korean should be raw UTF-8 in the cassette")
	}
	turn, err := collect(t, c.Turns[0])
	if err != nil || !strings.Contains(turn.Answer, "경복궁") {
		t.Errorf("answer %q, %v", turn.Answer, err)
	}
}

// longTurn is the first turn of the built-in scenario name, which must end
// with message_end after at least atLeast.
func longTurn(t *testing.T, name string, atLeast time.Duration) []frameEvent {
	t.Helper()
	c, _ := generateFile(t, name)
	evs := events(t, c.Turns[0])
	if last := evs[len(evs)-1]; last.name != dify.EventMessageEnd || last.offset < atLeast {
		t.Fatalf("%s ends with %s at %v; want message_end after %v", name, last.name, last.offset, atLeast)
	}
	return evs
}

func TestPingsEveryTenSeconds(t *testing.T) {
	evs := longTurn(t, "long-with-pings", 25*time.Second)
	last := evs[len(evs)-1]
	var pings []time.Duration
	for _, e := range evs {
		if e.name == "ping" {
			pings = append(pings, e.offset)
		}
	}
	if want := int(last.offset / (10 * time.Second)); len(pings) != want {
		t.Fatalf("%d pings, want %d (one per 10 s of runtime): %v", len(pings), want, pings)
	}
	for i, p := range pings {
		if want := time.Duration(i+1) * 10 * time.Second; p < want-50*time.Millisecond || p > want+50*time.Millisecond {
			t.Errorf("ping %d at %v, want ≈%v", i, p, want)
		}
	}
	// No ping is needed in a short turn.
	short, _ := generateFile(t, "plain-answer")
	for _, e := range events(t, short.Turns[0]) {
		if e.name == "ping" {
			t.Errorf("ping in a %v turn", e.offset)
		}
	}
}

// TestDeepResearchOutlastsAMinuteWithoutFallingQuiet: deep-research is the
// turn for checking a proxy's or serverless function's 60 s timeouts
// (cassettes/README.md) and the 50,000-stream bench row's turn: it must run
// well past a minute to message_end, and its pings must keep every gap
// between frames within 10 s, so an idle timeout never fires where Dify's
// would not.
func TestDeepResearchOutlastsAMinuteWithoutFallingQuiet(t *testing.T) {
	evs := longTurn(t, "deep-research", 100*time.Second)
	var prev time.Duration
	tools := 0
	for _, e := range evs {
		if gap := e.offset - prev; gap > 10*time.Second {
			t.Errorf("%v without a frame before %s at %v", gap, e.name, e.offset)
		}
		prev = e.offset
		if tool, _ := e.fields["tool"].(string); tool != "" && e.fields["observation"] == "" {
			tools++
		}
	}
	if tools != 4 {
		t.Errorf("%d tool calls, want the scenario's 4", tools)
	}
}

func TestRunLimitEndsWithError(t *testing.T) {
	c, _ := generateFile(t, "run-limit")
	evs := events(t, c.Turns[0])
	last := evs[len(evs)-1]
	if last.name != dify.EventError {
		t.Fatalf("last event %s", last.name)
	}
	for _, e := range evs {
		if e.name == dify.EventMessageEnd || e.name == dify.EventMessage {
			t.Errorf("%s in a run that failed", e.name)
		}
	}
	if _, ok := last.fields["task_id"]; ok {
		t.Errorf("error events carry no task_id (docs/api §2.5)")
	}
	msg, _ := last.fields["message"].(string)
	if last.fields["code"] != "agent_run_limit_exceeded" || last.fields["status"] != 400.0 ||
		!regexp.MustCompile(`\(agent_run_id=[0-9a-f-]{36}\)$`).MatchString(msg) {
		t.Errorf("error event %s", last.raw)
	}
	_, err := collect(t, c.Turns[0])
	var apiErr *dify.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "agent_run_limit_exceeded" {
		t.Errorf("client sees %v", err)
	}
}

func TestTwoTurnsShareTheConversation(t *testing.T) {
	c, _ := generateFile(t, "two-turn")
	if len(c.Turns) != 2 {
		t.Fatalf("%d turns", len(c.Turns))
	}
	first, err := collect(t, c.Turns[0])
	if err != nil {
		t.Fatal(err)
	}
	second, err := collect(t, c.Turns[1])
	if err != nil {
		t.Fatal(err)
	}
	if c.Turns[0].Request.ConversationID != "" {
		t.Errorf("first turn request has conversation_id %q", c.Turns[0].Request.ConversationID)
	}
	if c.Turns[1].Request.ConversationID != first.ConversationID || second.ConversationID != first.ConversationID {
		t.Errorf("follow-up: request %q, stream %q, first %q", c.Turns[1].Request.ConversationID, second.ConversationID, first.ConversationID)
	}
	if second.MessageID == first.MessageID || second.TaskID == first.TaskID || second.CreatedAt <= first.CreatedAt {
		t.Errorf("turns should have their own message, task and a later created_at")
	}
}

func TestFileReferenceIsAPlaceholderUploadID(t *testing.T) {
	c, _ := generateFile(t, "file-read")
	files := c.Turns[0].Request.Files
	if len(files) != 1 || files[0].TransferMethod != dify.TransferLocalFile || files[0].Type != dify.FileTypeDocument {
		t.Fatalf("files %+v", files)
	}
	id := files[0].UploadFileID
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4`).MatchString(id) {
		t.Errorf("upload_file_id %q is not a UUID", id)
	}
	for _, f := range c.Turns[0].Frames {
		if bytes.Contains(f.Raw, []byte(id)) {
			t.Errorf("the stream mentions the placeholder upload id; the mock would have to rewrite it")
		}
	}
}

func TestScenarioOptions(t *testing.T) {
	c, _ := generate(t, `
name: options
fault: "stall-after:3;for=10s"
suggested_questions: [a, b]
transcript: spoken words
mode: agent
user: alice
inputs: {budget: low}
model_requests: 7
usage: {prompt_tokens: 1000, completion_tokens: 200, prompt_unit_price: "0.5", completion_unit_price: "1.5", price_unit: "0.001", currency: EUR}
query: q
steps:
  - tool: draw
    input: {what: cat}
    observation: done
  - message_file: {type: image, extension: jpg}
  - answer: here is a cat
`)
	if c.Meta.Fault != "stall-after:3;for=10s" || c.Meta.Transcript != "spoken words" || len(c.Meta.SuggestedQuestions) != 2 {
		t.Errorf("meta %+v", c.Meta)
	}
	tr := c.Turns[0]
	if tr.ModelRequests != 7 || tr.Request.User != "alice" || tr.Request.Inputs["budget"] != "low" {
		t.Errorf("turn %+v request %+v", tr.ModelRequests, tr.Request)
	}
	turn, err := collect(t, tr)
	if err != nil {
		t.Fatal(err)
	}
	u := turn.Usage
	// 1000 × 0.5 × 0.001 = 0.5; 200 × 1.5 × 0.001 = 0.3 (docs/api §2.5: prices are strings).
	if u.PromptPrice != "0.5000000" || u.CompletionPrice != "0.3000000" || u.TotalPrice != "0.8000000" || u.TotalTokens != 1200 || u.Currency != "EUR" {
		t.Errorf("usage %+v", u)
	}
	if len(turn.Files) != 1 || turn.Files[0].Type != "image" || !strings.HasPrefix(turn.Files[0].URL, "/files/tools/") || !strings.Contains(turn.Files[0].URL, ".jpg?") {
		t.Errorf("files %+v", turn.Files)
	}
	// New Agent rows never list files (_AgentProcessRecorder writes
	// message_files ""), so the file stands on its own message_file event.
	for _, th := range turn.Thoughts {
		if len(th.MessageFiles) != 0 {
			t.Errorf("a New Agent thought row lists files: %+v", th.MessageFiles)
		}
	}
}

func TestScenarioErrors(t *testing.T) {
	cases := map[string]struct{ scenario, want string }{
		"unknown key":       {"name: x\nquery: q\nsteps: [{answer: a}]\nanswr: typo\n", "field answr not found"},
		"no name":           {"query: q\nsteps: [{answer: a}]\n", "name is required"},
		"bad name":          {"name: ../x\nquery: q\nsteps: [{answer: a}]\n", "invalid cassette name"},
		"no query":          {"name: x\nsteps: [{answer: a}]\n", "query is required"},
		"no answer":         {"name: x\nquery: q\nsteps: [{thinking: t}]\n", "needs an answer step"},
		"two kinds":         {"name: x\nquery: q\nsteps: [{answer: a, thinking: t}]\n", "exactly one of"},
		"turns and query":   {"name: x\nquery: q\nturns: [{query: r, steps: [{answer: a}]}]\n", "inside each turn"},
		"bad mode":          {"name: x\nmode: chat\nquery: q\nsteps: [{answer: a}]\n", "mode must be"},
		"bad duration":      {"name: x\nquery: q\nsteps: [{tool: t, duration: 5}]\n", "not a duration"},
		"bad input":         {"name: x\nquery: q\nsteps: [{tool: t, input: [1]}, {answer: a}]\n", "input must be a mapping"},
		"bad file":          {"name: x\nquery: q\nfiles: [{type: image, transfer_method: remote_url}]\nsteps: [{answer: a}]\n", "needs url"},
		"bad price":         {"name: x\nquery: q\nusage: {price_unit: cheap}\nsteps: [{answer: a}]\n", "not a decimal"},
		"error without msg": {"name: x\nquery: q\nerror: {code: c}\n", "error needs code and message"},
		"empty":             {"", "empty scenario"},
	}
	for name, c := range cases {
		_, _, err := author.GenerateBytes("s.yaml", []byte(c.scenario), author.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "s.yaml: ") {
			t.Errorf("%s: got %v, want an error naming s.yaml and containing %q", name, err, c.want)
		}
	}
}

// The checked-in built-in cassettes are exactly what their scenarios
// generate: run `go generate ./cassettes` after changing a scenario.
func TestBuiltinCassettesAreUpToDate(t *testing.T) {
	scenarios, err := filepath.Glob(filepath.Join(scenarioDir, "*.yaml"))
	if err != nil || len(scenarios) < 9 {
		t.Fatalf("scenarios: %v %v", scenarios, err)
	}
	generated := map[string]bool{}
	for _, path := range scenarios {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		source := "cassettes/scenarios/" + filepath.Base(path)
		name, want, err := author.GenerateBytes(path, data, author.Options{Source: source})
		if err != nil {
			t.Fatal(err)
		}
		generated[name+".yaml"] = true
		got, err := os.ReadFile(filepath.Join("../../../cassettes", name+".yaml"))
		if err != nil {
			t.Errorf("%s: no generated cassette: %v (run `go generate ./cassettes`)", source, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("cassettes/%s.yaml is stale or hand-edited: run `go generate ./cassettes`", name)
		}
	}
	all, _ := filepath.Glob("../../../cassettes/*.yaml")
	for _, p := range all {
		if !generated[filepath.Base(p)] {
			t.Errorf("cassettes/%s has no scenario in cassettes/scenarios/", filepath.Base(p))
		}
	}
	set, err := cassette.LoadDir("../../../cassettes")
	if err != nil {
		t.Fatal(err)
	}
	if set.Default != "plain-answer" || set.App == nil || set.App.Info.Mode != dify.ModeAgent {
		t.Errorf("default %q, app %+v", set.Default, set.App)
	}
}

// docs/mock/cassette-format.md promises go-vcr reads the files unchanged.
func TestBuiltinCassettesLoadWithGoVCR(t *testing.T) {
	paths, _ := filepath.Glob("../../../cassettes/*.yaml")
	for _, p := range paths {
		c, err := vcr.Load(strings.TrimSuffix(p, ".yaml"))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(c.Interactions) == 0 || c.Interactions[0].Response.Body == "" {
			t.Errorf("%s: go-vcr sees no interactions", p)
		}
	}
}

func TestBuiltinAppDescription(t *testing.T) {
	set, err := cassette.LoadDir("../../../cassettes")
	if err != nil {
		t.Fatal(err)
	}
	p := set.App.Parameters
	if !p.SuggestedQuestionsAfterAnswer.Enabled || !p.SpeechToText.Enabled || !p.TextToSpeech.Enabled ||
		p.FileUpload.Enabled == nil || !*p.FileUpload.Enabled || strings.Join(p.FileUpload.AllowedFileTypes, ",") != "image,document" {
		t.Errorf("parameters %+v", p)
	}
	if len(p.UserInputForm) != 2 {
		t.Errorf("user_input_form %+v", p.UserInputForm)
	}
	for _, f := range p.UserInputForm {
		if f.Required {
			t.Errorf("input %s is required; the built-in inputs are optional", f.Variable)
		}
	}
	if string(set.App.Responses["/meta"].Body) != `{"tool_icons":{}}` {
		t.Errorf("/meta %s", set.App.Responses["/meta"].Body)
	}
	var site dify.AppSite
	if err := json.Unmarshal(set.App.Responses["/site"].Body, &site); err != nil || site.Title == "" || site.Icon == nil {
		t.Errorf("/site %s: %v", set.App.Responses["/site"].Body, err)
	}
	var root dify.ServerInfo
	if err := json.Unmarshal(set.App.Responses["/"].Body, &root); err != nil || root.Welcome != "Dify OpenAPI" || root.ServerVersion == "" {
		t.Errorf("GET / %s", set.App.Responses["/"].Body)
	}
	// Queries are distinct, so matching by query reaches every cassette.
	seen := map[string]string{}
	for _, n := range set.Names {
		c, _ := set.Get(n)
		for _, tr := range c.Turns {
			q := strings.ToLower(strings.Join(strings.Fields(tr.Request.Query), " "))
			if other, ok := seen[q]; ok {
				t.Errorf("query %q in %s and %s", q, n, other)
			}
			seen[q] = n
		}
	}
}

func TestTurnLongerThanTheFormatAllows(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: long\nquery: q\nsteps:\n")
	for i := 0; i < 25; i++ {
		b.WriteString("  - tool: wait\n    duration: 1h\n")
	}
	b.WriteString("  - answer: done\n")
	_, _, err := author.GenerateBytes("s.yaml", []byte(b.String()), author.Options{})
	if err == nil || !strings.Contains(err.Error(), "at most 24h0m0s") {
		t.Errorf("got %v", err)
	}
}
