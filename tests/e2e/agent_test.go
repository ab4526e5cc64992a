package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// applyPatchTool is the flat custom grammar tool Cursor's Agent mode sends.
const applyPatchTool = `{"type":"custom","name":"ApplyPatch","description":"Apply a patch","format":{"type":"grammar","syntax":"lark","definition":"start: begin_patch hunk end_patch"}}`

// agentBody builds a Responses-shaped body as Cursor's Agent mode posts it
// to /chat/completions.
func agentBody(t *testing.T, stream bool, input []any) []byte {
	t.Helper()
	body := map[string]any{
		"model":          "cursor-fast",
		"input":          input,
		"tools":          []json.RawMessage{json.RawMessage(applyPatchTool), json.RawMessage(`{"type":"function","name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"strict":false}`)},
		"reasoning":      map[string]any{"effort": "high"},
		"text":           map[string]any{"verbosity": "medium"},
		"include":        []string{"message.output_text.logprobs"},
		"stream":         stream,
		"stream_options": map[string]any{"include_usage": true},
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAgentModeCustomTool: a Responses-shaped body with a custom grammar
// tool gets its custom call back as a function call with the raw patch in
// arguments (what Cursor needs), and the next turn sends that call back
// upstream as a custom_tool_call the fake accepts.
func TestAgentModeCustomTool(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	for _, streaming := range []bool{false, true} {
		marker := "agent-patch-" + map[bool]string{false: "json", true: "sse"}[streaming]
		input := []any{
			map[string]any{"type": "message", "role": "developer", "content": "You are an agent."},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": marker + " [[custom_tool]]"}}},
		}
		msg := completeRaw(t, c, agentBody(t, streaming, input), streaming)
		if msg.FinishReason != "tool_calls" || len(msg.Message.ToolCalls) != 1 {
			t.Fatalf("finish %q calls %d", msg.FinishReason, len(msg.Message.ToolCalls))
		}
		call := msg.Message.ToolCalls[0]
		if call.Type != "function" || call.Function.Name != "ApplyPatch" || !strings.Contains(call.Function.Arguments, "*** Begin Patch") {
			t.Fatalf("custom call returned as %+v", call)
		}
		up := r.upstreamBody(t, marker)
		if up["store"] != false || up["stream_options"] != nil {
			t.Fatalf("upstream store %v stream_options %v", up["store"], up["stream_options"])
		}
		// the shared relay runs without the cache: the caller's explicit
		// include survives (it is merged only for cached requests)
		inc := toStrings(up["include"])
		if len(inc) != 1 || inc[0] != "message.output_text.logprobs" {
			t.Fatalf("include %v", inc)
		}
		if reasoning, _ := up["reasoning"].(map[string]any); reasoning["effort"] != "high" {
			t.Fatalf("request effort overridden: %v", reasoning)
		}

		// Cursor's next turn in Agent mode: the call and its output as items
		input = append(input,
			map[string]any{"type": "custom_tool_call", "call_id": call.ID, "name": "ApplyPatch", "input": call.Function.Arguments},
			map[string]any{"type": "custom_tool_call_output", "call_id": call.ID, "output": "Done!"},
		)
		next := completeRaw(t, c, agentBody(t, streaming, input), streaming)
		if next.FinishReason != "stop" || !strings.Contains(next.Message.Content, call.ID) {
			t.Fatalf("second turn %q %q", next.FinishReason, next.Message.Content)
		}
	}
}

// TestChatCustomToolAsFunction: in a classic Chat body, a custom tool call
// that we returned as type function comes back as a function tool call;
// it must go upstream as custom_tool_call (the fake rejects a
// function_call for a custom tool's output otherwise).
func TestChatCustomToolAsFunction(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionCustomTool(openai.ChatCompletionCustomToolCustomParam{
		Name: "ApplyPatch", Description: openai.String("Apply a patch"),
	})}
	params := openai.ChatCompletionNewParams{
		Model: "cursor-fast", Tools: tools,
		Messages: []openai.ChatCompletionMessageParamUnion{userMsg("chat-custom-9 [[custom_tool]]")},
	}
	msg := complete(t, c, params, true)
	if len(msg.Message.ToolCalls) != 1 || msg.Message.ToolCalls[0].Function.Name != "ApplyPatch" {
		t.Fatalf("calls %+v", msg.Message.ToolCalls)
	}
	call := msg.Message.ToolCalls[0]
	params.Messages = append(params.Messages, msg.Message.ToParam(), openai.ToolMessage("Done-chat-9", call.ID))
	next := complete(t, c, params, false)
	if !strings.Contains(next.Message.Content, call.ID) {
		t.Fatalf("second turn %q", next.Message.Content)
	}
	up := r.upstreamBody(t, "Done-chat-9")
	items := up["input"].([]any)
	var types []string
	for _, it := range items {
		types = append(types, it.(map[string]any)["type"].(string))
	}
	if strings.Join(types, ",") != "message,custom_tool_call,custom_tool_call_output" {
		t.Fatalf("upstream items %v", types)
	}
}

// completeRaw posts a raw body to /chat/completions through the SDK.
func completeRaw(t *testing.T, c openai.Client, body []byte, streaming bool, extra ...option.RequestOption) openai.ChatCompletionChoice {
	t.Helper()
	opts := append([]option.RequestOption{option.WithRequestBody("application/json", body)}, extra...)
	if !streaming {
		comp, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return comp.Choices[0]
	}
	stream := c.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{}, opts...)
	var acc openai.ChatCompletionAccumulator
	usage := false
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) == 0 && ch.Usage.TotalTokens > 0 {
			usage = true
		}
		acc.AddChunk(ch)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if !usage {
		t.Fatal("stream_options.include_usage in a Responses-shaped body produced no usage chunk")
	}
	return acc.Choices[0]
}
