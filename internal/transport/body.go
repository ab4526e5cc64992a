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
// more; the buffer grows with the bytes that really arrive. While the body
// keeps to its announced size, the steps are quarters of that size (plus
// the one byte that sees the end), so that the body ends in one buffer of
// its own size rather than in one of up to twice that, and the buffers
// left behind add up to a third of it rather than all of it (they are
// garbage the heap has to make room for when many large bodies arrive at
// once); otherwise the buffer at most doubles. A limit <= 0 means no
// limit.
func ReadAll(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	if limit > 0 && sizeHint > limit {
		return nil, ErrTooLarge
	}
	size := int64(bytes.MinRead)
	if sizeHint > 0 {
		size = halveTo(sizeHint+1, maxPresize+1)
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = grow(buf, limit, sizeHint)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if limit > 0 && int64(len(buf)) > limit {
			return nil, ErrTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading body: %w", err)
		}
	}
}

// grow returns a full buf with room for more: at most twice its length;
// while the body keeps to sizeHint, the largest half (quarter, …) of
// sizeHint+1 that is at most four times its length; never more than limit
// plus one (enough to see that a body is too large).
func grow(buf []byte, limit, sizeHint int64) []byte {
	have := int64(len(buf))
	size := 2 * have
	if sizeHint > 0 && have <= sizeHint {
		size = halveTo(sizeHint+1, 4*have)
	}
	if limit > 0 {
		size = min(size, limit+1)
	}
	size = max(size, have+1)
	out := make([]byte, len(buf), size)
	copy(out, buf)
	return out
}

// halveTo halves n, rounding up, until it is at most most.
func halveTo(n, most int64) int64 {
	for n > most {
		n = (n + 1) / 2
	}
	return n
}
