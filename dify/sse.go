package dify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// IsEventStream reports whether h's Content-Type is text/event-stream
// (parameters such as charset aside): a streamed answer rather than a
// JSON one. It does not allocate: the mock's journal asks it on every
// request that has a body.
func IsEventStream(h http.Header) bool {
	mt, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// SSEFrame is one server-sent-events frame (docs/api §2.4). Raw holds the exact bytes
// read for the frame, including its terminating blank line, so recorders can
// store streams byte-faithfully: concatenating the Raw of every frame a
// FrameReader returns reproduces its input. Event is the `event:` field
// (empty for Dify's data frames); Data is the `data:` lines joined with "\n"
// (nil when the frame has no data line). A frame with one data line shares
// Raw's bytes for its Data, as ParseFrame does.
type SSEFrame struct {
	Event string
	Data  []byte
	Raw   []byte
}

// Empty reports a frame that carries no event: a stray blank line or a
// frame of comments only.
func (f SSEFrame) Empty() bool { return f.Event == "" && f.Data == nil }

// MaxFrameSize bounds a single frame's raw size. Dify frames are small (a
// message_end with retriever resources is a few kB), so anything near the
// limit is a broken or hostile stream, not a real event.
const MaxFrameSize = 16 << 20

// ErrFrameTooLarge is returned (wrapped) when a frame exceeds MaxFrameSize.
var ErrFrameTooLarge = errors.New("dify: SSE frame exceeds the size limit")

// FrameReader splits an SSE byte stream into frames. It accepts LF and CRLF
// line ends (mixed freely), multi-line data, comment lines, fields without
// a colon and frames split across reads. A lone CR is not a line end (Dify
// never sends one; the SSE spec allows it but honouring it would delay every
// frame until the next byte arrives). Frame size is bounded by MaxFrameSize.
// A FrameReader is not safe for concurrent use.
type FrameReader struct {
	br      *bufio.Reader
	max     int
	err     error // sticky
	started bool  // past the first line (BOM handling)
}

// ParseFrame parses raw, the bytes of one frame (an SSEFrame's Raw), as
// Next would. A frame in the form Dify sends (one "data: " line, then a
// blank line) is parsed without a reader, and its Data shares raw's
// bytes: recorders and the mock parse every frame of a stream this way.
func ParseFrame(raw []byte) SSEFrame {
	if data, ok := OneLineFrameData(raw); ok {
		return SSEFrame{Data: data, Raw: raw}
	}
	// A buffer the frame's size, not a stream's: a recorder parses every
	// ping of a live stream here, and 8 KiB for a 13-byte frame was a
	// twentieth of what a relayed turn allocated.
	f, _ := newFrameReader(bytes.NewReader(raw), len(raw)).Next()
	return f
}

// OneLineFrameData is the data of raw when raw is a frame in the form Dify
// sends (one "data: " line, then a blank line), sharing raw's bytes (with
// no room after them, so an append copies); ok is false for any other
// form, which a caller parses with ParseFrame or a FrameReader.
func OneLineFrameData(raw []byte) (data []byte, ok bool) {
	const prefix = "data: "
	if n := len(raw); n >= len(prefix)+2 && string(raw[:len(prefix)]) == prefix && raw[n-1] == '\n' && raw[n-2] == '\n' {
		data := raw[len(prefix) : n-2]
		if !bytes.ContainsAny(data, "\r\n") {
			return data[:len(data):len(data)], true
		}
	}
	return nil, false
}

// NewFrameReader returns a FrameReader reading r.
func NewFrameReader(r io.Reader) *FrameReader { return newFrameReader(r, 8<<10) }

// newFrameReader is NewFrameReader with a read buffer of size bytes.
func newFrameReader(r io.Reader, size int) *FrameReader {
	return &FrameReader{br: bufio.NewReaderSize(r, size), max: MaxFrameSize}
}

// Ready reports whether a whole frame is already read from the underlying
// reader (a blank line is among the bytes buffered), so that Next returns
// it without waiting for input. A relay uses it to write frames that
// arrived together in one go, as they came, instead of one write each.
func (r *FrameReader) Ready() bool {
	if r.err != nil {
		return false
	}
	b, _ := r.br.Peek(r.br.Buffered())
	return bytes.Contains(b, []byte("\n\n")) || bytes.Contains(b, []byte("\n\r\n"))
}

// Next returns the next frame or io.EOF at a clean end of input. A partial
// frame at EOF (no terminating blank line) is returned with
// io.ErrUnexpectedEOF; after any error, Next returns io.EOF (after
// ErrUnexpectedEOF) or the same error again.
func (r *FrameReader) Next() (SSEFrame, error) {
	if r.err != nil {
		return SSEFrame{}, r.err
	}
	var (
		raw     []byte
		f       SSEFrame
		data    []byte
		hasData bool
		// The first data line's value, as bounds in raw: a frame with one
		// data line (every frame Dify sends) shares raw's bytes for its
		// Data instead of a copy; data is built from the second line on.
		lines          int
		first0, first1 int
	)
	finish := func() SSEFrame {
		switch {
		case lines == 1:
			f.Data = raw[first0:first1:first1]
		case hasData:
			f.Data = data[: len(data)-1 : len(data)-1] // drop the separator after the last line
		}
		f.Raw = raw
		return f
	}
	for {
		start := len(raw)
		var err error
		raw, err = r.readLine(raw)
		line := raw[start:]
		complete := err == nil
		if err != nil && !errors.Is(err, io.EOF) {
			r.err = err
			return finish(), err
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if complete && len(line) == 0 {
			return finish(), nil // blank line: the frame is complete
		}
		if len(line) > 0 && line[0] != ':' {
			name, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(name) {
			case "event":
				f.Event = string(value)
			case "data":
				hasData = true
				lines++
				switch lines {
				case 1:
					// value is a slice of raw, which starts its array:
					// its offset is the difference of their capacities,
					// and stays good as later lines grow raw.
					first0 = cap(raw) - cap(value)
					first1 = first0 + len(value)
				case 2:
					data = append(data, raw[first0:first1]...)
					data = append(data, '\n')
					fallthrough
				default:
					data = append(data, value...)
					data = append(data, '\n')
				}
			}
			// id and retry are ignored: Dify sends neither (docs/api §2.4).
		}
		if !complete {
			r.err = io.EOF
			if len(raw) == 0 {
				return SSEFrame{}, io.EOF
			}
			return finish(), io.ErrUnexpectedEOF
		}
	}
}

// readLine appends one line, including its "\n", to raw. At the end of
// input it returns what remains with io.EOF.
func (r *FrameReader) readLine(raw []byte) ([]byte, error) {
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(raw)+len(chunk) > r.max {
			return raw, fmt.Errorf("%w (%d bytes)", ErrFrameTooLarge, r.max)
		}
		if raw == nil {
			// Room for the blank line that ends a frame after its one
			// line, so the frame is one allocation.
			raw = make([]byte, 0, len(chunk)+2)
		}
		raw = append(raw, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return raw, err
	}
}

// FrameError is a frame that could not be decoded into an event, e.g.
// invalid JSON in a data line or a field of the wrong type. ChatStream.Next
// returns it without ending the stream.
type FrameError struct {
	Event string // the event name, when it could be read
	Raw   []byte // the frame's raw bytes
	Err   error
}

func (e *FrameError) Error() string {
	if e.Event != "" {
		return fmt.Sprintf("dify: malformed %s event: %v", e.Event, e.Err)
	}
	return fmt.Sprintf("dify: malformed SSE frame: %v", e.Err)
}

func (e *FrameError) Unwrap() error { return e.Err }

// DecodeEvent turns a frame into a typed Event: *PingEvent for a bare
// `event: ping`, the matching *XxxEvent for a JSON data frame (the name is
// the JSON `event` field, else the frame's `event:` field), and
// *UnknownEvent for names this package does not model. It returns (nil,
// nil) for a frame that names no event and carries no data (Frame.Empty,
// or an empty `data:` line), and a *FrameError when the data is not a JSON
// object or does not fit the event's type.
func DecodeEvent(f SSEFrame) (Event, error) {
	data := bytes.TrimSpace(f.Data)
	if len(data) == 0 {
		switch f.Event {
		case "":
			return nil, nil
		case EventPing:
			return &PingEvent{}, nil
		default:
			return &UnknownEvent{Name: f.Event}, nil
		}
	}
	if data[0] != '{' {
		return nil, &FrameError{Event: f.Event, Raw: f.Raw, Err: errors.New("data is not a JSON object")}
	}
	var head struct {
		Event json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, &FrameError{Event: f.Event, Raw: f.Raw, Err: err}
	}
	name := f.Event
	var jsonName string
	if json.Unmarshal(head.Event, &jsonName) == nil && jsonName != "" {
		name = jsonName
	}
	var ev Event
	switch name {
	case EventAgentMessage:
		ev = &AgentMessageEvent{}
	case EventAgentThought:
		ev = &AgentThoughtEvent{}
	case EventMessage:
		ev = &MessageEvent{}
	case EventMessageFile:
		ev = &MessageFileEvent{}
	case EventMessageEnd:
		ev = &MessageEndEvent{}
	case EventMessageReplace:
		ev = &MessageReplaceEvent{}
	case EventTTSMessage:
		ev = &TTSMessageEvent{}
	case EventTTSMessageEnd:
		ev = &TTSMessageEndEvent{}
	case EventError:
		ev = &ErrorEvent{}
	case EventPing:
		return &PingEvent{}, nil
	default:
		return &UnknownEvent{Name: name, Data: json.RawMessage(bytes.Clone(data))}, nil
	}
	if err := json.Unmarshal(data, ev); err != nil {
		return nil, &FrameError{Event: name, Raw: f.Raw, Err: err}
	}
	return ev, nil
}
