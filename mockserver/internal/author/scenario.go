package author

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Scenario is a chat scenario file (docs/mock/authoring.md). The top level
// holds the cassette's metadata, defaults for every turn (user, inputs,
// pacing) and, for a one-turn cassette, the turn itself (query, steps, …);
// a multi-turn cassette lists its turns under `turns` instead.
type Scenario struct {
	// Kind is "chat" or empty; app scenarios (kind: app) are AppScenario.
	Kind               string   `yaml:"kind"`
	Name               string   `yaml:"name"`
	Description        string   `yaml:"description"`
	Mode               string   `yaml:"mode"`
	Default            bool     `yaml:"default"`
	Fault              string   `yaml:"fault"`
	SuggestedQuestions []string `yaml:"suggested_questions"`
	Transcript         string   `yaml:"transcript"`
	// CreatedAt is the created_at (Unix seconds) of the first turn; later
	// turns are a minute apart.
	CreatedAt int64 `yaml:"created_at"`

	ScenarioTurn `yaml:",inline"`
	Turns        []ScenarioTurn `yaml:"turns"`
}

// ScenarioTurn is one POST /chat-messages and the stream that answers it.
type ScenarioTurn struct {
	Query  string    `yaml:"query"`
	Inputs yaml.Node `yaml:"inputs"`
	User   string    `yaml:"user"`
	Files  []FileRef `yaml:"files"`
	Steps  []Step    `yaml:"steps"`
	Pacing Pacing    `yaml:"pacing"`
	// Error ends the stream with an in-stream error event instead of the
	// closing message and message_end (docs/api §2.5).
	Error *ErrorSpec `yaml:"error"`
	Usage UsageSpec  `yaml:"usage"`
	// ModelRequests overrides how many model requests the turn counts for
	// the mock's run limits (X-Dify-Mock-Model-Requests); 0 keeps the
	// mock's default of one per agent_thought position.
	ModelRequests int `yaml:"model_requests"`
}

// FileRef is a files[] entry of the chat request (docs/api §2.1). A local_file
// reference without upload_file_id gets a placeholder id derived from the
// scenario (see cassettes/README.md: the mock does not match on it).
type FileRef struct {
	Type           string `yaml:"type"`
	TransferMethod string `yaml:"transfer_method"`
	URL            string `yaml:"url"`
	UploadFileID   string `yaml:"upload_file_id"`
}

// Step is one thing the agent does; exactly one of Thinking, Tool, Answer
// and MessageFile is set.
type Step struct {
	// Thinking is model reasoning text shown in agent_thought.thought.
	Thinking string `yaml:"thinking"`
	// Tool is a tool call: Input (a mapping, written as JSON text into
	// tool_input), Observation (the result text) arriving Duration later.
	Tool        string    `yaml:"tool"`
	Input       yaml.Node `yaml:"input"`
	Observation string    `yaml:"observation"`
	Duration    Duration  `yaml:"duration"`
	// Answer is answer text, streamed as agent_message batches.
	Answer string `yaml:"answer"`
	// MessageFile is a file a tool produced (message_file event).
	MessageFile *FileSpec `yaml:"message_file"`
}

// FileSpec describes a message_file event (docs/api §2.5).
type FileSpec struct {
	Type string `yaml:"type"`
	// URL defaults to a /files/tools/<id>.<ext> path, which the mock signs
	// and serves when it replays the turn.
	URL string `yaml:"url"`
	// Extension is used in the default URL (default: Path's extension, else
	// "png").
	Extension string `yaml:"extension"`
	// Path is a local file (relative to the scenario's folder) whose bytes
	// the cassette carries as the tool file, at most
	// cassette.MaxToolFileSize; without it the mock serves a synthesized
	// file of the extension's type.
	Path string `yaml:"path"`
	// MimeType is the file's type (default: from the extension).
	MimeType string `yaml:"mime_type"`
}

// ErrorSpec is a terminal in-stream error (docs/api §2.5, §18).
type ErrorSpec struct {
	Code   string `yaml:"code"`
	Status int    `yaml:"status"`
	// Message may contain {agent_run_id}, replaced by a run id derived from
	// the scenario, as Dify appends "(agent_run_id=…)" to New Agent
	// failures.
	Message string `yaml:"message"`
	// After is the gap between the last event and the error (default:
	// pacing.step_gap).
	After Duration `yaml:"after"`
}

// UsageSpec overrides parts of message_end.metadata.usage; anything left out
// is derived from the scenario (docs/mock/authoring.md).
type UsageSpec struct {
	PromptTokens        int64  `yaml:"prompt_tokens"`
	CompletionTokens    int64  `yaml:"completion_tokens"`
	PromptUnitPrice     string `yaml:"prompt_unit_price"`
	CompletionUnitPrice string `yaml:"completion_unit_price"`
	PriceUnit           string `yaml:"price_unit"`
	Currency            string `yaml:"currency"`
}

// Pacing sets the stream's timing. Unset fields fall back to the
// scenario-level pacing, then to the mode's defaults (see defaultPacing).
type Pacing struct {
	// StartDelay: request start → first event.
	StartDelay Duration `yaml:"start_delay"`
	// TimeToFirstToken: a row or step starting → its first text batch.
	TimeToFirstToken Duration `yaml:"time_to_first_token"`
	// BatchInterval: the gap between text batches (New Agent debounces
	// deltas for 0.5 s, docs/api §18).
	BatchInterval Duration `yaml:"batch_interval"`
	// CharsPerSecond sets batch size: a batch holds about
	// CharsPerSecond × BatchInterval characters, cut at word ends.
	CharsPerSecond float64 `yaml:"chars_per_second"`
	// CharsPerBatch sets batch size directly (wins over CharsPerSecond).
	CharsPerBatch int `yaml:"chars_per_batch"`
	// StepGap: the model's pause before a new thought row or tool call.
	StepGap Duration `yaml:"step_gap"`
	// EndDelay: the gap before each closing event (message, message_end).
	EndDelay Duration `yaml:"end_delay"`
	// PingInterval: keep-alive pings while the stream runs (docs/api §2.4,
	// default 10s); "off" disables them.
	PingInterval Duration `yaml:"ping_interval"`
}

// Duration is a YAML duration such as "500ms" or "1.5s". The zero value
// means "not set"; "off" (or "0") sets an explicit zero.
type Duration struct {
	D   time.Duration
	Set bool
}

// UnmarshalYAML accepts Go duration strings and "off".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 500ms", n.Line)
	}
	v := strings.TrimSpace(n.Value)
	if v == "off" || v == "0" {
		*d = Duration{Set: true}
		return nil
	}
	td, err := time.ParseDuration(v)
	if err != nil || td < 0 {
		return fmt.Errorf("line %d: %q is not a duration such as 500ms or 2s", n.Line, n.Value)
	}
	if td > time.Hour {
		return fmt.Errorf("line %d: duration %s is longer than an hour", n.Line, td)
	}
	*d = Duration{D: td, Set: true}
	return nil
}

// MarshalYAML writes the duration back in Go syntax.
func (d Duration) MarshalYAML() (any, error) {
	if !d.Set {
		return nil, nil
	}
	return d.D.String(), nil
}

func (d Duration) or(fallback Duration) Duration {
	if d.Set {
		return d
	}
	return fallback
}

// Modes a scenario can take (docs/api §0.1).
const (
	ModeAgent     = dify.ModeAgent
	ModeAgentChat = dify.ModeAgentChat
)

// DefaultCreatedAt is the created_at of a scenario's first turn when the
// scenario does not set one (2025-12-01T00:00:00Z), fixed so regenerating a
// cassette gives identical bytes.
const DefaultCreatedAt int64 = 1764547200

// MaxScenarioSize bounds a scenario file.
const MaxScenarioSize = 4 << 20

// kindProbe reads only the kind of a scenario-like file.
type kindProbe struct {
	Kind string `yaml:"kind"`
}

// ParseScenario decodes a chat scenario strictly (unknown keys are errors,
// so typos do not silently change a cassette) and checks it. file names the
// source in errors.
func ParseScenario(file string, data []byte) (*Scenario, error) {
	if len(data) > MaxScenarioSize {
		return nil, fmt.Errorf("%s: scenario is %d bytes, over the %d-byte limit", file, len(data), MaxScenarioSize)
	}
	var probe kindProbe
	_ = yaml.Unmarshal(data, &probe)
	if probe.Kind == cassette.KindApp {
		return nil, fmt.Errorf("%s: this is an app scenario (kind: app); use ParseAppScenario", file)
	}
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty scenario", file)
		}
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	s.applyDefaults()
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return &s, nil
}

// turns returns the scenario's turns with scenario-level defaults applied.
func (s *Scenario) turns() []ScenarioTurn {
	base := s.ScenarioTurn
	list := s.Turns
	if len(list) == 0 {
		list = []ScenarioTurn{base}
	}
	out := make([]ScenarioTurn, len(list))
	for i, t := range list {
		if t.User == "" {
			t.User = base.User
		}
		if t.User == "" {
			t.User = "demo-user"
		}
		if t.Inputs.Kind == 0 {
			t.Inputs = base.Inputs
		}
		t.Pacing = t.Pacing.over(base.Pacing).over(defaultPacing(s.Mode))
		out[i] = t
	}
	return out
}

// applyDefaults fills what a scenario may leave out: the mode, the first
// turn's created_at, an error's status and a message file's type. (User,
// inputs and pacing are inherited per turn by turns().)
func (s *Scenario) applyDefaults() {
	if s.Mode == "" {
		s.Mode = ModeAgent
	}
	if s.CreatedAt == 0 {
		s.CreatedAt = DefaultCreatedAt
	}
	s.ScenarioTurn.applyDefaults()
	for i := range s.Turns {
		s.Turns[i].applyDefaults()
	}
}

func (t *ScenarioTurn) applyDefaults() {
	if t.Error != nil && t.Error.Status == 0 {
		t.Error.Status = 400
	}
	for i := range t.Steps {
		if f := t.Steps[i].MessageFile; f != nil && f.Type == "" {
			f.Type = dify.FileTypeImage
		}
	}
}

// validate reports the first thing wrong with a scenario whose defaults are
// applied; it changes nothing.
func (s *Scenario) validate() error {
	if s.Kind != "" && s.Kind != cassette.KindChat {
		return fmt.Errorf("kind must be %q or %q, got %q", cassette.KindChat, cassette.KindApp, s.Kind)
	}
	if s.Name == "" {
		return errors.New("name is required (it names the cassette and seeds its ids)")
	}
	if err := cassette.ValidName(s.Name); err != nil {
		return err
	}
	switch s.Mode {
	case ModeAgent, ModeAgentChat:
	default:
		return fmt.Errorf("mode must be %q or %q, got %q", ModeAgent, ModeAgentChat, s.Mode)
	}
	if s.CreatedAt < 0 {
		return fmt.Errorf("created_at %d is negative", s.CreatedAt)
	}
	if len(s.Turns) > 0 {
		t := s.ScenarioTurn
		if t.Query != "" || len(t.Steps) > 0 || len(t.Files) > 0 || t.Error != nil || t.ModelRequests != 0 || t.Usage != (UsageSpec{}) {
			return errors.New("with `turns`, put query, files, steps, error, usage and model_requests inside each turn (only user, inputs and pacing may be scenario-wide defaults)")
		}
	}
	if err := checkInputs(&s.Inputs, "inputs"); err != nil {
		return err
	}
	for i, t := range s.turns() {
		where := "turn 1"
		if len(s.Turns) > 0 {
			where = fmt.Sprintf("turns[%d]", i)
		}
		if err := t.validate(); err != nil {
			return fmt.Errorf("%s: %v", where, err)
		}
	}
	return nil
}

func checkInputs(n *yaml.Node, where string) error {
	if n.Kind == 0 {
		return nil
	}
	v, err := nodeValue(n)
	if err != nil {
		return fmt.Errorf("%s: %v", where, err)
	}
	if _, ok := v.(object); !ok && v != nil {
		return fmt.Errorf("%s must be a mapping of variable names to values", where)
	}
	return nil
}

func (t *ScenarioTurn) validate() error {
	if strings.TrimSpace(t.Query) == "" {
		return errors.New("query is required (the mock also matches requests to cassettes by query)")
	}
	if err := checkInputs(&t.Inputs, "inputs"); err != nil {
		return err
	}
	for i, f := range t.Files {
		switch f.Type {
		case dify.FileTypeImage, dify.FileTypeDocument, dify.FileTypeAudio, dify.FileTypeVideo, dify.FileTypeCustom:
		default:
			return fmt.Errorf("files[%d].type must be image, document, audio, video or custom, got %q", i, f.Type)
		}
		switch f.TransferMethod {
		case dify.TransferLocalFile:
			if f.URL != "" {
				return fmt.Errorf("files[%d]: a local_file reference has no url", i)
			}
		case dify.TransferRemoteURL:
			if f.URL == "" || f.UploadFileID != "" {
				return fmt.Errorf("files[%d]: a remote_url reference needs url and no upload_file_id", i)
			}
		default:
			return fmt.Errorf("files[%d].transfer_method must be local_file or remote_url, got %q", i, f.TransferMethod)
		}
	}
	if len(t.Steps) == 0 && t.Error == nil {
		return errors.New("steps is empty: a turn needs at least an answer (or an error)")
	}
	hasAnswer := false
	for i, st := range t.Steps {
		n := 0
		for _, set := range []bool{st.Thinking != "", st.Tool != "", st.Answer != "", st.MessageFile != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("steps[%d]: set exactly one of thinking, tool, answer, message_file", i)
		}
		if st.Tool == "" && (st.Input.Kind != 0 || st.Observation != "" || st.Duration.Set) {
			return fmt.Errorf("steps[%d]: input, observation and duration belong to a tool step", i)
		}
		if st.Tool != "" {
			if strings.ContainsAny(st.Tool, ";\n") {
				return fmt.Errorf("steps[%d]: tool name %q may not contain ';' or a newline", i, st.Tool)
			}
			v, err := nodeValue(&st.Input)
			if err != nil {
				return fmt.Errorf("steps[%d].input: %v", i, err)
			}
			if _, ok := v.(object); !ok && v != nil {
				return fmt.Errorf("steps[%d].input must be a mapping of argument names to values", i)
			}
		}
		if st.Answer != "" {
			hasAnswer = true
		}
		if st.MessageFile != nil {
			switch st.MessageFile.Type {
			case dify.FileTypeImage, dify.FileTypeDocument, dify.FileTypeAudio, dify.FileTypeVideo, dify.FileTypeCustom:
			default:
				return fmt.Errorf("steps[%d].message_file.type %q is not image, document, audio, video or custom", i, st.MessageFile.Type)
			}
			if st.MessageFile.Path != "" && st.MessageFile.URL != "" {
				return fmt.Errorf("steps[%d].message_file: set url or path, not both (a file's bytes are served at the URL the mock makes)", i)
			}
			if ext := st.MessageFile.Extension; ext != "" && !fileExtRE.MatchString(ext) {
				return fmt.Errorf("steps[%d].message_file.extension %q must be letters and digits only", i, ext)
			}
		}
	}
	if t.Error == nil && !hasAnswer {
		return errors.New("a turn that ends with message_end needs an answer step")
	}
	if e := t.Error; e != nil {
		if e.Code == "" || e.Message == "" {
			return errors.New("error needs code and message")
		}
		if e.Status < 400 || e.Status > 599 {
			return fmt.Errorf("error.status %d is not a 4xx/5xx status", e.Status)
		}
	}
	if t.ModelRequests < 0 {
		return errors.New("model_requests must not be negative")
	}
	if t.Usage.PromptTokens < 0 || t.Usage.CompletionTokens < 0 {
		return errors.New("usage token counts must not be negative")
	}
	for _, p := range []struct{ name, v string }{
		{"usage.prompt_unit_price", t.Usage.PromptUnitPrice},
		{"usage.completion_unit_price", t.Usage.CompletionUnitPrice},
		{"usage.price_unit", t.Usage.PriceUnit},
	} {
		if p.v != "" {
			if _, ok := parseDecimal(p.v); !ok {
				return fmt.Errorf("%s %q is not a decimal number", p.name, p.v)
			}
		}
	}
	p := t.Pacing
	if p.BatchInterval.D <= 0 {
		return errors.New("pacing.batch_interval must be positive")
	}
	if p.CharsPerBatch < 0 || p.CharsPerSecond < 0 {
		return errors.New("pacing.chars_per_batch and chars_per_second must not be negative")
	}
	if p.PingInterval.Set && p.PingInterval.D != 0 && p.PingInterval.D < time.Second {
		return errors.New("pacing.ping_interval must be at least 1s (or off)")
	}
	return nil
}

// defaultPacing is the timing used when a scenario does not say: New Agent
// debounces answer deltas to ~0.5 s batches (docs/api §2.5, §18); legacy
// agent-chat streams token by token.
func defaultPacing(mode string) Pacing {
	ms := func(n int) Duration { return Duration{D: time.Duration(n) * time.Millisecond, Set: true} }
	p := Pacing{
		StartDelay:       ms(150),
		TimeToFirstToken: ms(600),
		BatchInterval:    ms(500),
		CharsPerSecond:   60,
		StepGap:          ms(400),
		EndDelay:         ms(30),
		PingInterval:     Duration{D: 10 * time.Second, Set: true},
	}
	if mode == ModeAgentChat {
		p.BatchInterval = ms(80)
		p.CharsPerSecond = 50
	}
	return p
}

// over fills p's unset fields from base.
func (p Pacing) over(base Pacing) Pacing {
	p.StartDelay = p.StartDelay.or(base.StartDelay)
	p.TimeToFirstToken = p.TimeToFirstToken.or(base.TimeToFirstToken)
	p.BatchInterval = p.BatchInterval.or(base.BatchInterval)
	if p.CharsPerSecond == 0 && p.CharsPerBatch == 0 {
		p.CharsPerSecond = base.CharsPerSecond
		p.CharsPerBatch = base.CharsPerBatch
	}
	p.StepGap = p.StepGap.or(base.StepGap)
	p.EndDelay = p.EndDelay.or(base.EndDelay)
	p.PingInterval = p.PingInterval.or(base.PingInterval)
	return p
}

// charsPerBatch is the target batch size in characters (at least 1).
func (p Pacing) charsPerBatch() int {
	if p.CharsPerBatch > 0 {
		return p.CharsPerBatch
	}
	n := int(p.CharsPerSecond * p.BatchInterval.D.Seconds())
	if n < 1 {
		n = 1
	}
	return n
}
