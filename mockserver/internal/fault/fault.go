// Package fault is dify-mock's fault vocabulary: the spec strings that make
// the mock misbehave on purpose (a slow server, an HTTP 429, a stream that
// breaks after k frames, …) and their parser. The spec is the same wherever
// it comes from: the X-Dify-Mock-Fault request header, a cassette's
// `dify_mock.fault`, or `dify-mock serve --fault`. docs/mock/faults.md is the
// user guide; Vocabulary drives `dify-mock faults`.
//
// Grammar:
//
//	spec   = "none" | item *( "," item )
//	item   = name [ ":" arg ] *( ";" key "=" value )
//
// Names and keys are case-insensitive and "_" means "-", so WireMock's
// EMPTY_RESPONSE or CONNECTION_RESET_BY_PEER work as written. A value is
// percent-decoded, so %3B, %2C and %25 stand for ";", "," and "%" (and
// non-ASCII text can travel in a header). A spec holds at most one fault of
// each class: a delay (slow-headers), one that replaces the response, and
// one that changes a chat stream; replacing the response and changing the
// stream cannot be combined.
package fault

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Header is the request header that selects a fault for one request.
const Header = "X-Dify-Mock-Fault"

// None is the spec that means "no fault"; in the header it also switches
// off the selected cassette's fault and the server's default.
const None = "none"

// Limits keep specs sane; anything above them is almost surely a typo.
const (
	MaxSpecLength  = 4096
	MaxFrames      = 1_000_000
	MaxDuration    = 24 * time.Hour
	MaxRetryAfter  = 86400 // seconds
	MaxMessageSize = 1000  // bytes
)

// BeforeKind is a fault that replaces the response.
type BeforeKind int

const (
	// Status answers with an HTTP error status and Dify's error envelope.
	Status BeforeKind = iota + 1
	// EmptyResponse closes the connection without sending anything.
	EmptyResponse
	// ConnectionResetByPeer resets the connection (TCP RST) without sending anything.
	ConnectionResetByPeer
	// RandomDataThenClose sends bytes that are not HTTP, then closes.
	RandomDataThenClose
	// MalformedResponseChunk sends "200 OK" headers, then a broken chunk, then closes.
	MalformedResponseChunk
)

// Before replaces the response (or the connection) before any byte of it
// is sent.
type Before struct {
	Kind BeforeKind
	// Status, Code, Message: for Status. Empty Code/Message mean the
	// status's default (the caller's table of Dify envelopes).
	Status  int
	Code    string
	Message string
	// RetryAfter is the Retry-After header value in seconds ("" = none).
	RetryAfter string
}

// StreamKind is a fault inside a chat stream.
type StreamKind int

const (
	// ErrorAfter ends the stream with an in-stream `error` event (HTTP 200).
	ErrorAfter StreamKind = iota + 1
	// CloseAfter ends the response cleanly, without message_end.
	CloseAfter
	// ResetAfter resets the connection (TCP RST).
	ResetAfter
	// StallAfter sends nothing (no pings either) for For.
	StallAfter
	// Truncate sends everything but the turn's final frame (message_end),
	// then ends the response cleanly.
	Truncate
	// MalformedAfter inserts a frame whose JSON is cut off.
	MalformedAfter
)

// Then is what a stream does after a stall or a malformed frame.
type Then int

const (
	ThenContinue Then = iota // the rest of the stream follows
	ThenClose                // the response ends cleanly
	ThenReset                // the connection is reset
)

func (t Then) String() string { return [...]string{"continue", "close", "reset"}[t] }

// Stream changes a chat stream. After is the number of recorded frames
// (keep-alive pings included) sent before the fault; the fault takes the
// place of the next frame, at that frame's scheduled time. A count past the
// turn's last frame before its end (message_end, a recorded error or a run
// limit) is clamped there, so the fault always happens.
type Stream struct {
	Kind  StreamKind
	After int
	// For is the stall's length (wall-clock time: --speed does not scale it).
	For time.Duration
	// Then applies to StallAfter and MalformedAfter (default ThenContinue).
	Then Then
	// Code, Status, Message: for ErrorAfter; zero values take the code's
	// defaults (ErrorDefaults).
	Code    string
	Status  int
	Message string
}

// Spec is a parsed fault spec. The zero Spec is "no fault".
type Spec struct {
	// Delay holds the response headers back (slow-headers).
	Delay  time.Duration
	Before *Before
	Stream *Stream
}

// IsZero reports a spec without any fault ("none").
func (s Spec) IsZero() bool { return s.Delay == 0 && s.Before == nil && s.Stream == nil }

// String is the spec in canonical form: lower-case names, parameters in a
// fixed order, values percent-encoded where needed. Parse(s.String())
// yields s again.
func (s Spec) String() string {
	if s.IsZero() {
		return None
	}
	var items []string
	if s.Delay > 0 {
		items = append(items, "slow-headers:"+s.Delay.String())
	}
	if b := s.Before; b != nil {
		items = append(items, b.String())
	}
	if st := s.Stream; st != nil {
		items = append(items, st.String())
	}
	return strings.Join(items, ",")
}

func (b *Before) String() string {
	var sb strings.Builder
	sb.WriteString(beforeNames[b.Kind])
	if b.Kind == Status {
		sb.WriteString(":" + strconv.Itoa(b.Status))
		param(&sb, "code", b.Code)
		param(&sb, "message", b.Message)
		param(&sb, "retry-after", b.RetryAfter)
	}
	return sb.String()
}

func (st *Stream) String() string {
	var sb strings.Builder
	sb.WriteString(streamNames[st.Kind])
	if st.Kind != Truncate {
		sb.WriteString(":" + strconv.Itoa(st.After))
	}
	switch st.Kind {
	case ErrorAfter:
		param(&sb, "code", st.Code)
		if st.Status != 0 {
			param(&sb, "status", strconv.Itoa(st.Status))
		}
		param(&sb, "message", st.Message)
	case StallAfter:
		param(&sb, "for", st.For.String())
		if st.Then != ThenContinue {
			param(&sb, "then", st.Then.String())
		}
	case MalformedAfter:
		if st.Then != ThenContinue {
			param(&sb, "then", st.Then.String())
		}
	}
	return sb.String()
}

func param(sb *strings.Builder, key, value string) {
	if value == "" {
		return
	}
	sb.WriteString(";" + key + "=" + encodeValue(value))
}

// encodeValue percent-encodes what would end a value or could not travel in
// an HTTP header: %, ;, ",", control characters, non-ASCII bytes, and
// spaces at either end (Parse trims those).
func encodeValue(v string) string {
	var sb strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '%' || c == ';' || c == ',' || c < 0x20 || c >= 0x7f || (c == ' ' && (i == 0 || i == len(v)-1)) {
			fmt.Fprintf(&sb, "%%%02X", c)
			continue
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

var (
	beforeNames = map[BeforeKind]string{
		Status: "status", EmptyResponse: "empty-response", ConnectionResetByPeer: "connection-reset-by-peer",
		RandomDataThenClose: "random-data-then-close", MalformedResponseChunk: "malformed-response-chunk",
	}
	streamNames = map[StreamKind]string{
		ErrorAfter: "error-after", CloseAfter: "close-after", ResetAfter: "reset-after",
		StallAfter: "stall-after", Truncate: "truncate", MalformedAfter: "malformed-after",
	}
)

// ErrorDefault is the status and message an in-stream error code gets
// when the spec does not set them.
type ErrorDefault struct {
	Status  int
	Message string
	// RunID appends " (agent_run_id=<fresh id>)", as New Agent backend
	// failures do (docs/api §2.5, §18).
	RunID bool
}

// DefaultErrorCode is error-after's code when none is given: Dify's
// catch-all for an unexpected exception during generation (docs/api §2.5).
const DefaultErrorCode = "internal_server_error"

// ErrorDefaults are the in-stream error codes Dify emits (docs/api §2.5, §18)
// with their status and message. Other codes are accepted (Dify's set
// grows) and default to status 500 and the internal_server_error message.
var ErrorDefaults = map[string]ErrorDefault{
	"internal_server_error":               {500, "Internal Server Error, please contact support.", false},
	"completion_request_error":            {400, "Completion request failed.", false},
	"provider_not_initialize":             {400, "No valid model provider credentials found. Please go to Settings -> Model Provider to complete your provider credentials.", false},
	"provider_quota_exceeded":             {400, "Your quota for Dify Hosted Model Provider has been exhausted. Please go to Settings -> Model Provider to complete your own provider credentials.", false},
	"model_currently_not_support":         {400, "Dify Hosted OpenAI trial currently not support the GPT-4 model.", false},
	"invalid_param":                       {400, "Invalid parameter.", false},
	"agent_run_limit_exceeded":            {400, "Agent run exceeded its limit of 500 model requests", true},
	"agent_session_configuration_changed": {409, "The Agent configuration changed after this conversation started. Start a new conversation to continue.", false},
}

// ErrorEvent resolves an ErrorAfter fault's code, status and message;
// newID makes the agent_run_id of codes that carry one.
func (st *Stream) ErrorEvent(newID func() string) (code string, status int, message string) {
	code = st.Code
	if code == "" {
		code = DefaultErrorCode
	}
	d, ok := ErrorDefaults[code]
	if !ok {
		d = ErrorDefaults[DefaultErrorCode]
	}
	status, message = st.Status, st.Message
	if status == 0 {
		status = d.Status
	}
	if message == "" {
		message = d.Message
		if d.RunID {
			message += " (agent_run_id=" + newID() + ")"
		}
	}
	return code, status, message
}

// Parse reads a spec. "" and "none" yield the zero Spec. Errors say what is
// wrong with which item and how to write it; callers add the vocabulary
// (Names) where the user reads them.
func Parse(text string) (Spec, error) {
	var s Spec
	if len(text) > MaxSpecLength {
		return s, fmt.Errorf("fault spec is %d bytes, over the %d-byte limit", len(text), MaxSpecLength)
	}
	if !utf8.ValidString(text) {
		return s, errors.New("fault spec is not valid UTF-8 (percent-encode non-ASCII values)")
	}
	text = strings.TrimSpace(text)
	if text == "" || normName(text) == None {
		return s, nil
	}
	var delayItem, beforeItem, streamItem string
	for _, raw := range strings.Split(text, ",") {
		item := strings.TrimSpace(raw)
		if item == "" {
			return Spec{}, fmt.Errorf("fault spec %q has an empty item (items are separated by commas)", text)
		}
		p, err := parseItem(item)
		if err != nil {
			return Spec{}, fmt.Errorf("fault %q: %w", item, err)
		}
		switch {
		case p.delay > 0:
			if delayItem != "" {
				return Spec{}, fmt.Errorf("fault spec %q has two delays (%q and %q); use one slow-headers", text, delayItem, item)
			}
			delayItem, s.Delay = item, p.delay
		case p.before != nil:
			if beforeItem != "" {
				return Spec{}, fmt.Errorf("fault spec %q has two faults that replace the response (%q and %q); use one", text, beforeItem, item)
			}
			beforeItem, s.Before = item, p.before
		case p.stream != nil:
			if streamItem != "" {
				return Spec{}, fmt.Errorf("fault spec %q has two stream faults (%q and %q); use one", text, streamItem, item)
			}
			streamItem, s.Stream = item, p.stream
		default:
			return Spec{}, fmt.Errorf("fault spec %q: %q can only stand alone", text, item)
		}
	}
	if beforeItem != "" && streamItem != "" {
		return Spec{}, fmt.Errorf("fault spec %q: %q replaces the response, so the stream fault %q could never happen; use one of them", text, beforeItem, streamItem)
	}
	return s, nil
}

// parsed is one item.
type parsed struct {
	delay  time.Duration
	before *Before
	stream *Stream
}

// normName folds case and "_" so WireMock's names work as written.
func normName(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
}

// kind describes one name of the vocabulary for the parser.
type kind struct {
	arg    string   // "" (no argument), "frames", "duration" or "status"
	params []string // allowed keys
	build  func(arg string, p map[string]string) (parsed, error)
}

var kinds map[string]kind

func init() {
	frameFault := func(k StreamKind) func(string, map[string]string) (parsed, error) {
		return func(arg string, p map[string]string) (parsed, error) {
			n, _ := strconv.Atoi(arg)
			st := &Stream{Kind: k, After: n}
			switch k {
			case ErrorAfter:
				st.Code, st.Message = p["code"], p["message"]
				if v, ok := p["status"]; ok {
					s, err := httpStatus("status", v)
					if err != nil {
						return parsed{}, err
					}
					st.Status = s
				}
			case StallAfter:
				v, ok := p["for"]
				if !ok {
					return parsed{}, errors.New("stall-after needs how long to stall, e.g. stall-after:3;for=10s")
				}
				d, err := duration("for", v)
				if err != nil {
					return parsed{}, err
				}
				st.For = d
				if st.Then, err = then(p); err != nil {
					return parsed{}, err
				}
			case MalformedAfter:
				var err error
				if st.Then, err = then(p); err != nil {
					return parsed{}, err
				}
			}
			return parsed{stream: st}, nil
		}
	}
	plain := func(k BeforeKind) func(string, map[string]string) (parsed, error) {
		return func(string, map[string]string) (parsed, error) { return parsed{before: &Before{Kind: k}}, nil }
	}
	kinds = map[string]kind{
		"slow-headers": {arg: "duration", build: func(arg string, _ map[string]string) (parsed, error) {
			d, _ := time.ParseDuration(arg)
			return parsed{delay: d}, nil
		}},
		"status": {arg: "status", params: []string{"code", "message", "retry-after"}, build: func(arg string, p map[string]string) (parsed, error) {
			st, _ := strconv.Atoi(arg)
			b := &Before{Kind: Status, Status: st, Code: p["code"], Message: p["message"]}
			if v, ok := p["retry-after"]; ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 || n > MaxRetryAfter || strings.TrimLeft(v, "0123456789") != "" {
					return parsed{}, fmt.Errorf("retry-after=%s: want whole seconds from 0 to %d, e.g. retry-after=5", v, MaxRetryAfter)
				}
				b.RetryAfter = strconv.Itoa(n)
			}
			return parsed{before: b}, nil
		}},
		"empty-response":           {build: plain(EmptyResponse)},
		"connection-reset-by-peer": {build: plain(ConnectionResetByPeer)},
		"random-data-then-close":   {build: plain(RandomDataThenClose)},
		"malformed-response-chunk": {build: plain(MalformedResponseChunk)},
		"error-after":              {arg: "frames", params: []string{"code", "status", "message"}, build: frameFault(ErrorAfter)},
		"close-after":              {arg: "frames", build: frameFault(CloseAfter)},
		"reset-after":              {arg: "frames", build: frameFault(ResetAfter)},
		"stall-after":              {arg: "frames", params: []string{"for", "then"}, build: frameFault(StallAfter)},
		"malformed-after":          {arg: "frames", params: []string{"then"}, build: frameFault(MalformedAfter)},
		"truncate": {build: func(string, map[string]string) (parsed, error) {
			return parsed{stream: &Stream{Kind: Truncate, After: math.MaxInt}}, nil
		}},
	}
}

var codeRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func parseItem(item string) (parsed, error) {
	parts := strings.Split(item, ";")
	head := strings.TrimSpace(parts[0])
	name, arg, hasArg := strings.Cut(head, ":")
	name, arg = normName(name), strings.TrimSpace(arg)
	if name == None {
		return parsed{}, errors.New("none cannot be combined with other faults")
	}
	k, ok := kinds[name]
	if !ok {
		return parsed{}, fmt.Errorf("unknown fault %q", name)
	}
	example := exampleOf(name)
	switch k.arg {
	case "":
		if hasArg {
			if name == "truncate" {
				return parsed{}, fmt.Errorf("truncate takes no argument (it drops message_end); to end after %s frames use close-after:%s", arg, arg)
			}
			return parsed{}, fmt.Errorf("%s takes no argument, e.g. %s", name, example)
		}
	case "frames":
		n, err := strconv.Atoi(arg)
		if !hasArg || err != nil || n < 0 || n > MaxFrames || strings.TrimLeft(arg, "0123456789") != "" {
			return parsed{}, fmt.Errorf("%s needs the number of frames to send before the fault (0 to %d), e.g. %s", name, MaxFrames, example)
		}
	case "duration":
		if !hasArg {
			return parsed{}, fmt.Errorf("%s needs a duration, e.g. %s", name, example)
		}
		if _, err := duration(name, arg); err != nil {
			return parsed{}, err
		}
	case "status":
		if !hasArg {
			return parsed{}, fmt.Errorf("status needs an HTTP status from 400 to 599, e.g. %s", example)
		}
		if _, err := httpStatus("status", arg); err != nil {
			return parsed{}, err
		}
	}
	params := map[string]string{}
	for _, kv := range parts[1:] {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		key, raw, ok := strings.Cut(kv, "=")
		key = normName(key)
		if !ok {
			return parsed{}, fmt.Errorf("parameter %q needs a value (key=value)", kv)
		}
		if !contains(k.params, key) {
			if len(k.params) == 0 {
				return parsed{}, fmt.Errorf("%s takes no parameters, got %q", name, key)
			}
			return parsed{}, fmt.Errorf("%s has no parameter %q (it takes %s)", name, key, strings.Join(k.params, ", "))
		}
		if _, dup := params[key]; dup {
			return parsed{}, fmt.Errorf("parameter %s is given twice", key)
		}
		v, err := url.PathUnescape(strings.TrimSpace(raw))
		if err != nil {
			return parsed{}, fmt.Errorf("%s=%s: bad percent-encoding (write %%25 for a literal %%)", key, raw)
		}
		if v == "" {
			return parsed{}, fmt.Errorf("%s= is empty (leave the parameter out for the default)", key)
		}
		switch key {
		case "code":
			if !codeRE.MatchString(v) {
				return parsed{}, fmt.Errorf("code=%s: want a Dify error code in snake_case, e.g. code=completion_request_error", raw)
			}
		case "message":
			if !utf8.ValidString(v) || len(v) > MaxMessageSize {
				return parsed{}, fmt.Errorf("message: want UTF-8 text of at most %d bytes", MaxMessageSize)
			}
		}
		params[key] = v
	}
	return k.build(arg, params)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func duration(key, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > MaxDuration {
		return 0, fmt.Errorf("%s %q: want a duration with a unit from 1ms to %s, e.g. 500ms, 2s or 1m", key, v, MaxDuration)
	}
	return d, nil
}

func httpStatus(key, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 400 || n > 599 || strings.TrimLeft(v, "0123456789") != "" {
		return 0, fmt.Errorf("%s %q: want an HTTP error status from 400 to 599, e.g. %s=429", key, v, key)
	}
	return n, nil
}

func then(p map[string]string) (Then, error) {
	v, ok := p["then"]
	if !ok {
		return ThenContinue, nil
	}
	switch normName(v) {
	case "continue":
		return ThenContinue, nil
	case "close":
		return ThenClose, nil
	case "reset":
		return ThenReset, nil
	}
	return 0, fmt.Errorf("then=%s: want continue, close or reset", v)
}
