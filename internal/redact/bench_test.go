package redact

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// benchSecrets are the relay's credentials in a typical deployment: the
// upstream API key and two client tokens.
var benchSecrets = []string{
	"sk-proj-" + strings.Repeat("Abc123XyZ_", 15),
	"relay-token-" + strings.Repeat("q7", 16),
	"relay-token-" + strings.Repeat("z9", 16),
}

// benchFrames are what the relay scrubs per write: a Chat chunk of a
// streamed answer and whole non-streaming answers of growing size.
func benchFrames() []struct {
	name  string
	frame []byte
} {
	chunk := []byte(`data: {"id":"chatcmpl-B1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-5.2","choices":[{"index":0,"delta":{"content":" internal"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	answer := func(n int) []byte {
		text := strings.Repeat("I changed the status code to 400 and hid the internal error.\n", n/40+1)[:n]
		return []byte(fmt.Sprintf(`{"id":"chatcmpl-B1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q}}]}`, text))
	}
	return []struct {
		name  string
		frame []byte
	}{{"chunk", chunk}, {"4KB", answer(4 << 10)}, {"64KB", answer(64 << 10)}}
}

// BenchmarkSecrets measures scrubbing one frame that holds no secret (the
// relay's every write); compare with BenchmarkSecretsBaseline, one
// bytes.Index over the same frame.
func BenchmarkSecrets(b *testing.B) {
	for _, f := range benchFrames() {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(f.frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, n := Secrets(f.frame, benchSecrets...); n != 0 {
					b.Fatal(n)
				}
			}
		})
	}
}

// BenchmarkSecretsBaseline is one bytes.Index over each frame.
func BenchmarkSecretsBaseline(b *testing.B) {
	key := []byte(benchSecrets[0])
	for _, f := range benchFrames() {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(f.frame)))
			b.ReportAllocs()
			for b.Loop() {
				if bytes.Index(f.frame, key) >= 0 {
					b.Fatal("found")
				}
			}
		})
	}
}
