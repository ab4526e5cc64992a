package transport

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchStream is an upstream SSE answer: many small delta events and a
// few large ones (an item with encrypted reasoning, the terminal event).
func benchStream() []byte {
	var b bytes.Buffer
	big := strings.Repeat("gAAAAABpZ3Jhc3NfY2lwaGVydGV4dA", 200)
	fmt.Fprintf(&b, "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"encrypted_content\":%q}}\n\n", big)
	for i := 0; i < 240; i++ {
		fmt.Fprintf(&b, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\" status\",\"logprobs\":[]}\n\n", i)
	}
	fmt.Fprintf(&b, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"reasoning\",\"encrypted_content\":%q}]}}\n\n", big)
	return b.Bytes()
}

// BenchmarkSSEAnswer reads every event of benchStream; compare with
// BenchmarkSSEAnswerBaseline (io.Copy of the same bytes).
func BenchmarkSSEAnswer(b *testing.B) {
	in := benchStream()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewSSEReader(bytes.NewReader(in), 0)
		for {
			if _, err := r.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}

// BenchmarkSSEAnswerBaseline copies benchStream through a 32 KiB buffer,
// as the reader's bufio.Reader reads it.
func BenchmarkSSEAnswerBaseline(b *testing.B) {
	in := benchStream()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	buf := make([]byte, 32<<10)
	for b.Loop() {
		// the wrappers hide WriterTo and ReaderFrom: a real read loop
		src, dst := struct{ io.Reader }{bytes.NewReader(in)}, struct{ io.Writer }{io.Discard}
		if _, err := io.CopyBuffer(dst, src, buf); err != nil {
			b.Fatal(err)
		}
	}
}
