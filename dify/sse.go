package dify

import "io"

// CONTRACT SKELETON (being implemented).

// Frame is one server-sent-events frame (API §2.4). Raw holds the exact bytes
// read for the frame, including its terminating blank line, so recorders can
// store streams byte-faithfully. Event is the `event:` field (empty for
// Dify's data frames); Data is the joined `data:` lines.
type Frame struct {
	Event string
	Data  []byte
	Raw   []byte
}

// FrameReader splits an SSE byte stream into frames. It accepts LF and CRLF,
// multi-line data, comment lines and frames split across reads.
type FrameReader struct{}

func NewFrameReader(r io.Reader) *FrameReader { panic("todo") }

// Next returns the next frame or io.EOF at a clean end of input. A partial
// frame at EOF (no terminating blank line) is returned with io.ErrUnexpectedEOF.
func (r *FrameReader) Next() (Frame, error) { panic("todo") }

// DecodeEvent turns a frame into a typed Event (ping for a bare `event: ping`,
// *UnknownEvent for names this package does not model).
func DecodeEvent(f Frame) (Event, error) { panic("todo") }
