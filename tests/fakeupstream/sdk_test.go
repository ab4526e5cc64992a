package fakeupstream

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// sdkClient returns an official Go SDK client pointed at the fake.
func sdkClient(t *testing.T) (*Server, openai.Client) {
	t.Helper()
	s, ts := newTest(t, Options{})
	c := openai.NewClient(option.WithAPIKey(testKey), option.WithBaseURL(ts.URL+"/v1/"),
		option.WithHTTPClient(ts.Client()), option.WithMaxRetries(0))
	return s, c
}

// sdkTools are function and custom tools built with the SDK's helpers.
func sdkTools() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{
		responses.ToolParamOfFunction("read_file", map[string]any{"type": "object",
			"properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}, true),
		responses.ToolParamOfFunction("grep", map[string]any{"type": "object",
			"properties": map[string]any{"pattern": map[string]any{"type": "string"}}, "required": []string{"pattern"}}, false),
		responses.ToolParamOfCustom("ApplyPatch"),
	}
}

// params builds stateless request parameters with the given input.
func params(input responses.ResponseInputParam) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:     shared.ResponsesModel("gpt-5.2"),
		Input:     responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		Store:     openai.Bool(false),
		Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow, Summary: shared.ReasoningSummaryAuto},
		Tools:     sdkTools(),
	}
}

// userMsg is an SDK easy input message from the user.
func userMsg(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

// streamed is what an SDK stream yielded.
type streamed struct {
	text     string
	args     map[string]string // item_id -> accumulated argument deltas
	input    map[string]string // item_id -> accumulated custom input deltas
	summary  string
	done     []responses.ResponseOutputItemUnion
	final    *responses.Response
	errEvent *responses.ResponseErrorEvent
	types    []string
}

// consume drains an SDK stream, failing on event types the SDK does not know.
func consume(t *testing.T, ctx context.Context, c openai.Client, p responses.ResponseNewParams) (streamed, error) {
	t.Helper()
	st := c.Responses.NewStreaming(ctx, p)
	defer st.Close()
	out := streamed{args: map[string]string{}, input: map[string]string{}}
	for st.Next() {
		ev := st.Current()
		out.types = append(out.types, ev.Type)
		switch e := ev.AsAny().(type) {
		case responses.ResponseTextDeltaEvent:
			out.text += e.Delta
		case responses.ResponseFunctionCallArgumentsDeltaEvent:
			out.args[e.ItemID] += e.Delta
		case responses.ResponseCustomToolCallInputDeltaEvent:
			out.input[e.ItemID] += e.Delta
		case responses.ResponseReasoningSummaryTextDeltaEvent:
			out.summary += e.Delta
		case responses.ResponseOutputItemDoneEvent:
			out.done = append(out.done, e.Item)
		case responses.ResponseCompletedEvent:
			r := e.Response
			out.final = &r
		case responses.ResponseErrorEvent:
			out.errEvent = &e
		case nil:
			t.Errorf("SDK does not know event type %q", ev.Type)
		}
	}
	return out, st.Err()
}

// toInput converts SDK output items into input items for the next turn,
// the way a stateless client replays them.
func toInput(items []responses.ResponseOutputItemUnion) responses.ResponseInputParam {
	var in responses.ResponseInputParam
	for _, it := range items {
		switch v := it.AsAny().(type) {
		case responses.ResponseReasoningItem:
			p := v.ToParam()
			in = append(in, responses.ResponseInputItemUnionParam{OfReasoning: &p})
		case responses.ResponseOutputMessage:
			p := v.ToParam()
			in = append(in, responses.ResponseInputItemUnionParam{OfOutputMessage: &p})
		case responses.ResponseFunctionToolCall:
			p := v.ToParam()
			in = append(in, responses.ResponseInputItemUnionParam{OfFunctionCall: &p})
		case responses.ResponseCustomToolCall:
			p := v.ToParam()
			in = append(in, responses.ResponseInputItemUnionParam{OfCustomToolCall: &p})
		}
	}
	return in
}

func TestSDKStreamingTextAndReplay(t *testing.T) {
	s, c := sdkClient(t)
	ctx := context.Background()
	first := responses.ResponseInputParam{userMsg("hello [[text]]")}
	got, err := consume(t, ctx, c, params(first))
	if err != nil {
		t.Fatal(err)
	}
	if got.text != "echo: hello" || got.final == nil || got.final.OutputText() != "echo: hello" || got.summary == "" {
		t.Fatalf("text %q summary %q final %v", got.text, got.summary, got.final)
	}
	u := got.final.Usage
	if got.final.Status != responses.ResponseStatusCompleted || u.InputTokensDetails.CachedTokens == 0 ||
		u.OutputTokensDetails.ReasoningTokens == 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Fatalf("final status %q usage %+v", got.final.Status, u)
	}
	rs := got.done[0].AsReasoning()
	if rs.EncryptedContent == "" || len(rs.Summary) != 1 {
		t.Fatalf("reasoning item %+v", rs)
	}
	if msg := got.done[1].AsMessage(); msg.Phase != "final_answer" || msg.Status != "completed" {
		t.Fatalf("message %+v", msg)
	}

	// Second turn, non-streaming: replay the SDK's own items (reasoning with id).
	second := append(append(first, toInput(got.done)...), userMsg("again"))
	resp, err := c.Responses.New(ctx, params(second))
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "echo: again" {
		t.Fatalf("second turn text %q", resp.OutputText())
	}
	reqs := s.Requests()
	if r := reqs[len(reqs)-1]; len(r.Replayed) != 1 || r.Replayed[0].ID != rs.ID || !r.Replayed[0].WithID ||
		r.Replayed[0].ResponseID != got.final.ID || r.Stream {
		t.Fatalf("recorded %+v", r)
	}
	if r := reqs[0]; r.Header.Get("Authorization") != "Bearer "+testKey || !r.Stream || r.Model != "gpt-5.2" {
		t.Fatalf("first request recorded %+v", r)
	}
}

func TestSDKParallelToolsRoundTrip(t *testing.T) {
	s, c := sdkClient(t)
	ctx := context.Background()
	first := responses.ResponseInputParam{userMsg("look [[parallel_tools]]")}
	got, err := consume(t, ctx, c, params(first))
	if err != nil {
		t.Fatal(err)
	}
	var calls []responses.ResponseFunctionToolCall
	for _, it := range got.final.Output {
		if it.Type == "function_call" {
			calls = append(calls, it.AsFunctionCall())
		}
	}
	if len(calls) != 2 || calls[0].Name != "read_file" || calls[1].Name != "grep" {
		t.Fatalf("calls %+v", calls)
	}
	for _, fc := range calls {
		if got.args[fc.ID] != fc.Arguments || !strings.HasPrefix(fc.Arguments, "{\"") {
			t.Fatalf("streamed args %q, final %q", got.args[fc.ID], fc.Arguments)
		}
	}
	next := append(append(first, toInput(got.done)...),
		callOutput(calls[0].CallID, "file body"), callOutput(calls[1].CallID, "grep hits"))
	got2, err := consume(t, ctx, c, params(next))
	if err != nil {
		t.Fatal(err)
	}
	if want := "tool results received: " + calls[0].CallID + ", " + calls[1].CallID; got2.text != want {
		t.Fatalf("text %q, want %q", got2.text, want)
	}
	if r := s.Requests(); len(r[1].Replayed) != 1 || r[1].Replayed[0].WithID != true {
		t.Fatalf("replayed %+v", r[1].Replayed)
	}
}

// callOutput is a function_call_output input item.
func callOutput(callID, output string) responses.ResponseInputItemUnionParam {
	it := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	it.OfFunctionCallOutput.CallID = openai.String(callID)
	return it
}

func TestSDKCustomTool(t *testing.T) {
	_, c := sdkClient(t)
	got, err := consume(t, context.Background(), c, params(responses.ResponseInputParam{userMsg("patch [[custom_tool]]")}))
	if err != nil {
		t.Fatal(err)
	}
	ct := got.final.Output[1].AsCustomToolCall()
	if ct.Name != "ApplyPatch" || ct.Input != applyPatch || got.input[ct.ID] != applyPatch {
		t.Fatalf("custom call %+v, streamed %q", ct, got.input[ct.ID])
	}
}

func TestSDKErrors(t *testing.T) {
	_, c := sdkClient(t)
	ctx := context.Background()
	var apiErr *openai.Error

	_, err := c.Responses.New(ctx, params(responses.ResponseInputParam{userMsg("[[http_error:429]]")}))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Code != "rate_limit_exceeded" {
		t.Fatalf("429: %v", err)
	}
	if _, err := consume(t, ctx, c, params(responses.ResponseInputParam{userMsg("[[http_error:500]]")})); !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Fatalf("streaming 500: %v", err)
	}
	// The nested error event carries a top-level "error" key, which the SDK raises.
	if _, err := consume(t, ctx, c, params(responses.ResponseInputParam{userMsg("[[error_nested]]")})); err == nil {
		t.Fatal("nested error event: no stream error")
	}
	// The documented flat shape decodes as a typed error event.
	got, err := consume(t, ctx, c, params(responses.ResponseInputParam{userMsg("[[error_flat:server_error]]")}))
	if err != nil || got.errEvent == nil || got.errEvent.Code != "server_error" || got.final != nil {
		t.Fatalf("flat error event: %v %+v", err, got.errEvent)
	}
	// Reasoning replayed by id without ciphertext: 404 like OpenAI.
	bad := responses.ResponseInputItemParamOfReasoning("rs_missing", []responses.ResponseReasoningItemSummaryParam{})
	_, err = c.Responses.New(ctx, params(responses.ResponseInputParam{userMsg("a"), bad, userMsg("b")}))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Param != "input" {
		t.Fatalf("404: %v", err)
	}
}
