package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Event is one server-sent event. Name is the `event:` field (empty when
// absent); Data is the `data:` payload, multiple data lines joined with
// "\n". Data is only valid until the next call to Next.
type Event struct {
	Name string // the event: field
	Data []byte // the joined data: lines
}

// ErrEventTooLarge is returned by SSEReader.Next when one event is bigger
// than the reader's cap.
var ErrEventTooLarge = errors.New("sse: event exceeds the configured limit")

// ErrMalformed is returned for input that is not a server-sent event stream
// (a field line without a known name is ignored, as the specification says;
// this is for binary garbage such as NUL bytes).
var ErrMalformed = errors.New("sse: malformed stream")

// SSEReader parses a text/event-stream body as the WHATWG specification
// describes: lines end in "\n" or "\r\n", lines starting with ":" are
// comments, an empty line dispatches the event. Events without data (only
// comments or only an event name) are not dispatched. The total size of one
// event's field lines is capped.
type SSEReader struct {
	br       *bufio.Reader
	max      int
	data     []byte
	name     []byte
	lastName string
	line     []byte
}

// NewSSEReader returns a reader that refuses events whose field lines add up
// to more than maxEvent bytes (<= 0 means 8 MiB).
func NewSSEReader(r io.Reader, maxEvent int) *SSEReader {
	if maxEvent <= 0 {
		maxEvent = 8 << 20
	}
	return &SSEReader{br: bufio.NewReaderSize(r, 32<<10), max: maxEvent}
}

// Next returns the next event. At the end of the stream it returns io.EOF
// when the stream ended on an event boundary, and io.ErrUnexpectedEOF when
// a partial event was left unterminated (which is dropped, as in the
// specification).
func (s *SSEReader) Next() (Event, error) {
	s.data = s.data[:0]
	s.name = s.name[:0]
	size := 0
	hasData := false
	pending := false
	for {
		line, err := s.readLine(s.max - size)
		if err != nil {
			if errors.Is(err, io.EOF) && (pending || len(line) > 0) {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		size += len(line) + 1
		if len(line) == 0 {
			if !hasData {
				s.name = s.name[:0]
				pending = false
				continue
			}
			return Event{Name: s.eventName(), Data: s.data}, nil
		}
		pending = true
		if bytes.IndexByte(line, 0) >= 0 {
			return Event{}, ErrMalformed
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
		case "event":
			s.name = append(s.name[:0], value...)
		}
	}
}

// eventName returns the event name as a string, reusing the previous string
// when it is the same (event names repeat, so this avoids an allocation per
// event).
func (s *SSEReader) eventName() string {
	if string(s.name) != s.lastName {
		s.lastName = string(s.name)
	}
	return s.lastName
}

// readLine returns the next line without its terminator. It fails with
// ErrEventTooLarge when the line is longer than budget.
func (s *SSEReader) readLine(budget int) ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.br.ReadSlice('\n')
		if len(s.line)+len(chunk) > budget+2 {
			return nil, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, s.max)
		}
		switch {
		case err == nil:
			var line []byte
			if len(s.line) == 0 {
				line = chunk
			} else {
				s.line = append(s.line, chunk...)
				line = s.line
			}
			line = line[:len(line)-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			s.line = append(s.line, chunk...)
		default:
			s.line = append(s.line, chunk...)
			return s.line, err
		}
	}
}
