package author

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Defaults for a tool step without a duration, and for message_file URLs.
const (
	defaultToolDuration = 1200 * time.Millisecond
	defaultFileExt      = "png"
)

// thoughtRow is an agent_thought row; every change re-emits it whole under
// the same id (snapshot semantics, docs/api §2.5).
type thoughtRow struct {
	id          string
	position    int
	thought     string
	observation string
	tool        string
	toolInput   string
	files       []string
	pristine    bool // nothing happened in it yet
	answer      bool // it holds answer text
	dirty       bool // legacy: changed since last emitted
}

// turnBuilder lays out one turn's frames on a timeline.
type turnBuilder struct {
	name      string
	turn      int
	mode      string
	style     style
	pacing    Pacing
	convID    string
	msgID     string
	taskID    string
	createdAt int64

	frames []cassette.RecordedFrame
	cursor time.Duration
	row    *thoughtRow
	// lastWasTool: the latest New Agent step was a tool call.
	lastWasTool bool
	answer      strings.Builder
	facts       usageFacts
	// toolFiles are the turn's message_file steps that carry a local file.
	toolFiles []toolFileOut
}

// toolFileOut is a message_file whose bytes the cassette carries.
type toolFileOut struct {
	url  string
	ext  string
	spec *FileSpec
}

func (b *turnBuilder) legacy() bool { return b.mode == ModeAgentChat }

func (b *turnBuilder) envelope(event string, withTask bool) object {
	o := object{
		{"event", event},
		{"conversation_id", b.convID},
		{"message_id", b.msgID},
		{"created_at", b.createdAt},
	}
	if withTask {
		o = append(o, member{"task_id", b.taskID})
	}
	return o
}

func (b *turnBuilder) emit(o object) {
	raw := "data: " + encode(o, b.style) + "\n\n"
	b.frames = append(b.frames, cassette.RecordedFrame{Offset: b.cursor, Raw: []byte(raw)})
}

func (b *turnBuilder) wait(d time.Duration) { b.cursor += d }

func (b *turnBuilder) toolLabels(tool string) object {
	if tool == "" {
		return object{}
	}
	return object{{tool, object{{"en_US", tool}, {"zh_Hans", tool}}}}
}

func (b *turnBuilder) emitRow() {
	r := b.row
	files := r.files
	if files == nil {
		files = []string{}
	}
	o := append(b.envelope(dify.EventAgentThought, true),
		member{"id", r.id},
		member{"position", r.position},
		member{"thought", r.thought},
		member{"observation", r.observation},
		member{"tool", r.tool},
		member{"tool_labels", b.toolLabels(r.tool)},
		member{"tool_input", r.toolInput},
		member{"message_files", files},
	)
	b.emit(o)
	r.dirty = false
}

// New Agent rows follow Dify's Agent App runner
// (api/core/app/apps/agent_app/app_runner.py _AgentProcessRecorder, "Agent
// v2 process events"): a row is created when its first content arrives,
// never empty ahead of time; thinking, each tool call and each answer-text
// segment get a row of their own at the next position; a tool result fills
// the observation of its call's row; any change re-emits the row. Answer
// rows keep their text in a column the SSE schema does not carry, so they
// look empty on the wire.

// openRow starts a New Agent row at the next position and emits it.
func (b *turnBuilder) openRow(r thoughtRow) {
	pos := 1
	if b.row != nil {
		pos = b.row.position + 1
	}
	r.id = deriveID(b.name, "thought", strconv.Itoa(b.turn), strconv.Itoa(pos))
	r.position = pos
	b.row = &r
	b.emitRow()
}

// newRow starts the next thought position, i.e. the next model request.
func (b *turnBuilder) newRow() {
	pos := 1
	if b.row != nil {
		if b.row.dirty {
			b.wait(b.pacing.EndDelay.D)
			b.emitRow()
		}
		pos = b.row.position + 1
		b.wait(b.pacing.StepGap.D)
	}
	b.row = &thoughtRow{
		id:       deriveID(b.name, "thought", strconv.Itoa(b.turn), strconv.Itoa(pos)),
		position: pos,
		pristine: true,
	}
	b.facts.rounds = pos
	b.emitRow()
}

// streamText emits text as batches at time_to_first_token, then every
// batch_interval; each batch is passed to send.
func (b *turnBuilder) streamText(text string, send func(batch string)) {
	for i, batch := range splitBatches(text, b.pacing.charsPerBatch()) {
		if i == 0 {
			b.wait(b.pacing.TimeToFirstToken.D)
		} else {
			b.wait(b.pacing.BatchInterval.D)
		}
		send(batch)
	}
}

func (b *turnBuilder) sendAnswer(batch string) {
	if !b.facts.hasFirstToken {
		b.facts.firstToken, b.facts.hasFirstToken = b.cursor, true
	}
	b.answer.WriteString(batch)
	b.emit(append(b.envelope(dify.EventAgentMessage, true),
		member{"id", b.msgID},
		member{"answer", batch},
	))
}

func (b *turnBuilder) thinking(text string) {
	b.facts.completionText = append(b.facts.completionText, text)
	if !b.legacy() {
		// A thinking segment: a row created with its first delta and
		// re-emitted as each delta arrives (thinking is not debounced; the
		// batches here stand for the model's deltas).
		b.afterTool()
		b.lastWasTool = false
		for i, batch := range splitBatches(text, b.pacing.charsPerBatch()) {
			if i == 0 {
				b.wait(b.pacing.TimeToFirstToken.D)
				b.openRow(thoughtRow{thought: batch})
				continue
			}
			b.wait(b.pacing.BatchInterval.D)
			b.row.thought += batch
			b.emitRow()
		}
		return
	}
	if !b.row.pristine {
		b.newRow()
	}
	b.row.pristine = false
	if b.legacy() {
		// Legacy agents stream the round's model text as agent_message and
		// then store it as the thought (docs/api §2.6 legacy).
		b.streamText(text, b.sendAnswer)
		b.row.thought = text
		b.row.dirty = true
		return
	}
	// New Agent re-emits the thinking row as its text grows.
	b.streamText(text, func(batch string) {
		b.row.thought += batch
		b.emitRow()
	})
}

// afterTool counts a model request when model output follows a tool
// result (or starts the turn): the agent loop sends the tool results back
// to the model.
func (b *turnBuilder) afterTool() {
	if b.row == nil || b.lastWasTool {
		b.facts.rounds++
	}
}

func (b *turnBuilder) tool(st Step) {
	if !b.legacy() {
		b.newAgentTool(st)
		return
	}
	if b.row.tool != "" || b.row.answer {
		b.newRow()
	}
	b.row.pristine = false
	args, _ := nodeValue(&st.Input)
	if args == nil {
		args = object{}
	}
	if b.legacy() {
		// Legacy tool_input and observation are JSON keyed by tool name
		// (docs/api §2.6, issue #16220), written by json.dumps(ensure_ascii=False).
		b.row.toolInput = encode(object{{st.Tool, args}}, stylePythonUTF8)
	} else {
		b.row.toolInput = encode(args, styleCompact)
	}
	b.row.tool = st.Tool
	b.facts.completionText = append(b.facts.completionText, b.row.toolInput)
	b.wait(b.pacing.StepGap.D)
	b.emitRow()

	b.wait(st.Duration.or(Duration{D: defaultToolDuration}).D)
	if b.legacy() {
		b.row.observation = encode(object{{st.Tool, st.Observation}}, stylePythonUTF8)
	} else {
		b.row.observation = st.Observation
	}
	b.facts.promptText = append(b.facts.promptText, st.Observation)
	b.emitRow()
}

// newAgentTool is a New Agent tool call: its own row, created with the tool
// name and arguments (json.dumps(args, ensure_ascii=False), as
// _json_or_text writes them), re-emitted with the observation when the
// result arrives.
func (b *turnBuilder) newAgentTool(st Step) {
	args, _ := nodeValue(&st.Input)
	if args == nil {
		args = object{}
	}
	// A call straight after another tool's result is a new model request;
	// one after thinking belongs to the thinking's request.
	b.afterTool()
	input := encode(args, stylePythonUTF8)
	b.facts.completionText = append(b.facts.completionText, input)
	b.wait(b.pacing.StepGap.D)
	b.openRow(thoughtRow{tool: st.Tool, toolInput: input})
	b.lastWasTool = true
	b.wait(st.Duration.or(Duration{D: defaultToolDuration}).D)
	b.row.observation = st.Observation
	b.facts.promptText = append(b.facts.promptText, st.Observation)
	b.emitRow()
}

// newAgentAnswer streams answer text: each debounced batch first creates
// (then updates) the segment's answer row, then goes out as agent_message
// (_consume_stream persist_answer_text).
func (b *turnBuilder) newAgentAnswer(text string) {
	b.afterTool()
	b.lastWasTool = false
	b.facts.completionText = append(b.facts.completionText, text)
	open := false
	b.streamText(text, func(batch string) {
		if !open {
			b.openRow(thoughtRow{answer: true})
			open = true
		} else {
			b.emitRow()
		}
		b.sendAnswer(batch)
	})
}

func (b *turnBuilder) answerStep(text string) {
	if !b.legacy() {
		b.newAgentAnswer(text)
		return
	}
	if !b.row.pristine && !b.row.answer {
		b.newRow()
	}
	b.row.pristine = false
	b.row.answer = true
	b.facts.completionText = append(b.facts.completionText, text)
	b.streamText(text, b.sendAnswer)
	if b.legacy() {
		// The final round's thought row carries the round's text.
		b.row.thought += text
		b.row.dirty = true
	}
}

func (b *turnBuilder) messageFile(f *FileSpec, index int) {
	id := deriveID(b.name, "message-file", strconv.Itoa(b.turn), strconv.Itoa(index))
	url := f.URL
	if url == "" {
		ext := fileSpecExt(f)
		// Tool files are served from signed /files/tools/ URLs (docs/api §2.5);
		// the signature here is a placeholder the mock replaces with its
		// own when it replays the turn (docs/mock/annotations.md#signed-urls).
		url = "/files/tools/" + id + "." + ext + "?timestamp=" + strconv.FormatInt(b.createdAt, 10) +
			"&nonce=" + deriveID(b.name, "nonce", id)[:16] + "&sign=placeholder-signature"
		if f.Path != "" {
			b.toolFiles = append(b.toolFiles, toolFileOut{url: url, ext: ext, spec: f})
		}
	}
	b.wait(b.pacing.EndDelay.D)
	b.emit(append(b.envelope(dify.EventMessageFile, true),
		member{"id", id},
		member{"type", f.Type},
		member{"belongs_to", "assistant"},
		member{"url", url},
	))
	if b.legacy() {
		b.row.files = append(b.row.files, id)
		b.row.pristine = false
		b.wait(b.pacing.EndDelay.D)
		b.emitRow()
	}
}

func (b *turnBuilder) finish(t ScenarioTurn) {
	if b.row != nil && b.row.dirty {
		b.wait(b.pacing.EndDelay.D)
		b.emitRow()
	}
	if e := t.Error; e != nil {
		b.wait(e.After.or(b.pacing.StepGap).D)
		msg := strings.ReplaceAll(e.Message, "{agent_run_id}", deriveID(b.name, "agent-run", strconv.Itoa(b.turn)))
		b.emit(append(b.envelope(dify.EventError, false),
			member{"code", e.Code},
			member{"status", e.Status},
			member{"message", msg},
		))
		return
	}
	if !b.legacy() && b.answer.Len() > 0 {
		// New Agent closes with the full answer exactly once (docs/api §2.6).
		b.wait(b.pacing.EndDelay.D)
		b.emit(append(b.envelope(dify.EventMessage, true),
			member{"id", b.msgID},
			member{"answer", b.answer.String()},
			member{"from_variable_selector", nil},
		))
	}
	b.wait(b.pacing.EndDelay.D)
	b.facts.end = b.cursor
	usage := usageObject(t.Usage, b.facts, !b.legacy())
	end := append(b.envelope(dify.EventMessageEnd, true), member{"id", b.msgID})
	if b.legacy() {
		end = append(end, member{"metadata", object{{"retriever_resources", []any{}}, {"usage", usage}}})
	} else {
		// The EasyUI chat pipeline New Agent turns run through dumps
		// TaskStateMetadata whole (api/core/app/entities/task_entities.py;
		// easy_ui_based_generate_task_pipeline.py
		// _message_end_to_stream_response): annotation_reply null,
		// retriever_resources [] and usage; files is dumped as null.
		end = append(end, member{"metadata", object{{"annotation_reply", nil}, {"retriever_resources", []any{}}, {"usage", usage}}}, member{"files", nil})
	}
	b.emit(end)
}

// build lays out the whole turn and inserts keep-alive pings.
func (b *turnBuilder) build(t ScenarioTurn) []cassette.RecordedFrame {
	b.facts.promptText = append(b.facts.promptText, t.Query)
	b.cursor = b.pacing.StartDelay.D
	if b.legacy() {
		// Legacy agents emit the round's empty row first (docs/api §19).
		b.newRow()
	}
	files := 0
	for _, st := range t.Steps {
		switch {
		case st.Thinking != "":
			b.thinking(st.Thinking)
		case st.Tool != "":
			b.tool(st)
		case st.Answer != "":
			b.answerStep(st.Answer)
		case st.MessageFile != nil:
			b.messageFile(st.MessageFile, files)
			files++
		}
	}
	b.finish(t)
	return insertPings(b.frames, b.pacing.PingInterval.D)
}

// PingFrame is Dify's keep-alive frame (docs/api §2.4).
const PingFrame = "event: ping\n\n"

// insertPings adds a ping at every multiple of interval while the stream is
// still running (before its last frame), as Dify's queue listener does
// (docs/api §2.4). A ping due at the same moment as an event goes first.
func insertPings(frames []cassette.RecordedFrame, interval time.Duration) []cassette.RecordedFrame {
	if interval <= 0 || len(frames) == 0 {
		return frames
	}
	last := frames[len(frames)-1].Offset
	out := make([]cassette.RecordedFrame, 0, len(frames)+int(last/interval))
	next := interval
	for _, f := range frames {
		for next <= f.Offset && next < last {
			out = append(out, cassette.RecordedFrame{Offset: next, Raw: []byte(PingFrame)})
			next += interval
		}
		out = append(out, f)
	}
	return out
}

// splitBatches cuts text into batches of about n characters, ending batches
// at word ends where possible, the way debounced token deltas look.
func splitBatches(text string, n int) []string {
	if n < 1 {
		n = 1
	}
	var words []string
	start := 0
	inSpace := false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if inSpace && !space {
			words = append(words, text[start:i])
			start = i
		}
		inSpace = space
	}
	words = append(words, text[start:])
	// Very long words (and unspaced scripts) are cut at n characters.
	var pieces []string
	for _, w := range words {
		if utf8.RuneCountInString(w) <= 3*n {
			pieces = append(pieces, w)
			continue
		}
		for utf8.RuneCountInString(w) > n {
			cut := 0
			for k := 0; k < n; k++ {
				_, size := utf8.DecodeRuneInString(w[cut:])
				cut += size
			}
			pieces = append(pieces, w[:cut])
			w = w[cut:]
		}
		if w != "" {
			pieces = append(pieces, w)
		}
	}
	var batches []string
	var cur strings.Builder
	count := 0
	for _, p := range pieces {
		cur.WriteString(p)
		count += utf8.RuneCountInString(p)
		if count >= n {
			batches = append(batches, cur.String())
			cur.Reset()
			count = 0
		}
	}
	if cur.Len() > 0 {
		batches = append(batches, cur.String())
	}
	return batches
}
