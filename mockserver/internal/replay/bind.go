package replay

import (
	"crypto/rand"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
)

// Binding holds the values one replay uses in place of the recorded ones.
type Binding struct {
	ConversationID string
	MessageID      string
	TaskID         string
	// Now is when the replayed message is created; recorded created_at
	// values keep their spacing relative to it.
	Now time.Time
	// UploadFileIDs are the upload_file_id values of the live request's
	// files, in order; they replace the recorded request's ids.
	UploadFileIDs []string
	// Keep leaves every other recorded value (thought and file ids,
	// created_at) as recorded: for a turn whose frames already went out
	// live with those values (serve --upstream), folded for storing.
	Keep bool
	// Files signs the /files/ URLs the turn hands out (tool files, upload
	// previews) for this replay; nil leaves their recorded signatures.
	Files FileSigner
	// FilesURL is scheme://host the file URLs are handed out behind.
	FilesURL string
}

// Bound is a turn bound to one replay's values.
type Bound struct {
	Turn    *CompiledTurn
	Binding Binding
	vals    [][]byte
}

// NewUUID returns a random (version 4) UUID.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// Bind computes every slot's replacement for one replay. This is the only
// per-replay preparation: frames are then rendered by concatenation.
func (t *CompiledTurn) Bind(b Binding) *Bound {
	bd := &Bound{Turn: t, Binding: b, vals: make([][]byte, len(t.Slots))}
	var base int64
	first := true
	for _, s := range t.Slots {
		if s.Kind == slotCreatedAt && (first || s.Unix < base) {
			base, first = s.Unix, false
		}
	}
	now := b.Now.Unix()
	for i, s := range t.Slots {
		switch s.Kind {
		case slotConversation:
			bd.vals[i] = []byte(b.ConversationID)
		case slotMessage:
			bd.vals[i] = []byte(b.MessageID)
		case slotTask:
			bd.vals[i] = []byte(b.TaskID)
		case slotUpload:
			if s.Index < len(b.UploadFileIDs) && b.UploadFileIDs[s.Index] != "" {
				bd.vals[i] = []byte(b.UploadFileIDs[s.Index])
			} else {
				bd.vals[i] = []byte(NewUUID())
			}
		case slotCreatedAt:
			if b.Keep {
				bd.vals[i] = strconv.AppendInt(nil, s.Unix, 10)
			} else {
				bd.vals[i] = strconv.AppendInt(nil, s.Unix-base+now, 10)
			}
		case slotFileURL:
			// After every id: the URL names the replayed file.
		default:
			if b.Keep {
				bd.vals[i] = []byte(s.Recorded)
			} else {
				bd.vals[i] = []byte(NewUUID())
			}
		}
	}
	for i, s := range t.Slots {
		if s.Kind == slotFileURL {
			bd.vals[i] = bd.fileURL(s)
		}
	}
	return bd
}

// ID maps a recorded id to this replay's value (unchanged when unknown).
func (b *Bound) ID(recorded string) string {
	if i, ok := b.Turn.slotByID[recorded]; ok {
		return string(b.vals[i])
	}
	return recorded
}

// Render appends frame i, with this replay's values, to dst.
func (b *Bound) Render(dst []byte, i int) []byte {
	for _, s := range b.Turn.Frames[i].segs {
		if s.slot < 0 {
			dst = append(dst, s.lit...)
		} else {
			dst = append(dst, b.vals[s.slot]...)
		}
	}
	return dst
}

// Size estimates the bytes b holds of its own: the values bound in place of
// the recorded ones (the compiled turn is shared by every replay of it).
// Render never changes b, so a frame can be rendered again from b after the
// replay (journal.FrameSource).
func (b *Bound) Size() int64 {
	n := int64(64 + 24*len(b.vals))
	for _, v := range b.vals {
		n += int64(cap(v))
	}
	return n
}

// Result is what a (possibly partial) replay amounts to as a stored message
// (docs/api §2.5 accumulation rules, §6 history form).
type Result struct {
	Answer             string
	Thoughts           []dify.AgentThoughtRecord
	Files              []dify.MessageFile
	Usage              *dify.Usage
	RetrieverResources []dify.RetrieverResource
	// ErrorCode/ErrorMessage are set when the stream ended with an error event.
	ErrorCode    string
	ErrorMessage string
	// Ended reports that message_end was part of the folded frames.
	Ended bool
}

// Fold accumulates frames [0, n) into a Result with this replay's ids.
func (b *Bound) Fold(n int) Result {
	t := b.Turn
	plan := t.final
	if plan == nil || n != t.terminal+1 {
		plan = t.fold(n)
	}
	return b.bind(plan)
}

// folded is what frames [0, n) of a turn amount to before a replay's ids
// are put in: the same for every replay of the turn, so the fold up to the
// turn's recorded end, where nearly every replay settles, is made once when
// the turn is compiled (CompiledTurn.final) instead of at the end of every
// stream, when a cohort of streams ends together.
type folded struct {
	answer   string
	thoughts []*thought // in the order they are stored
	files    []*dify.MessageFile
	usage    *dify.Usage
	retr     []dify.RetrieverResource
	errCode  string
	errMsg   string // with the recorded ids
	ended    bool
}

// fold accumulates frames [0, n) of t (docs/api §2.5 accumulation rules).
func (t *CompiledTurn) fold(n int) *folded {
	f := &folded{}
	type row struct {
		order int
		th    *thought
	}
	rows := map[string]*row{}
	// The answer is built once (not by repeated concatenation).
	var answer strings.Builder
	for i := 0; i < n && i < len(t.Frames); i++ {
		e := t.Frames[i].effect
		if e == nil {
			continue
		}
		switch e.event {
		case dify.EventAgentMessage:
			answer.WriteString(*e.answer)
		case dify.EventMessage, dify.EventMessageReplace:
			if e.event == dify.EventMessage && t.Mode == dify.ModeAgentChat {
				// A legacy turn's `message` events are deltas (an
				// annotation's answer, one per character: direct_output).
				answer.WriteString(*e.answer)
				continue
			}
			// New Agent's closing message repeats the whole answer; a
			// replace swaps it: neither appends (docs/api §2.5).
			answer.Reset()
			answer.WriteString(*e.answer)
		case dify.EventAgentThought:
			key := e.thought.id
			if key == "" {
				key = "\x00pos:" + strconv.Itoa(e.thought.position)
			}
			if ex, ok := rows[key]; ok {
				ex.th = e.thought
			} else {
				rows[key] = &row{order: len(rows), th: e.thought}
			}
		case dify.EventMessageFile:
			f.files = append(f.files, e.file)
		case dify.EventMessageEnd:
			f.usage, f.retr, f.ended = e.usage, e.retr, true
		case dify.EventError:
			f.errCode, f.errMsg = e.errCode, e.errMsg
		}
	}
	f.answer = answer.String()
	list := make([]*row, 0, len(rows))
	for _, rw := range rows {
		list = append(list, rw)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].th.position != list[j].th.position {
			return list[i].th.position < list[j].th.position
		}
		return list[i].order < list[j].order
	})
	f.thoughts = make([]*thought, len(list))
	for i, rw := range list {
		f.thoughts[i] = rw.th
	}
	return f
}

// bind puts this replay's ids into a fold.
func (b *Bound) bind(f *folded) Result {
	r := Result{Answer: f.answer, Usage: f.usage, RetrieverResources: f.retr, ErrorCode: f.errCode, Ended: f.ended}
	if f.errMsg != "" {
		r.ErrorMessage = b.renderString(f.errMsg)
	}
	for _, file := range f.files {
		mf := *file
		mf.ID = b.ID(mf.ID)
		if mf.URL != nil {
			u := b.renderString(*mf.URL)
			mf.URL = &u
		}
		r.Files = append(r.Files, mf)
	}
	created := b.Binding.Now.Unix()
	r.Thoughts = make([]dify.AgentThoughtRecord, 0, len(f.thoughts))
	for _, th := range f.thoughts {
		files := make([]string, len(th.files))
		for i, id := range th.files {
			files[i] = b.ID(id)
		}
		id := th.id
		if id != "" {
			id = b.ID(id)
		}
		r.Thoughts = append(r.Thoughts, dify.AgentThoughtRecord{
			ID: id, MessageID: b.Binding.MessageID, Position: th.position, Thought: th.thought,
			Tool: th.tool, ToolLabels: th.toolLabels, ToolInput: th.toolInput, CreatedAt: created,
			Observation: th.observation, Files: files,
		})
	}
	if r.Files == nil {
		r.Files = []dify.MessageFile{}
	}
	if r.RetrieverResources == nil {
		r.RetrieverResources = []dify.RetrieverResource{}
	}
	return r
}

// renderString substitutes recorded ids inside a string (e.g. a tool file URL
// or an error message carrying agent_run_id).
func (b *Bound) renderString(s string) string {
	raw := []byte(s)
	segs := b.Turn.split(raw)
	if len(segs) == 1 && segs[0].slot < 0 {
		return s
	}
	var out []byte
	for _, sg := range segs {
		if sg.slot < 0 {
			out = append(out, sg.lit...)
		} else {
			out = append(out, b.vals[sg.slot]...)
		}
	}
	return string(out)
}
