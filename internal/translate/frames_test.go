package translate

import (
	"bytes"
	"encoding/json"
	"testing"
)

// splitFrames splits client output into SSE frames, failing on anything
// that is not "data: ...\n\n".
func splitFrames(t testing.TB, out []byte) [][]byte {
	t.Helper()
	var frames [][]byte
	for len(out) > 0 {
		if !bytes.HasPrefix(out, []byte("data: ")) {
			t.Fatalf("frame does not start with data: %q", out)
		}
		end := bytes.Index(out, []byte("\n\n"))
		if end < 0 {
			t.Fatalf("unterminated frame %q", out)
		}
		frames = append(frames, out[len("data: "):end])
		out = out[end+2:]
	}
	return frames
}

// checkFrames verifies that every frame is valid SSE carrying valid JSON
// (or the final [DONE]).
func checkFrames(t testing.TB, out []byte) [][]byte {
	t.Helper()
	frames := splitFrames(t, out)
	for i, f := range frames {
		if string(f) == "[DONE]" {
			if i != len(frames)-1 {
				t.Fatalf("[DONE] is not the last frame")
			}
			continue
		}
		if bytes.IndexByte(f, '\n') >= 0 || !json.Valid(f) {
			t.Fatalf("frame %d is not one line of valid JSON: %q", i, f)
		}
	}
	return frames
}
