package translate

import (
	"bytes"
	"testing"
)

// TestStreamRecordGrow: the copies kept for the reasoning cache are
// asked of RecordGrow as they accumulate; the first refusal drops the
// record as RecordLimit does, without changing a byte of what the
// client receives.
func TestStreamRecordGrow(t *testing.T) {
	events, total, first := recordStream()
	free, _ := runStream(t, streamOpts, events)
	for _, budget := range []int64{2 * total, 2*total - 1, first} {
		left := budget
		var asked int64
		opts := streamOpts
		opts.RecordGrow = func(n int64) bool {
			asked += n
			if n > left {
				return false
			}
			left -= n
			return true
		}
		out, s := runStream(t, opts, events)
		fits := budget >= 2*total
		if s.RecordExceeded() == fits || (s.Output() != nil) != fits || (s.DoneItems() != nil) != fits {
			t.Fatalf("budget %d of %d: exceeded %v, output %s, done %s", budget, 2*total, s.RecordExceeded(), s.Output(), s.DoneItems())
		}
		if fits && asked != 2*total {
			t.Fatalf("asked for %d bytes, want %d", asked, 2*total)
		}
		if !bytes.Equal(out, free) {
			t.Fatalf("the recording budget changed the client's stream:\n%s\nwant\n%s", out, free)
		}
	}
}
