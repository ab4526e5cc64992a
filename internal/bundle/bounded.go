package bundle

import (
	"bytes"
	"io"
)

// MaxStoredResponse is how much of a replayed response is kept.
const MaxStoredResponse = 1 << 20

// BoundedReader reads a response body keeping at most Cap bytes. Bytes
// past the cap are still counted, and the read is cancelled (Cancel is
// called and reading stops) as soon as the cap is exceeded.
type BoundedReader struct {
	// R is the body.
	R io.Reader
	// Cap is how many bytes are kept.
	Cap int
	// Cancel aborts the request (e.g. a context's cancel function).
	Cancel func()

	buf       bytes.Buffer
	total     int64
	truncated bool
}

// ReadAll reads until the end of R, an error, or the cap is exceeded
// (which is not an error: Truncated reports it).
func (b *BoundedReader) ReadAll() error {
	chunk := make([]byte, 32<<10)
	for {
		n, err := b.R.Read(chunk)
		b.total += int64(n)
		if room := b.Cap - b.buf.Len(); n > 0 {
			b.buf.Write(chunk[:min(n, room)])
			if n > room {
				b.truncated = true
				if b.Cancel != nil {
					b.Cancel()
				}
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Bytes returns the stored bytes.
func (b *BoundedReader) Bytes() []byte { return b.buf.Bytes() }

// Total returns how many bytes were read, stored or not.
func (b *BoundedReader) Total() int64 { return b.total }

// Truncated reports whether the cap was exceeded.
func (b *BoundedReader) Truncated() bool { return b.truncated }
