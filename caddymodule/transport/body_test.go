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
