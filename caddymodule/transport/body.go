package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is returned when a body exceeds its cap.
var ErrTooLarge = errors.New("body exceeds the configured limit")

// ReadAll reads r to its end into memory, refusing more than limit bytes
// with ErrTooLarge. sizeHint (a Content-Length, or -1) presizes the buffer
// when it is within the limit. A limit <= 0 means no limit.
func ReadAll(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	if limit > 0 && sizeHint > limit {
		return nil, ErrTooLarge
	}
	var buf bytes.Buffer
	if sizeHint > 0 {
		buf.Grow(int(sizeHint) + bytes.MinRead)
	}
	src := r
	if limit > 0 {
		src = io.LimitReader(r, limit+1)
	}
	if _, err := buf.ReadFrom(src); err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if limit > 0 && int64(buf.Len()) > limit {
		return nil, ErrTooLarge
	}
	return buf.Bytes(), nil
}
