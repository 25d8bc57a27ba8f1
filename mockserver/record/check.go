package record

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/jsonobj"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
)

// SaveRefusedError is returned (and logged) when a cassette about to be
// written still contains a secret, or would not load. Nothing was written.
type SaveRefusedError struct {
	Cassette string
	// Findings name the pattern and where it was found, never the secret.
	Findings []string
}

func (e *SaveRefusedError) Error() string {
	const show = 5
	list := e.Findings
	more := ""
	if len(list) > show {
		more = fmt.Sprintf("; and %d more", len(list)-show)
		list = list[:show]
	}
	return fmt.Sprintf("refusing to save cassette %s: %s%s; nothing was written (add a --redact rule or fix the upstream data, then record again)",
		e.Cassette, strings.Join(list, "; "), more)
}

// check is the save-time gate. data is the exact encoding about to be
// written. It is decoded again and every recorded string is scanned (this
// sees through YAML quoting), the answer deltas of each streamed turn are
// scanned joined together (a key split across frames), and the raw bytes
// are scanned as a last net. The upstream key is searched for literally,
// case-insensitively.
func (r *Recorder) check(name string, data []byte, kind string) error {
	_, err := r.checkChat(name, data, kind)
	return err
}

// checkChat is check, returning a chat cassette as it decoded it (nil for
// an app description): a caller that serves what it saved need not decode
// the file a second time.
func (r *Recorder) checkChat(name string, data []byte, kind string) (*cassette.Cassette, error) {
	refuse := func(findings ...string) error {
		return &SaveRefusedError{Cassette: name, Findings: findings}
	}
	f, err := cassette.Decode(name, data)
	if err != nil {
		return nil, refuse(fmt.Sprintf("the encoded cassette does not decode: %v", err))
	}
	var chat *cassette.Cassette
	switch kind {
	case cassette.KindChat:
		chat, err = cassette.ParseChat(name, name, f)
	case cassette.KindApp:
		_, err = cassette.ParseApp(name, name, f)
	}
	if err != nil {
		return nil, refuse(fmt.Sprintf("the cassette would not load: %v", err))
	}
	var findings []string
	scan := func(where, text string) {
		for _, fd := range secrets.Scan([]byte(text), r.scrub.enforced...) {
			findings = append(findings, fmt.Sprintf("%s in %s", fd.Pattern, where))
		}
	}
	scan("the cassette description", f.Meta.Description)
	for i, in := range f.Interactions {
		at := fmt.Sprintf("interaction %d (%s %s)", i, in.Request.Method, pathOf(in.Request.URL))
		scan(at+" request URL", in.Request.URL)
		scan(at+" request body", in.Request.Body)
		scanHeader(scan, at+" request header", in.Request.Headers)
		for k, vs := range in.Request.Form {
			scan(at+" request form field name", k)
			for _, v := range vs {
				scan(at+" request form field "+k, v)
			}
		}
		scanHeader(scan, at+" response header", in.Response.Headers)
		frames, _ := cassette.DecodeFrames(frameValues(in), in.Response.Body)
		if len(frames) == 0 {
			scan(at+" response body", in.Response.Body)
			continue
		}
		for j, fr := range frames {
			scan(fmt.Sprintf("%s response body, frame %d", at, j), string(fr.Raw))
		}
		for j, fr := range frames {
			if joined := joinedThought(fr.Raw); joined != "" {
				for _, fd := range secrets.Scan([]byte(joined), r.scrub.enforced...) {
					findings = append(findings, fmt.Sprintf("%s in %s response body, frame %d, split across agent_thought fields (which per-field scrubbing cannot see)", fd.Pattern, at, j))
				}
			}
		}
		for _, event := range []string{"agent_message", "message"} {
			answer, spans := joinedAnswer(frames, event)
			for _, fd := range secrets.Scan([]byte(answer), r.scrub.enforced...) {
				k := sort.Search(len(spans), func(k int) bool { return spans[k].end > fd.Offset })
				if k < len(spans) {
					findings = append(findings, fmt.Sprintf("%s in %s answer streamed across frames from frame %d (split over several deltas, which per-frame scrubbing cannot see)", fd.Pattern, at, spans[k].frame))
				}
			}
		}
	}
	if len(findings) == 0 {
		for _, fd := range secrets.Scan(data, r.scrub.enforced...) {
			findings = append(findings, fmt.Sprintf("%s at line %d, column %d of the encoded file", fd.Pattern, fd.Line, fd.Column))
		}
	}
	if len(findings) > 0 {
		return nil, refuse(dedupe(findings)...)
	}
	return chat, nil
}

func scanHeader(scan func(where, text string), where string, h map[string][]string) {
	for k, vs := range h {
		scan(where+" name", k)
		for _, v := range vs {
			scan(where+" "+k, v)
		}
	}
}

func frameValues(in *vcr.Interaction) []string {
	for k, v := range in.Response.Headers {
		if strings.EqualFold(k, cassette.FramesHeader) {
			return v
		}
	}
	return nil
}

func pathOf(rawURL string) string {
	p, err := cassette.APIPath(rawURL)
	if err != nil {
		return "?"
	}
	return p
}

type answerSpan struct{ frame, end int }

// joinedAnswer concatenates the answers of a turn's frames of one event
// (agent_message deltas; message, which apps stream as deltas or New Agent
// sends once with the whole answer; docs/api §2.5) and says which frame each
// byte came from. The two events are joined separately: a New Agent's
// closing message repeats the deltas, and glued to them it would turn an
// answer that ends in a redacted token ("…?token=[REDACTED]") into a false
// "split over several deltas" refusal.
func joinedAnswer(frames []cassette.RecordedFrame, event string) (string, []answerSpan) {
	var b strings.Builder
	var spans []answerSpan
	for i, fr := range frames {
		ev := parseFrameFields(fr.Raw)
		if ev.Event != event {
			continue
		}
		b.WriteString(ev.Answer)
		spans = append(spans, answerSpan{frame: i, end: b.Len()})
	}
	return b.String(), spans
}

// joinedThought is an agent_thought frame's text fields glued together in
// their order (thought, tool, tool_input, observation), so that a key split
// across two of them shows; "" for other frames.
func joinedThought(raw []byte) string {
	var t struct {
		Event       string `json:"event"`
		Thought     string `json:"thought"`
		Tool        string `json:"tool"`
		ToolInput   string `json:"tool_input"`
		Observation string `json:"observation"`
	}
	if !decodeFrame(raw, &t) || t.Event != "agent_thought" {
		return ""
	}
	return t.Thought + t.Tool + t.ToolInput + t.Observation
}

// frameFields are the envelope fields the recorder reads from an SSE frame.
type frameFields struct {
	Event          string `json:"event"`
	ConversationID string `json:"conversation_id"`
	MessageID      string `json:"message_id"`
	TaskID         string `json:"task_id"`
	Answer         string `json:"answer"`
}

// parseFrameFields reads the JSON of a frame's data lines; a frame that is
// not JSON gives zero values.
func parseFrameFields(raw []byte) frameFields {
	var f frameFields
	decodeFrame(raw, &f)
	return f
}

// decodeFrame decodes the JSON of raw's data lines into v; it reports
// whether there was JSON to decode.
func decodeFrame(raw []byte, v any) bool {
	fr := dify.ParseFrame(raw)
	return fr.Data != nil && json.Unmarshal(fr.Data, v) == nil
}

// frameEnvelope is the part of a frame the recorder reads while it
// forwards a live turn: the event and the upstream's conversation.
type frameEnvelope struct {
	Event          string `json:"event"`
	ConversationID string `json:"conversation_id"`
}

// envelopeFields are frameEnvelope's json names, in the order of its
// fields.
var envelopeFields = jsonobj.NewFields("event", "conversation_id")

// parseFrameEnvelope reads a frame's envelope as decodeFrame would, on
// every frame relayed: without encoding/json for a frame as Dify writes
// it (jsonobj), since a full decode of each frame was a share of the live
// lane's CPU to read two strings.
func parseFrameEnvelope(raw []byte) frameEnvelope {
	var f frameEnvelope
	fr := dify.ParseFrame(raw)
	if fr.Data == nil {
		return f
	}
	// Decode writes nothing into f for data that is not JSON, as
	// json.Unmarshal does not.
	if handled, _ := envelopeFields.Decode(fr.Data, []any{&f.Event, &f.ConversationID}); !handled {
		_ = json.Unmarshal(fr.Data, &f)
	}
	return f
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
