package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// historySizes are the Cursor-like history sizes the relay's benchmarks
// measure: a short chat, a long agent run and a very long one.
var historySizes = []struct {
	name string
	size int
}{{"20KB", 20 << 10}, {"200KB", 200 << 10}, {"2MB", 2 << 20}}

// BenchmarkRequest measures the relay's whole cache-off request work:
// validation, translation and the upstream body parts the relay sends.
// Compare its MB/s with BenchmarkRequestBaseline (json.Valid over the same
// bytes) in the same run.
func BenchmarkRequest(b *testing.B) {
	cfg := testConfig()
	for _, hs := range historySizes {
		body := cursorBody(hs.size)
		b.Run(hs.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req, aerr := Translate(body, cfg)
				if aerr != nil {
					b.Fatal(aerr)
				}
				if _, _, err := req.BodyParts(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRequestBaseline is json.Valid over the bodies BenchmarkRequest
// translates: the cost of reading the body once with the standard library.
func BenchmarkRequestBaseline(b *testing.B) {
	for _, hs := range historySizes {
		body := cursorBody(hs.size)
		b.Run(hs.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(body) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// answerEvents returns the SSE events (name and data) of a typical agent
// answer: reasoning with encrypted content, a streamed text message of
// many small deltas and a streamed function call, then the terminal
// response.completed with the whole output and usage.
func answerEvents() [][2]string {
	enc := strings.Repeat("gAAAAABpZ3Jhc3NfY2lwaGVydGV4dA", 200) // ~6 KB of ciphertext
	reasoning := fmt.Sprintf(`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"**Reading** the handler"}],"encrypted_content":%q}`, enc)
	var text strings.Builder
	var evs [][2]string
	add := func(typ, data string) { evs = append(evs, [2]string{typ, data}) }
	seq := 0
	ev := func(typ, rest string) {
		add(typ, fmt.Sprintf(`{"type":%q,"sequence_number":%d,%s}`, typ, seq, rest))
		seq++
	}
	resp := func(status, output, usage string) string {
		return fmt.Sprintf(`"response":{"id":"resp_B1","object":"response","created_at":1767225600,"status":%q,"model":"gpt-5.2","output":[%s],"usage":%s}`, status, output, usage)
	}
	ev("response.created", resp("in_progress", "", "null"))
	ev("response.in_progress", resp("in_progress", "", "null"))
	ev("response.output_item.added", `"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}`)
	ev("response.output_item.done", `"output_index":0,"item":`+reasoning)
	ev("response.output_item.added", `"output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant","status":"in_progress","content":[]}`)
	ev("response.content_part.added", `"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`)
	words := []string{"I", " changed", " the", " status", " code", " to", " 400", " and", " hid", " the", " internal", " error", ".\n", "```go\n", "http.Error(w, \"bad config\", 400)", "\n```"}
	for i := 0; i < 240; i++ {
		w := words[i%len(words)]
		text.WriteString(w)
		d, _ := json.Marshal(w)
		ev("response.output_text.delta", fmt.Sprintf(`"item_id":"msg_1","output_index":1,"content_index":0,"delta":%s,"logprobs":[]`, d))
	}
	tq, _ := json.Marshal(text.String())
	ev("response.output_text.done", fmt.Sprintf(`"item_id":"msg_1","output_index":1,"content_index":0,"text":%s,"logprobs":[]`, tq))
	ev("response.content_part.done", fmt.Sprintf(`"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":%s,"annotations":[]}`, tq))
	msg := fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":%s,"annotations":[],"logprobs":[]}]}`, tq)
	ev("response.output_item.done", `"output_index":1,"item":`+msg)
	ev("response.output_item.added", `"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_9","name":"read_file","arguments":""}`)
	args := `{"path":"internal/translate/chat.go","start_line":1,"end_line":200}`
	for i := 0; i < len(args); i += 8 {
		d, _ := json.Marshal(args[i:min(i+8, len(args))])
		ev("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":"fc_1","output_index":2,"delta":%s`, d))
	}
	aq, _ := json.Marshal(args)
	ev("response.function_call_arguments.done", fmt.Sprintf(`"item_id":"fc_1","output_index":2,"arguments":%s`, aq))
	call := fmt.Sprintf(`{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_9","name":"read_file","arguments":%s}`, aq)
	ev("response.output_item.done", `"output_index":2,"item":`+call)
	usage := `{"input_tokens":52000,"input_tokens_details":{"cached_tokens":51000},"output_tokens":900,"output_tokens_details":{"reasoning_tokens":600},"total_tokens":52900}`
	ev("response.completed", resp("completed", reasoning+","+msg+","+call, usage))
	return evs
}

// answerBody is the non-streaming Responses object of the same answer.
func answerBody() []byte {
	evs := answerEvents()
	var r struct{ Response json.RawMessage }
	if err := json.Unmarshal([]byte(evs[len(evs)-1][1]), &r); err != nil {
		panic(err)
	}
	return r.Response
}

// BenchmarkCompletion measures converting a non-streaming answer; compare
// with BenchmarkCompletionBaseline (json.Valid over the same bytes).
func BenchmarkCompletion(b *testing.B) {
	body := answerBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, aerr := ConvertCompletion(body, ChatOptions{ID: "chatcmpl-x", Created: 1, Model: "m"}); aerr != nil {
			b.Fatal(aerr)
		}
	}
}

// BenchmarkCompletionBaseline is json.Valid over BenchmarkCompletion's body.
func BenchmarkCompletionBaseline(b *testing.B) {
	body := answerBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if !json.Valid(body) {
			b.Fatal("invalid")
		}
	}
}

// answerData returns answerEvents with each event's data as bytes and
// sets the benchmark's byte count to their total.
func answerData(b *testing.B) ([][2]string, [][]byte) {
	evs := answerEvents()
	datas := make([][]byte, len(evs))
	n := 0
	for i, e := range evs {
		datas[i] = []byte(e[1])
		n += len(e[1])
	}
	b.SetBytes(int64(n))
	return evs, datas
}

// BenchmarkStreamAnswer converts a whole streamed answer event by event
// (bytes are the events' data); ns/op divided by the event count is the
// cost per event. Compare with BenchmarkStreamAnswerBaseline.
func BenchmarkStreamAnswer(b *testing.B) {
	evs, datas := answerData(b)
	b.ReportAllocs()
	b.ReportMetric(float64(len(evs)), "events/op")
	dst := make([]byte, 0, 4096)
	for b.Loop() {
		s := NewStream(ChatOptions{ID: "chatcmpl-x", Created: 1, Model: "m", IncludeUsage: true})
		for i, e := range evs {
			var err error
			dst, _, err = s.Event(dst[:0], e[0], datas[i])
			if err != nil {
				b.Fatal(err)
			}
		}
		dst = s.Finish(dst[:0])
		_ = s.Output()
		_ = s.DoneItems()
		_ = s.Sent()
	}
}

// BenchmarkStreamAnswerBaseline is json.Valid over each event of
// BenchmarkStreamAnswer.
func BenchmarkStreamAnswerBaseline(b *testing.B) {
	_, datas := answerData(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range datas {
			if !json.Valid(d) {
				b.Fatal("invalid")
			}
		}
	}
}

// TestAnswerEventsConvert checks the benchmark's answer converts cleanly,
// so the benchmarks measure the success path.
func TestAnswerEventsConvert(t *testing.T) {
	s := NewStream(ChatOptions{ID: "chatcmpl-x", Created: 1, Model: "m"})
	var out []byte
	for _, e := range answerEvents() {
		var err error
		if out, _, err = s.Event(out, e[0], []byte(e[1])); err != nil {
			t.Fatal(err)
		}
	}
	out = s.Finish(out)
	if !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) || len(s.Sent().ToolCalls) != 1 {
		t.Fatalf("bad stream: %s", out[max(len(out)-300, 0):])
	}
	c, aerr := ConvertCompletion(answerBody(), ChatOptions{})
	if aerr != nil || c.Sent.Content != s.Sent().Content {
		t.Fatalf("completion %v", aerr)
	}
}
