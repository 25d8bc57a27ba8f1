package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// A stream's body is decoded as its bytes arrive, in whatever pieces the
// reads return: the chunked transfer coding first (chunkDecoder), then SSE
// frames in the decoded bytes (frameScanner). Being pushed rather than
// pulling from a reader, the same decoders serve a stream read by its own
// goroutine and one read by the event loop that watches every stream
// (readOnLoop, sseloop_linux.go).

// errBadChunk is a body that breaks the chunked coding.
var errBadChunk = errors.New("malformed chunked body")

// chunkDecoder decodes the chunked transfer coding (RFC 9112 §7.1) pushed
// to it in pieces: chunk extensions and trailers are read past.
type chunkDecoder struct {
	state   chunkState
	left    int64 // data bytes left in the current chunk
	digits  int   // hex digits of the size line so far
	lineLen int   // bytes of the current trailer line so far
}

type chunkState uint8

const (
	chunkSize    chunkState = iota // in the size line's digits
	chunkExt                       // past the digits, up to the line's \n
	chunkData                      // in a chunk's data
	chunkDataCR                    // the \r after a chunk's data
	chunkDataLF                    // the \n after it
	chunkTrailer                   // after the last chunk: trailer lines up to an empty one
	chunkDone                      // the body has ended
)

// push decodes p and hands each piece of chunk data to data. Bytes after
// the body's end are not this body's and are left alone.
func (d *chunkDecoder) push(p []byte, data func([]byte)) error {
	i := 0
	for i < len(p) && d.state != chunkDone {
		c := p[i]
		switch d.state {
		case chunkSize:
			v, ok := hexDigit(c)
			switch {
			case ok && d.digits < 15:
				d.left, d.digits = d.left<<4|v, d.digits+1
			case !ok && d.digits > 0 && (c == '\r' || c == '\n' || c == ';' || c == ' ' || c == '\t'):
				d.state = chunkExt
				continue // the same byte ends the digits and may end the line
			default:
				return errBadChunk
			}
		case chunkExt:
			if c == '\n' {
				d.digits = 0
				if d.left == 0 {
					d.state = chunkTrailer
				} else {
					d.state = chunkData
				}
			}
		case chunkData:
			n := int(min(d.left, int64(len(p)-i)))
			data(p[i : i+n])
			d.left -= int64(n)
			i += n
			if d.left == 0 {
				d.state = chunkDataCR
			}
			continue
		case chunkDataCR:
			if c != '\r' {
				return errBadChunk
			}
			d.state = chunkDataLF
		case chunkDataLF:
			if c != '\n' {
				return errBadChunk
			}
			d.state = chunkSize
		case chunkTrailer:
			switch {
			case c == '\n' && d.lineLen == 0:
				d.state = chunkDone
			case c == '\n':
				d.lineLen = 0
			case c == '\r' && d.lineLen == 0: // the \r of the empty line
			default:
				d.lineLen++
			}
		}
		i++
	}
	return nil
}

func (d *chunkDecoder) done() bool { return d.state == chunkDone }

func hexDigit(c byte) (int64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return int64(c - '0'), true
	case 'a' <= c && c <= 'f':
		return int64(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return int64(c-'A') + 10, true
	}
	return 0, false
}

// frameScanner finds SSE frames in bytes pushed to it in pieces: lines end
// in \n (a \r before it is dropped), a blank line ends a frame, and a frame
// with only blank lines is not a frame.
type frameScanner struct {
	size    int  // bytes of the current frame so far, line ends included
	content bool // the frame has a non-blank line
	lineLen int  // bytes of the current line so far
	lineCR  bool // the current line so far is exactly "\r"
}

// push scans p; frame gets p's arrival and the size of each frame p
// completes.
func (s *frameScanner) push(p []byte, at arrival, frame func(arrival, int)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.lineCR = s.lineLen == 0 && len(p) == 1 && p[0] == '\r'
			s.lineLen += len(p)
			s.size += len(p)
			return
		}
		blank := s.lineLen+i == 0 || (s.lineLen == 0 && i == 1 && p[0] == '\r') || (s.lineLen == 1 && i == 0 && s.lineCR)
		s.size += i + 1
		s.lineLen, s.lineCR = 0, false
		p = p[i+1:]
		if !blank {
			s.content = true
			continue
		}
		if s.content {
			frame(at, s.size)
		}
		s.size, s.content = 0, false
	}
}

// end reports a body that ended inside a frame.
func (s *frameScanner) end() error {
	if s.content || s.lineLen > 0 {
		return io.ErrUnexpectedEOF // a frame cut off
	}
	return nil
}

// streamBody is one stream's chunked SSE body as it arrives.
type streamBody struct {
	chunks chunkDecoder
	frames frameScanner
	frame  func(arrival, int)
}

// push takes the next bytes read; it reports whether the body is complete.
func (b *streamBody) push(p []byte, at arrival) (bool, error) {
	err := b.chunks.push(p, func(data []byte) { b.frames.push(data, at, b.frame) })
	if err != nil {
		return false, err
	}
	if b.chunks.done() {
		return true, b.frames.end()
	}
	return false, nil
}

// readBody reads the rest of body from conn on the calling goroutine (the
// portable way; readOnLoop is the event loop's).
func readBody(ctx context.Context, conn *timedConn, body *streamBody) error {
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	buf := make([]byte, 4<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if done, perr := body.push(buf[:n], conn.last); done || perr != nil {
				return perr
			}
		}
		if err == io.EOF {
			return io.ErrUnexpectedEOF // the body's end never came
		}
		if err != nil {
			return err
		}
	}
}

// loopFrom is the stream count from which --event-loop auto reads bodies on
// the event loop: below it the client's CPU is small either way (0.10 cores
// at 1,000 streams) and a stream's own goroutine wakes a little sooner.
const loopFrom = 2000

// defaultLoopPace is --loop-pace's default: at 10,000 streams it took the
// client from 0.38 to 0.31 cores and the server from 0.75 to 0.71
// (bench/history.md, "Issue 21, tenth round"), for at most a millisecond
// added to a frame's measured lateness.
const defaultLoopPace = time.Millisecond

// parseEventLoop reads --event-loop.
func parseEventLoop(v string, streams int) (bool, error) {
	switch v {
	case "on":
		return true, nil
	case "off":
		return false, nil
	case "", "auto":
		return streams >= loopFrom, nil
	}
	return false, fmt.Errorf("--event-loop %q: want on, off or auto", v)
}
