package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// sdkStream decodes client frames with the official Go SDK's SSE stream and
// chat accumulator, the way a Chat Completions client would.
func sdkStream(t *testing.T, out []byte) (openai.ChatCompletionAccumulator, error) {
	t.Helper()
	res := &http.Response{
		Header: http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:   io.NopCloser(bytes.NewReader(out)),
	}
	stream := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("accumulator rejected a chunk")
		}
	}
	return acc, stream.Err()
}

func TestSDKAccumulatesStream(t *testing.T) {
	out, _ := runStream(t, streamOpts, parseSSE(t, readFile(t, "testdata/streams/wire6b.sse")))
	acc, err := sdkStream(t, out)
	if err != nil {
		t.Fatal(err)
	}
	if acc.ID != "chatcmpl-B1" || len(acc.Choices) != 1 || acc.Usage.TotalTokens != 308 ||
		acc.Usage.PromptTokensDetails.CachedTokens != 128 || acc.Usage.CompletionTokensDetails.ReasoningTokens != 64 {
		t.Fatalf("accumulated %+v", acc.ChatCompletion)
	}
	c := acc.Choices[0]
	calls := c.Message.ToolCalls
	if c.FinishReason != "tool_calls" || len(calls) != 2 ||
		calls[0].ID != "call_Xa1" || calls[0].Function.Name != "read_file" || calls[0].Function.Arguments != `{"path":"src/app.ts"}` ||
		calls[1].ID != "call_Xb2" || calls[1].Function.Name != "grep" || calls[1].Function.Arguments != `{"pattern":"parseConfig"}` {
		t.Errorf("choice %+v", c)
	}

	out, _ = runStream(t, streamOpts, parseSSE(t, readFile(t, "testdata/streams/wire6a.sse")))
	acc, err = sdkStream(t, out)
	if err != nil || acc.Choices[0].Message.Content != "17 × 23 = 391" || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("6a: %v %+v", err, acc.ChatCompletion)
	}
}

func TestSDKSeesErrorFrame(t *testing.T) {
	out, _ := runStream(t, streamOpts, []sseEvent{ev(evCreated),
		ev(`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}`)})
	if _, err := sdkStream(t, out); err == nil {
		t.Fatal("the SDK did not report the error frame")
	}
}

func TestSDKDecodesCompletion(t *testing.T) {
	body, aerr := ChatCompletion(readFile(t, "testdata/completions/text_and_calls.in.json"), streamOpts)
	if aerr != nil {
		t.Fatal(aerr)
	}
	var c openai.ChatCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	m := c.Choices[0].Message
	if m.Content != "Applying the patch." || len(m.ToolCalls) != 2 || m.ToolCalls[0].Function.Name != "ApplyPatch" ||
		c.Usage.PromptTokensDetails.CachedTokens != 40 {
		t.Errorf("decoded %+v", c)
	}
}

// TestSDKDecodesRequestBodies checks that the upstream bodies translated
// from Chat bodies are Responses requests the SDK can read with every input
// item intact. (Responses-shaped bodies pass their items through untouched;
// the SDK's decoder drops a message item written without "type", which the
// API itself accepts.)
func TestSDKDecodesRequestBodies(t *testing.T) {
	for _, name := range []string{"wire6a", "wire6b", "wire6b_turn2", "chat_full", "alias_defaults"} {
		req, aerr := Translate(readFile(t, "testdata/requests/"+name+".in.json"), testConfig())
		if aerr != nil {
			t.Fatal(aerr)
		}
		body, _ := req.Body()
		var p responses.ResponseNewParams
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(p.Input.OfInputItemList) != len(req.Input) {
			t.Errorf("%s: SDK sees %d input items, want %d", name, len(p.Input.OfInputItemList), len(req.Input))
		}
	}
}
