// Package replay turns recorded chat turns into streams: it compiles each
// turn once (where every id and created_at sits inside every frame, what the
// turn's final message looks like) so that a replay only substitutes fresh
// values and writes pre-serialised bytes at start + offset/speed.
package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/jsonobj"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Slot kinds: what a recorded value is replaced with on every replay.
const (
	slotConversation = iota // the conversation id (kept for follow-up turns)
	slotMessage             // the message id
	slotTask                // the task id
	slotUpload              // an upload_file_id the recorded request sent (index in Slot.Index)
	slotFresh               // any other id: a fresh UUID per replay
	slotCreatedAt           // a created_at value, shifted by the replay's clock
	slotFileURL             // a signed /files/ URL, re-signed per replay (fileURL.go)
)

// Slot is one recorded value that is rewritten per replay.
type Slot struct {
	Kind     int
	Recorded string
	Index    int      // request file index for slotUpload
	Unix     int64    // recorded seconds for slotCreatedAt
	URL      *fileURL // the parsed URL for slotFileURL
	// Offset is when the first frame holding a slotFileURL is sent (its
	// recorded offset), which the URL's signing time follows.
	Offset time.Duration
}

// segment is a literal run of bytes or a reference to a slot.
type segment struct {
	lit  []byte
	slot int // -1 for a literal
}

// CompiledFrame is a recorded frame ready to replay: its offset, its bytes
// split around the values rebound per replay (slots), and what it means for
// the accumulated message.
type CompiledFrame struct {
	Offset time.Duration
	segs   []segment
	raw    []byte // the frame as recorded (used when segs is a single literal)
	effect *effect
	// Event is the frame's event name ("" when it is not a JSON data frame;
	// "ping" for keep-alives).
	Event string
}

// CompiledTurn is a recorded turn (cassette.RecordedTurn) ready to replay:
// its frames compiled, its ids and timestamps located for rebinding.
type CompiledTurn struct {
	Cassette string
	Index    int
	Mode     string // the cassette's app mode ("agent" when unset)
	Query    string
	Status   int // recorded HTTP status; non-200 turns are pre-stream errors
	Header   http.Header
	Body     []byte // the recorded body of a non-200 turn
	Frames   []CompiledFrame
	Slots    []Slot
	slotByID map[string]int

	// terminal is the index of the frame that ends the turn (message_end or
	// error), -1 when the recording has neither.
	terminal int
	// closing is the index of New Agent's closing `message` frame, -1 if none.
	closing int
	// messageEnd is the index of the message_end frame, -1 if none.
	messageEnd int
	// modelRequests lists, for the k-th model request (k from 0), the frame
	// at which it starts; ModelRequests overrides the count when non-zero.
	modelRequestFrames []int
	ModelRequests      int
	maxFrame           int
	// final is the fold up to the terminal frame, where nearly every replay
	// settles (Bound.Fold); nil without one.
	final *folded
	// toolFiles are the cassette's tool files by recorded id (shared by
	// every turn of the cassette).
	toolFiles map[string]*cassette.ToolFile
	// fileURLs: some frame holds a signed /files/ URL (slotFileURL).
	fileURLs bool
}

// Script is a compiled cassette.
type Script struct {
	Name  string
	Meta  cassette.Meta
	Turns []*CompiledTurn
}

// effect is what a data frame contributes to the accumulated message (docs/api §2.5).
type effect struct {
	event    string
	answer   *string // agent_message delta, message full answer, message_replace answer
	thought  *thought
	file     *dify.MessageFile
	usage    *dify.Usage
	retr     []dify.RetrieverResource
	errCode  string
	errMsg   string
	errState int
}

type thought struct {
	id          string
	position    int
	thought     string
	observation string
	tool        string
	toolInput   string
	toolLabels  map[string]any
	files       []string
}

// wireEvent is the union of the chat event fields the compiler reads.
type wireEvent struct {
	Event          string           `json:"event"`
	ConversationID string           `json:"conversation_id"`
	MessageID      string           `json:"message_id"`
	TaskID         string           `json:"task_id"`
	ID             string           `json:"id"`
	CreatedAt      int64            `json:"created_at"`
	Answer         *string          `json:"answer"`
	Position       int              `json:"position"`
	Thought        *string          `json:"thought"`
	Observation    *string          `json:"observation"`
	Tool           *string          `json:"tool"`
	ToolInput      *string          `json:"tool_input"`
	ToolLabels     map[string]any   `json:"tool_labels"`
	MessageFiles   []string         `json:"message_files"`
	Type           string           `json:"type"`
	BelongsTo      string           `json:"belongs_to"`
	URL            string           `json:"url"`
	Metadata       *wireMetadata    `json:"metadata"`
	Files          []map[string]any `json:"files"`
	Code           string           `json:"code"`
	Status         int              `json:"status"`
	Message        string           `json:"message"`
}

// wireEventFields are wireEvent's json names, in the order of its fields
// (wireEvent.fields).
var wireEventFields = jsonobj.NewFields("event", "conversation_id", "message_id", "task_id", "id", "created_at",
	"answer", "position", "thought", "observation", "tool", "tool_input", "tool_labels", "message_files", "type",
	"belongs_to", "url", "metadata", "files", "code", "status", "message")

// fields points at ev's fields, as wireEventFields names them.
func (ev *wireEvent) fields() []any {
	return []any{&ev.Event, &ev.ConversationID, &ev.MessageID, &ev.TaskID, &ev.ID, &ev.CreatedAt,
		&ev.Answer, &ev.Position, &ev.Thought, &ev.Observation, &ev.Tool, &ev.ToolInput, &ev.ToolLabels, &ev.MessageFiles, &ev.Type,
		&ev.BelongsTo, &ev.URL, &ev.Metadata, &ev.Files, &ev.Code, &ev.Status, &ev.Message}
}

type wireMetadata struct {
	Usage              *dify.Usage              `json:"usage"`
	RetrieverResources []dify.RetrieverResource `json:"retriever_resources"`
}

var runIDRE = regexp.MustCompile(`agent_run_id=([A-Za-z0-9-]{8,})`)

// createdAtValues yields the bounds of the number of every
// "created_at": N in raw, as the expression `"created_at"\s*:\s*(-?[0-9]+)`
// finds them (FuzzCreatedAtValues): by hand, since every frame compiled
// live goes through it and the expression was a share of its cost.
func createdAtValues(raw []byte) iter.Seq2[int, int] {
	const key = `"created_at"`
	return func(yield func(int, int) bool) {
		for from := 0; ; {
			k := bytes.Index(raw[from:], []byte(key))
			if k < 0 {
				return
			}
			at := from + k
			i := skipRESpace(raw, at+len(key))
			if i < len(raw) && raw[i] == ':' {
				i = skipRESpace(raw, i+1)
				start := i
				if i < len(raw) && raw[i] == '-' {
					i++
				}
				digits := i
				for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
					i++
				}
				if i > digits {
					if !yield(start, i) {
						return
					}
					from = i
					continue
				}
			}
			from = at + 1
		}
	}
}

// skipRESpace skips the expression syntax's \s ([\t\n\f\r ]) from i.
func skipRESpace(raw []byte, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case ' ', '\t', '\n', '\f', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// minIDLen keeps short strings (which could occur anywhere in a frame by
// accident) from being treated as ids.
const minIDLen = 8

// Compile prepares every turn of c.
func Compile(c *cassette.Cassette) (*Script, error) {
	s := &Script{Name: c.Name, Meta: c.Meta}
	for i, t := range c.Turns {
		ct, err := compileTurn(c, i, t)
		if err != nil {
			return nil, fmt.Errorf("%s: interaction %d: %w", c.Path, t.Interaction, err)
		}
		s.Turns = append(s.Turns, ct)
	}
	return s, nil
}

func compileTurn(c *cassette.Cassette, index int, t *cassette.RecordedTurn) (*CompiledTurn, error) {
	tc := newTurnCompiler(c.Meta.Mode, t.Request.Query)
	ct := tc.ct
	ct.Cassette, ct.Index, ct.Status, ct.Header = c.Name, index, t.Status, t.Header
	ct.ModelRequests, ct.toolFiles = t.ModelRequests, c.ToolFiles
	if t.Status != 200 {
		if len(t.Frames) > 0 {
			ct.Body = t.Frames[0].Raw
		}
		return ct, nil
	}
	for i, f := range t.Request.Files {
		if len(f.UploadFileID) >= minIDLen {
			ct.addSlot(Slot{Kind: slotUpload, Recorded: f.UploadFileID, Index: i})
		}
	}
	// Two passes: a frame's bytes are split around every id of the turn,
	// and an id may first appear in a later frame.
	events := make([]*wireEvent, len(t.Frames))
	for i, f := range t.Frames {
		events[i] = tc.scan(f)
	}
	for i, f := range t.Frames {
		tc.frame(f, events[i], true)
	}
	tc.done()
	return ct, nil
}

// turnCompiler builds a CompiledTurn frame by frame: scan finds a frame's
// ids and URLs, frame adds it with its effect on the message, done makes
// the final fold. Compile runs scan over the whole turn before frame;
// LiveTurn runs both as each frame arrives.
type turnCompiler struct {
	ct          *CompiledTurn
	positions   map[int]bool
	lastRowTool bool
}

func newTurnCompiler(mode, query string) *turnCompiler {
	if mode == "" {
		mode = dify.ModeAgent
	}
	return &turnCompiler{
		ct: &CompiledTurn{
			Mode: mode, Query: query, Status: http.StatusOK,
			slotByID: map[string]int{}, terminal: -1, closing: -1, messageEnd: -1,
		},
		positions: map[int]bool{},
	}
}

// scan parses f and registers its ids and signed file URLs.
func (tc *turnCompiler) scan(f cassette.RecordedFrame) *wireEvent {
	ev := parseDataFrame(f.Raw)
	tc.register(f, ev)
	return ev
}

// register registers the ids and signed file URLs of f, parsed as ev.
func (tc *turnCompiler) register(f cassette.RecordedFrame, ev *wireEvent) {
	if ev != nil {
		tc.ct.collectIDs(ev, f.Raw)
		tc.ct.collectFileURLs(f.Raw, f.Offset)
	}
}

// frame appends f (scanned as ev). Without segments the frame keeps no
// split bytes: it can be folded but not rendered.
func (tc *turnCompiler) frame(f cassette.RecordedFrame, ev *wireEvent, segments bool) {
	ct := tc.ct
	i := len(ct.Frames)
	fr := CompiledFrame{Offset: f.Offset, raw: f.Raw}
	if ev == nil {
		if isPing(f.Raw) {
			fr.Event = dify.EventPing
		}
		if segments {
			fr.segs = []segment{{lit: f.Raw, slot: -1}}
		}
	} else {
		fr.Event = ev.Event
		if segments {
			fr.segs = ct.split(f.Raw)
		}
		fr.effect = toEffect(ev)
		switch ev.Event {
		case dify.EventMessageEnd:
			ct.terminal, ct.messageEnd = i, i
		case dify.EventError:
			ct.terminal = i
		case dify.EventMessage:
			ct.closing = i
		case dify.EventAgentThought:
			// A model request starts with the turn's first row and
			// with the first new row after a row that called a tool
			// (the agent sends the tool's result back to the model).
			// Legacy turns use one row per round, so every new
			// position after a tool round counts; New Agent turns
			// give thinking, each tool call and each answer segment
			// rows of their own, and a thinking row followed by its
			// tool call's row is one request.
			if !tc.positions[ev.Position] {
				tc.positions[ev.Position] = true
				if len(ct.modelRequestFrames) == 0 || tc.lastRowTool {
					ct.modelRequestFrames = append(ct.modelRequestFrames, i)
				}
			}
			tc.lastRowTool = deref(ev.Tool) != ""
		}
	}
	if n := len(f.Raw) + 64*(len(fr.segs)-1); n > ct.maxFrame {
		ct.maxFrame = n
	}
	ct.Frames = append(ct.Frames, fr)
}

// done makes the fold up to the turn's terminal frame, where nearly every
// replay settles.
func (tc *turnCompiler) done() {
	if ct := tc.ct; ct.terminal >= 0 {
		ct.final = ct.fold(ct.terminal + 1)
	}
}

// LiveTurn compiles a turn while a live source streams it (hybrid mode):
// each frame is parsed when it arrives (Add), so storing the turn at its
// end costs a fold, not a compile. When many live streams end together,
// that is the difference between a frame on time and a queue behind every
// other stream's compile. Its frames fold but do not render: the client
// was sent the source's bytes.
type LiveTurn struct {
	tc *turnCompiler
}

// NewLiveTurn starts an empty live turn of an app of mode (agent when "")
// answering query.
func NewLiveTurn(mode, query string) *LiveTurn {
	return &LiveTurn{tc: newTurnCompiler(mode, query)}
}

// Add compiles the next frame. The turn keeps f.Raw without copying it.
func (l *LiveTurn) Add(f cassette.RecordedFrame) {
	l.AddRead(ReadLive(f.Raw), f.Offset)
}

// AddRead is Add for a frame already read (ReadLive), sent at offset.
func (l *LiveTurn) AddRead(lf LiveFrame, offset time.Duration) {
	f, ev := cassette.RecordedFrame{Offset: offset, Raw: lf.Raw}, lf.event()
	l.tc.register(f, ev)
	l.tc.frame(f, ev, false)
}

// LiveFrame is one frame of a live turn, decoded once: the caller reads
// its event and ids and adds it to the turn (LiveTurn.AddRead). Hybrid
// mode decoded each relayed frame three times (its event, the ids to
// rewrite, the compile), a tenth of the mock's CPU per live frame.
type LiveFrame struct {
	Raw []byte
	// data is the frame's JSON, nil when it has none (a ping); it is an
	// event for the turn when it names one (event).
	data *wireEvent
}

// ReadLive decodes raw, which the LiveFrame keeps without copying.
func ReadLive(raw []byte) LiveFrame {
	return LiveFrame{Raw: raw, data: decodeData(raw)}
}

// event is the frame as parseDataFrame reads it.
func (f *LiveFrame) event() *wireEvent {
	if f.data == nil || f.data.Event == "" {
		return nil
	}
	return f.data
}

// Event is the frame's event name, "" for a frame that is not a JSON
// event.
func (f *LiveFrame) Event() string {
	if f.data == nil {
		return ""
	}
	return f.data.Event
}

// Envelope is the conversation, message and task ids the frame's JSON
// carries, with or without an event name.
func (f *LiveFrame) Envelope() (conv, msg, task string) {
	if f.data == nil {
		return "", "", ""
	}
	return f.data.ConversationID, f.data.MessageID, f.data.TaskID
}

// Len is the number of frames added.
func (l *LiveTurn) Len() int { return len(l.tc.ct.Frames) }

// Bind binds the frames added so far (CompiledTurn.Bind); its Fold(n)
// folds the first n. Hybrid mode binds once, at the frame that ends the
// stream.
func (l *LiveTurn) Bind(b Binding) *Bound {
	l.tc.done()
	return l.tc.ct.Bind(b)
}

func (ct *CompiledTurn) addSlot(s Slot) {
	if _, ok := ct.slotByID[s.Recorded]; ok {
		return
	}
	ct.slotByID[s.Recorded] = len(ct.Slots)
	ct.Slots = append(ct.Slots, s)
}

func (ct *CompiledTurn) addID(kind int, id string) {
	if len(id) < minIDLen {
		return
	}
	ct.addSlot(Slot{Kind: kind, Recorded: id})
}

// collectIDs registers the ids an event carries: the envelope ids, the
// event's own id (thought, file), agent_thought.message_files, message_end
// files and agent_run_id inside error messages. Knowledge references
// (dataset/document/segment ids) are left alone: they are not per turn.
func (ct *CompiledTurn) collectIDs(ev *wireEvent, raw []byte) {
	ct.addID(slotConversation, ev.ConversationID)
	ct.addID(slotMessage, ev.MessageID)
	ct.addID(slotTask, ev.TaskID)
	ct.addID(slotFresh, ev.ID)
	for _, id := range ev.MessageFiles {
		ct.addID(slotFresh, id)
	}
	for _, f := range ev.Files {
		for _, k := range []string{"id", "upload_file_id", "related_id"} {
			if v, ok := f[k].(string); ok {
				ct.addID(slotFresh, v)
			}
		}
	}
	if bytes.Contains(raw, []byte("agent_run_id=")) {
		for _, m := range runIDRE.FindAllSubmatch(raw, -1) {
			ct.addID(slotFresh, string(m[1]))
		}
	}
	for start, end := range createdAtValues(raw) {
		v := string(raw[start:end])
		if _, ok := ct.slotByID["\x00created_at:"+v]; ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		ct.slotByID["\x00created_at:"+v] = len(ct.Slots)
		ct.Slots = append(ct.Slots, Slot{Kind: slotCreatedAt, Recorded: v, Unix: n})
	}
}

type hit struct{ start, end, slot int }

// split cuts raw around every occurrence of a slot value.
func (ct *CompiledTurn) split(raw []byte) []segment {
	var hits []hit
	for i, s := range ct.Slots {
		if s.Kind == slotCreatedAt {
			continue
		}
		needle := []byte(s.Recorded)
		for from := 0; ; {
			j := bytes.Index(raw[from:], needle)
			if j < 0 {
				break
			}
			hits = append(hits, hit{from + j, from + j + len(needle), i})
			from += j + len(needle)
		}
	}
	for start, end := range createdAtValues(raw) {
		if i, ok := ct.slotByID["\x00created_at:"+string(raw[start:end])]; ok {
			hits = append(hits, hit{start, end, i})
		}
	}
	if len(hits) == 0 {
		return []segment{{lit: raw, slot: -1}}
	}
	sort.Slice(hits, func(a, b int) bool {
		if hits[a].start != hits[b].start {
			return hits[a].start < hits[b].start
		}
		return hits[a].end > hits[b].end
	})
	var segs []segment
	pos := 0
	for _, h := range hits {
		if h.start < pos { // overlapping match: the earlier, longer one wins
			continue
		}
		if h.start > pos {
			segs = append(segs, segment{lit: raw[pos:h.start], slot: -1})
		}
		segs = append(segs, segment{slot: h.slot})
		pos = h.end
	}
	if pos < len(raw) {
		segs = append(segs, segment{lit: raw[pos:], slot: -1})
	}
	return segs
}

func isPing(raw []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(raw), []byte("event: ping")) || bytes.HasPrefix(bytes.TrimSpace(raw), []byte("event:ping"))
}

// parseDataFrame returns the JSON event of an SSE data frame, nil for any
// other frame (pings, comments, malformed data, JSON without an event).
func parseDataFrame(raw []byte) *wireEvent {
	if ev := decodeData(raw); ev != nil && ev.Event != "" {
		return ev
	}
	return nil
}

// decodeData decodes the JSON of a frame's data lines, nil when there are
// none or they are not a JSON object.
func decodeData(raw []byte) *wireEvent {
	data, ok := frameData(raw)
	if !ok {
		return nil
	}
	var ev wireEvent
	handled, err := wireEventFields.Decode(data, ev.fields())
	if !handled {
		err = json.Unmarshal(data, &ev)
	}
	if err != nil {
		return nil
	}
	return &ev
}

// frameData is the data of raw's data lines, joined as SSE joins them, and
// whether it has any.
func frameData(raw []byte) ([]byte, bool) {
	if data, ok := dify.OneLineFrameData(raw); ok {
		return data, true
	}
	var data []byte
	n := 0
	for l := range bytes.SplitSeq(raw, []byte("\n")) {
		l = bytes.TrimSuffix(l, []byte("\r"))
		if !bytes.HasPrefix(l, []byte("data:")) {
			continue
		}
		v := bytes.TrimPrefix(l[5:], []byte(" "))
		if n > 0 {
			data = append(data, '\n')
		}
		data = append(data, v...)
		n++
	}
	return data, n > 0
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func toEffect(ev *wireEvent) *effect {
	e := &effect{event: ev.Event}
	switch ev.Event {
	case dify.EventAgentMessage, dify.EventMessage, dify.EventMessageReplace:
		a := deref(ev.Answer)
		e.answer = &a
	case dify.EventAgentThought:
		labels := ev.ToolLabels
		if labels == nil {
			labels = map[string]any{}
		}
		files := ev.MessageFiles
		if files == nil {
			files = []string{}
		}
		e.thought = &thought{
			id: ev.ID, position: ev.Position, thought: deref(ev.Thought), observation: deref(ev.Observation),
			tool: deref(ev.Tool), toolInput: deref(ev.ToolInput), toolLabels: labels, files: files,
		}
	case dify.EventMessageFile:
		belongs := ev.BelongsTo
		if belongs == "" {
			belongs = "assistant"
		}
		url := ev.URL
		e.file = &dify.MessageFile{
			ID: ev.ID, Filename: fileNameFromURL(url), Type: ev.Type, URL: &url,
			TransferMethod: "tool_file", BelongsTo: &belongs,
		}
	case dify.EventMessageEnd:
		if ev.Metadata != nil {
			e.usage = ev.Metadata.Usage
			e.retr = ev.Metadata.RetrieverResources
		}
	case dify.EventError:
		e.errCode, e.errMsg, e.errState = ev.Code, ev.Message, ev.Status
	}
	return e
}

func fileNameFromURL(u string) string {
	if i := bytes.IndexByte([]byte(u), '?'); i >= 0 {
		u = u[:i]
	}
	if i := bytes.LastIndexByte([]byte(u), '/'); i >= 0 {
		u = u[i+1:]
	}
	return u
}
