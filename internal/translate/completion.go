package translate

import (
	"encoding/json"
	"strings"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// ChatOptions are fixed per client response.
type ChatOptions struct {
	// ID is the fallback chat id ("chatcmpl-..."), used when the upstream gives none.
	ID string
	// Created is the fallback created time (unix seconds).
	Created int64
	// Model is the fallback model.
	Model string
	// IncludeUsage adds the usage chunk to a stream.
	IncludeUsage bool
	// RecordLimit bounds, for a stream, the bytes of original output
	// items kept for the reasoning cache: the output_item.done copies and
	// the terminal output each. Past it the copies are dropped as they
	// accumulate and Stream.RecordExceeded reports it; the client's
	// answer is unaffected. 0 means no limit.
	RecordLimit int64
	// RecordGrow, when set, is asked before a stream keeps n more bytes
	// of copies (the reasoning cache charges them to its memory budget);
	// false drops the recording as RecordLimit does.
	RecordGrow func(n int64) bool
}

// Completion is a converted non-streaming answer.
type Completion struct {
	// Body is the chat.completion JSON body.
	Body []byte
	// ResponseID is the upstream response id.
	ResponseID string
	// Output holds the upstream output items as received.
	Output []json.RawMessage
	// Usage is the upstream usage, nil when absent.
	Usage *Usage
	// FinishReason is the Chat finish_reason sent.
	FinishReason string
	// Sent is what the client received.
	Sent Sent
	// Status is the response status (completed or incomplete).
	Status string
	// Snapshot is the model named by the response (the snapshot that
	// produced the output).
	Snapshot string
}

// ChatCompletion converts a non-streaming Responses JSON body into a
// chat.completion JSON body.
func ChatCompletion(body []byte, opts ChatOptions) ([]byte, *apierr.Error) {
	c, err := ConvertCompletion(body, opts)
	if err != nil {
		return nil, err
	}
	return c.Body, nil
}

// chatID derives the Chat id from a Responses id.
func chatID(respID, fallback string) string {
	if respID == "" {
		return fallback
	}
	return "chatcmpl-" + strings.TrimPrefix(respID, "resp_")
}

// ConvertCompletion converts a non-streaming Responses JSON body and
// returns the chat.completion body together with what later work needs:
// the output items, the usage and what the client received. A failed
// response becomes its mapped error; any status other than completed,
// incomplete or failed, or a body that is not a Responses object, is a 502.
func ConvertCompletion(body []byte, opts ChatOptions) (*Completion, *apierr.Error) {
	var r upstreamResponse
	if err := decodeResponse(body, &r, false); err != nil {
		return nil, badUpstream("The upstream answer is not a valid Responses object.")
	}
	if (r.Object != "" && r.Object != "response") || r.Status == "" {
		return nil, badUpstream("The upstream answer is not a Responses object.")
	}
	switch r.Status {
	case "completed", "incomplete":
	case "failed":
		return nil, failure(r.Error, false)
	default:
		return nil, badUpstream("The upstream response ended with status '" + r.Status + "'.")
	}
	c := &Completion{ResponseID: r.ID, Output: r.Output, Usage: r.Usage}
	var content, refusal strings.Builder
	hasText, hasRefusal := false, false
	for _, raw := range r.Output {
		var it outputItem
		if err := decodeItem(raw, &it, true); err != nil {
			return nil, badUpstream("The upstream answer has a malformed output item.")
		}
		switch {
		case it.Type == "message":
			for _, p := range it.Content {
				switch p.Type {
				case "output_text":
					content.WriteString(p.Text)
					hasText = true
				case "refusal":
					refusal.WriteString(p.Refusal)
					hasRefusal = true
				}
			}
		case it.isCall():
			c.Sent.ToolCalls = append(c.Sent.ToolCalls, ToolCall{
				ID: it.CallID, Name: it.Name, Arguments: it.payload(), Custom: it.Type == "custom_tool_call",
			})
		}
	}
	c.Sent.Content, c.Sent.Refusal = content.String(), refusal.String()
	reason := ""
	if r.IncompleteDetails != nil {
		reason = r.IncompleteDetails.Reason
	}
	c.FinishReason = finishReason(r.Status, reason, len(c.Sent.ToolCalls) > 0)
	c.Status, c.Snapshot = r.Status, r.Model

	created, model := opts.Created, opts.Model
	if r.CreatedAt > 0 && r.CreatedAt < 1e15 {
		created = int64(r.CreatedAt)
	}
	if r.Model != "" {
		model = r.Model
	}
	b := make([]byte, 0, 256+content.Len()+refusal.Len())
	b = append(b, `{"id":`...)
	b = appendString(b, chatID(r.ID, opts.ID))
	b = append(b, `,"object":"chat.completion","created":`...)
	b = appendInt(b, created)
	b = append(b, `,"model":`...)
	b = appendString(b, model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if hasText {
		b = appendString(b, c.Sent.Content)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"refusal":`...)
	if hasRefusal {
		b = appendString(b, c.Sent.Refusal)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"annotations":[]`...)
	if len(c.Sent.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range c.Sent.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendString(b, tc.ID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendString(b, tc.Name)
			b = append(b, `,"arguments":`...)
			b = appendString(b, tc.Arguments)
			b = append(b, '}', '}')
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	b = appendString(b, c.FinishReason)
	b = append(b, '}', ']')
	if r.Usage != nil {
		b = append(b, `,"usage":`...)
		b = appendChatUsage(b, r.Usage)
	}
	if r.ServiceTier != "" {
		b = append(b, `,"service_tier":`...)
		b = appendString(b, r.ServiceTier)
	}
	c.Body = append(b, '}')
	return c, nil
}
