package bodylog

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
)

// Verify cross-checks an index line with its decoded artifact: identity
// (request ID, attempt, phase), every metadata field the artifact repeats,
// and the body's format, size, received count, frame count, truncation,
// redaction count and SHA-256. Any divergence is an error naming the field.
func Verify(line *IndexLine, a *Artifact) error {
	h := a.Header
	if h.RequestID != line.RequestID || h.Attempt != line.Attempt || h.Phase != line.Phase {
		return fmt.Errorf("artifact identity mismatch: the artifact is %s attempt %d phase %s, the index line %s attempt %d phase %s",
			h.RequestID, h.Attempt, h.Phase, line.RequestID, line.Attempt, line.Phase)
	}
	ref := line.Body
	if ref == nil {
		return fmt.Errorf("index line has no body reference")
	}
	type field struct {
		name string
		ok   bool
	}
	for _, f := range []field{
		{"format", h.Format == ref.Format},
		{"method", h.Method == line.Method},
		{"url", h.URL == line.URL},
		{"status", h.Status == line.Status},
		{"contentType", h.ContentType == line.ContentType},
		{"model", h.Model == line.Model},
		{"stream", h.Stream == line.Stream},
		{"headers", sameHeaders(h.Headers, line.Headers)},
		{"sha256", ref.SHA256 == a.SHA256},
		{"size", ref.Size == int64(len(a.Body))},
		{"received", ref.Received == a.End.Received},
		{"frames", ref.Frames == len(a.Frames)},
		{"truncated", ref.Truncated == a.Truncated},
		{"redactions", ref.Redactions == a.End.Redactions},
	} {
		if !f.ok {
			return fmt.Errorf("index field %s does not match the artifact (hash or metadata mismatch)", f.name)
		}
	}
	return nil
}

// sameHeaders compares two header maps, treating nil and empty alike.
func sameHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		bv, ok := b[k]
		if !ok || !slices.Equal(a[k], bv) {
			return false
		}
	}
	return true
}
