package transport

import (
	"strings"
	"testing"
)

// TestReadAllDoesNotTrustContentLength: a client announcing 64 MiB and
// sending one byte makes ReadAll allocate for the byte, not for the
// announcement.
func TestReadAllDoesNotTrustContentLength(t *testing.T) {
	b, err := ReadAll(strings.NewReader("x"), 64<<20, 64<<20)
	if err != nil || string(b) != "x" {
		t.Fatalf("ReadAll: %q %v", b, err)
	}
	if cap(b) > 1<<20 {
		t.Fatalf("allocated %d bytes for a 1-byte body announced as 64 MiB", cap(b))
	}
	big := strings.Repeat("y", 300<<10)
	if b, err := ReadAll(strings.NewReader(big), 1<<20, int64(len(big))); err != nil || string(b) != big {
		t.Fatalf("a body larger than the presize: %d bytes, %v", len(b), err)
	}
	if _, err := ReadAll(strings.NewReader(big), 1<<10, -1); err != ErrTooLarge {
		t.Fatalf("over the limit: %v", err)
	}
}

// TestReadAllKeepsToContentLength: a body that arrives as announced is
// held in a buffer of its own size (plus the byte that sees the end, up to
// the pool's size class, at most an eighth more), not
// in the up to twice as large one that doubling leaves; a body longer or
// shorter than announced is still read whole.
func TestReadAllKeepsToContentLength(t *testing.T) {
	for _, n := range []int{0, 1, 64 << 10, 64<<10 + 1, 1 << 20, 3<<20 + 7} {
		body := strings.Repeat("z", n)
		b, err := ReadAll(&oneByOne{r: strings.NewReader(body), step: 8 << 10}, 64<<20, int64(n))
		if err != nil || string(b) != body {
			t.Fatalf("%d bytes: %d read, %v", n, len(b), err)
		}
		// its own size, rounded up to a size class of package bufpool
		if most := n + 1 + (n+1)/8; n > 0 && cap(b) > most {
			t.Fatalf("%d bytes announced and sent: held in %d, want at most %d", n, cap(b), most)
		}
	}
	for _, hint := range []int64{100, 1 << 20} {
		body := strings.Repeat("w", 300<<10)
		if b, err := ReadAll(strings.NewReader(body), 1<<20, hint); err != nil || string(b) != body {
			t.Fatalf("announced %d, sent %d: %d read, %v", hint, len(body), len(b), err)
		}
	}
	if _, err := ReadAll(strings.NewReader(strings.Repeat("v", 5000)), 4096, 4096); err != ErrTooLarge {
		t.Fatalf("more than announced and over the limit: %v", err)
	}
}

// oneByOne reads at most step bytes per call, as a network body does.
type oneByOne struct {
	r    *strings.Reader
	step int
}

func (o *oneByOne) Read(p []byte) (int, error) {
	if len(p) > o.step {
		p = p[:o.step]
	}
	return o.r.Read(p)
}
