package transport

import (
	"runtime"
	"strings"
	"testing"
)

// TestReadAllLeavesLittleBehind: reading a 1 MiB body that keeps to its
// Content-Length allocates its own buffer and at most a third more in the
// buffers it grew through, not as much again as doubling from 64 KiB
// does: when a hundred such bodies arrive at once, what they leave
// behind is heap the process has to grow into.
func TestReadAllLeavesLittleBehind(t *testing.T) {
	const n = 1 << 20
	body := strings.Repeat("z", n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, err := ReadAll(&oneByOne{r: strings.NewReader(body), step: 8 << 10}, 64<<20, n)
	runtime.ReadMemStats(&after)
	if err != nil || len(b) != n {
		t.Fatalf("ReadAll: %d bytes, %v", len(b), err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d B body: %d B allocated (%.2fx)", n, alloc, float64(alloc)/n)
	if limit := uint64(n + n/2); alloc > limit {
		t.Errorf("reading a %d B body allocated %d B, want at most %d B", n, alloc, limit)
	}
	runtime.KeepAlive(b)
}
