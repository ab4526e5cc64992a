package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is returned when a body exceeds its cap.
var ErrTooLarge = errors.New("body exceeds the configured limit")

// maxPresize bounds how much ReadAll allocates on a size hint alone,
// before the bytes arrive.
const maxPresize = 64 << 10

// ReadAll reads r to its end into memory, refusing more than limit bytes
// with ErrTooLarge. sizeHint (a Content-Length, or -1) refuses a body
// announced larger than the limit at once, and presizes the buffer up to
// 64 KiB: a peer's Content-Length alone never makes the relay allocate
// more; the buffer grows with the bytes that really arrive. A limit <= 0
// means no limit.
func ReadAll(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	if limit > 0 && sizeHint > limit {
		return nil, ErrTooLarge
	}
	var buf bytes.Buffer
	if sizeHint > 0 {
		buf.Grow(int(min(sizeHint, maxPresize)) + bytes.MinRead)
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
