package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bufpool"
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
// limit. The buffers come from package bufpool (rounded up to its size
// classes, at most an eighth larger); the ones grown through go back to
// it, and the caller may give the result back (bufpool.Put) once nothing
// references it.
func ReadAll(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	if limit > 0 && sizeHint > limit {
		return nil, ErrTooLarge
	}
	size := int64(bytes.MinRead)
	if sizeHint > 0 {
		size = halveTo(sizeHint+1, maxPresize+1)
	}
	buf := bufpool.Get(int(size))
	end := size // what the buffer may be filled to: its capacity can be larger
	for {
		if int64(len(buf)) == end {
			end = nextSize(int64(len(buf)), limit, sizeHint)
			// the buffer grown through goes back to the pool: nothing
			// else has seen it
			old := buf
			buf = append(bufpool.Get(int(end)), old...)
			bufpool.Put(old)
		}
		n, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if limit > 0 && int64(len(buf)) > limit {
			bufpool.Put(buf)
			return nil, ErrTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			bufpool.Put(buf)
			return nil, fmt.Errorf("reading body: %w", err)
		}
	}
}

// nextSize returns the size to grow a full buffer of have bytes to: at
// most twice have; while the body keeps to sizeHint, the largest half
// (quarter, …) of sizeHint+1 that is at most four times have; never more
// than limit plus one (enough to see that a body is too large).
func nextSize(have, limit, sizeHint int64) int64 {
	size := 2 * have
	if sizeHint > 0 && have <= sizeHint {
		size = halveTo(sizeHint+1, 4*have)
	}
	if limit > 0 {
		size = min(size, limit+1)
	}
	return max(size, have+1)
}

// halveTo halves n, rounding up, until it is at most most.
func halveTo(n, most int64) int64 {
	for n > most {
		n = (n + 1) / 2
	}
	return n
}
