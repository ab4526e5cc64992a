package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

var readFileTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "read_file",
	Description: openai.String("Read a file"),
	Parameters: shared.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}},
		"required":   []string{"path"},
	},
})

var grepTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name: "grep",
	Parameters: shared.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"pattern": map[string]any{"type": "string"}},
		"required":   []string{"pattern"},
	},
})

// TestChatJSON: a plain non-streaming conversation through the alias.
func TestChatJSON(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	var raw []byte
	comp, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: "cursor-fast",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are terse."),
			userMsg("json-hello-1"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = raw
	if len(comp.Choices) != 1 {
		t.Fatalf("choices = %d", len(comp.Choices))
	}
	ch := comp.Choices[0]
	if ch.FinishReason != "stop" || !strings.Contains(ch.Message.Content, "json-hello-1") {
		t.Fatalf("finish %q content %q", ch.FinishReason, ch.Message.Content)
	}
	if comp.Object != "chat.completion" || !strings.HasPrefix(comp.ID, "chatcmpl-") || comp.Created == 0 {
		t.Fatalf("envelope %s %s %d", comp.Object, comp.ID, comp.Created)
	}
	if comp.Usage.TotalTokens == 0 || comp.Usage.CompletionTokensDetails.ReasoningTokens == 0 {
		t.Fatalf("usage %+v", comp.Usage)
	}

	// what reached the upstream: the alias resolved, reasoning forced
	up := r.upstreamBody(t, "json-hello-1")
	if up["model"] != "gpt-5.2" || up["store"] != false {
		t.Fatalf("upstream model %v store %v", up["model"], up["store"])
	}
	reasoning, _ := up["reasoning"].(map[string]any)
	if reasoning["effort"] != "low" || reasoning["summary"] != "auto" {
		t.Fatalf("reasoning %v", reasoning)
	}
	if !slices.Contains(toStrings(up["include"]), "reasoning.encrypted_content") {
		t.Fatalf("include %v", up["include"])
	}
	if text, _ := up["text"].(map[string]any); text["verbosity"] != "low" {
		t.Fatalf("text %v", up["text"])
	}
	if _, ok := up["messages"]; ok {
		t.Fatal("chat field leaked upstream")
	}
}

// TestChatDefaultEffortAndNoReasoning: default_effort fills a raw model;
// a no_reasoning alias gets neither store:false nor the include, and a
// caller's explicit store survives there.
func TestChatDefaultEffortAndNoReasoning(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(otherToken)
	if _, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: "gpt-5.2-codex", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("effort-default-2")},
	}); err != nil {
		t.Fatal(err)
	}
	up := r.upstreamBody(t, "effort-default-2")
	if reasoning, _ := up["reasoning"].(map[string]any); reasoning["effort"] != "medium" {
		t.Fatalf("reasoning %v", up["reasoning"])
	}
	if _, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: "plain", Store: openai.Bool(true),
		Messages: []openai.ChatCompletionMessageParamUnion{userMsg("no-reasoning-3")},
	}); err != nil {
		t.Fatal(err)
	}
	up = r.upstreamBody(t, "no-reasoning-3")
	if up["model"] != "gpt-4.1" || up["store"] != true || up["include"] != nil || up["reasoning"] != nil {
		t.Fatalf("no_reasoning request went up as %v", up)
	}
}

// TestChatStream: SSE with include_usage, accumulated by the SDK.
func TestChatStream(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	stream := c.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{
		Model:         "cursor-fast",
		Messages:      []openai.ChatCompletionMessageParamUnion{userMsg("stream-hello-4")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	ids := map[string]bool{}
	chunks, usageChunks := 0, 0
	for stream.Next() {
		ch := stream.Current()
		chunks++
		ids[ch.ID] = true
		if !acc.AddChunk(ch) {
			t.Fatalf("accumulator rejected chunk %d", chunks)
		}
		if len(ch.Choices) == 0 {
			usageChunks++
			if ch.Usage.TotalTokens == 0 || ch.Usage.PromptTokensDetails.CachedTokens == 0 {
				t.Fatalf("usage chunk %+v", ch.Usage)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || usageChunks != 1 || chunks < 4 {
		t.Fatalf("ids %v, usage chunks %d, chunks %d", ids, usageChunks, chunks)
	}
	msg := acc.Choices[0]
	if msg.FinishReason != "stop" || !strings.Contains(msg.Message.Content, "stream-hello-4") {
		t.Fatalf("accumulated %q finish %q", msg.Message.Content, msg.FinishReason)
	}
	if up := r.upstreamRequest(t, "stream-hello-4"); !up.Stream || strings.Contains(string(up.Body), "stream_options") {
		t.Fatalf("upstream stream=%v body has stream_options: %s", up.Stream, up.Body)
	}
}

// TestChatToolsRoundTrip: a tool call, then its result, JSON and SSE,
// with single and parallel calls; the fake checks that every
// function_call_output refers to a call it saw in the same input.
func TestChatToolsRoundTrip(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	for _, streaming := range []bool{false, true} {
		for _, scenario := range []string{"tool", "parallel_tools"} {
			name := scenario
			if streaming {
				name += "/sse"
			}
			t.Run(name, func(t *testing.T) {
				marker := "tools-" + name + " [[" + scenario + "]]"
				params := openai.ChatCompletionNewParams{
					Model:    "cursor-fast",
					Tools:    []openai.ChatCompletionToolUnionParam{readFileTool, grepTool},
					Messages: []openai.ChatCompletionMessageParamUnion{userMsg(marker)},
				}
				msg := complete(t, c, params, streaming)
				want := 1
				if scenario == "parallel_tools" {
					want = 2
				}
				if msg.FinishReason != "tool_calls" || len(msg.Message.ToolCalls) != want {
					t.Fatalf("finish %q, %d tool calls", msg.FinishReason, len(msg.Message.ToolCalls))
				}
				for _, tc := range msg.Message.ToolCalls {
					if tc.Type != "function" || tc.ID == "" || tc.Function.Name == "" || !json.Valid([]byte(tc.Function.Arguments)) {
						t.Fatalf("tool call %+v", tc)
					}
				}
				// next turn: Cursor sends the calls back with their results
				params.Messages = append(params.Messages, msg.Message.ToParam())
				for _, tc := range msg.Message.ToolCalls {
					params.Messages = append(params.Messages, openai.ToolMessage("result of "+tc.ID, tc.ID))
				}
				next := complete(t, c, params, streaming)
				if next.FinishReason != "stop" || !strings.Contains(next.Message.Content, msg.Message.ToolCalls[0].ID) {
					t.Fatalf("second turn %q %q", next.FinishReason, next.Message.Content)
				}
			})
		}
	}
}

// TestChatImage: an image part reaches the upstream as input_image with
// a flat URL and detail.
func TestChatImage(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	_, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: "cursor-fast",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("image-6 what is this?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBORw0KGgo="}),
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	up := r.upstreamBody(t, "image-6")
	input := up["input"].([]any)
	parts := input[0].(map[string]any)["content"].([]any)
	img := parts[1].(map[string]any)
	if img["type"] != "input_image" || img["image_url"] != "data:image/png;base64,iVBORw0KGgo=" || img["detail"] != "auto" {
		t.Fatalf("image part %v", img)
	}
}

// TestChatRefusalAndFinishReasons: refusals are visible; incomplete
// answers map to length and content_filter, JSON and SSE.
func TestChatRefusalAndFinishReasons(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	for _, streaming := range []bool{false, true} {
		p := func(tag string) openai.ChatCompletionNewParams {
			return openai.ChatCompletionNewParams{Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg(tag)}}
		}
		msg := complete(t, c, p("refuse [[refusal]]"), streaming)
		if msg.Message.Refusal == "" || msg.FinishReason != "stop" {
			t.Fatalf("stream=%v refusal %q finish %q", streaming, msg.Message.Refusal, msg.FinishReason)
		}
		if msg := complete(t, c, p("long [[length]]"), streaming); msg.FinishReason != "length" {
			t.Fatalf("stream=%v length: finish %q", streaming, msg.FinishReason)
		}
		if msg := complete(t, c, p("filtered [[content_filter]]"), streaming); msg.FinishReason != "content_filter" {
			t.Fatalf("stream=%v content_filter: finish %q", streaming, msg.FinishReason)
		}
	}
}

// complete runs one request, streaming or not, and returns the (possibly
// accumulated) choice.
func complete(t *testing.T, c openai.Client, params openai.ChatCompletionNewParams, streaming bool) openai.ChatCompletionChoice {
	t.Helper()
	if !streaming {
		comp, err := c.Chat.Completions.New(ctx(t), params)
		if err != nil {
			t.Fatal(err)
		}
		if len(comp.Choices) != 1 {
			t.Fatalf("choices %d", len(comp.Choices))
		}
		return comp.Choices[0]
	}
	stream := c.Chat.Completions.NewStreaming(ctx(t), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatal("accumulator rejected a chunk")
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("choices %d", len(acc.Choices))
	}
	return acc.Choices[0]
}

func toStrings(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
