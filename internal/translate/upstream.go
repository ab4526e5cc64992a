package translate

import (
	"encoding/json"
	"net/http"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// Usage is the token usage of a Responses answer.
type Usage struct {
	// InputTokens is usage.input_tokens.
	InputTokens int64 `json:"input_tokens"`
	// InputTokensDetails holds cached and cache-write token counts.
	InputTokensDetails struct {
		CachedTokens     int64  `json:"cached_tokens"`
		CacheWriteTokens *int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	// OutputTokens is usage.output_tokens.
	OutputTokens int64 `json:"output_tokens"`
	// OutputTokensDetails holds the reasoning token count.
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	// TotalTokens is usage.total_tokens.
	TotalTokens int64 `json:"total_tokens"`
}

// appendChatUsage appends u in Chat Completions form.
func appendChatUsage(b []byte, u *Usage) []byte {
	if u == nil {
		u = &Usage{}
	}
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, u.InputTokens)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, u.OutputTokens)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, u.TotalTokens)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, u.InputTokensDetails.CachedTokens)
	if u.InputTokensDetails.CacheWriteTokens != nil {
		b = append(b, `,"cache_write_tokens":`...)
		b = appendInt(b, *u.InputTokensDetails.CacheWriteTokens)
	}
	b = append(b, `},"completion_tokens_details":{"reasoning_tokens":`...)
	b = appendInt(b, u.OutputTokensDetails.ReasoningTokens)
	return append(b, '}', '}')
}

// ToolCall is one tool call as it was sent to the client.
type ToolCall struct {
	// ID is the call id (Responses call_id).
	ID string
	// Name is the function or custom tool name.
	Name string
	// Arguments is the function arguments, or the custom tool input.
	Arguments string
	// Custom reports that upstream produced a custom_tool_call, which the
	// client received as a function call.
	Custom bool
}

// Sent is what the client received for one answer.
type Sent struct {
	// Content is the concatenated visible text.
	Content string
	// Refusal is the concatenated refusal text.
	Refusal string
	// ToolCalls are the tool calls in the order of their Chat indices.
	ToolCalls []ToolCall
}

// upstreamResponse is the part of a Responses object the relay reads.
type upstreamResponse struct {
	ID                string                   `json:"id"`
	Object            string                   `json:"object"`
	CreatedAt         float64                  `json:"created_at"`
	Status            string                   `json:"status"`
	Model             string                   `json:"model"`
	ServiceTier       string                   `json:"service_tier"`
	Error             *upstreamError           `json:"error"`
	IncompleteDetails *struct{ Reason string } `json:"incomplete_details"`
	Output            []json.RawMessage        `json:"output"`
	Usage             *Usage                   `json:"usage"`
}

// upstreamError is the error object of a failed response or error event.
type upstreamError struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param"`
}

// outputItem is the part of an output item the relay reads.
type outputItem struct {
	Type      string       `json:"type"`
	ID        string       `json:"id"`
	CallID    string       `json:"call_id"`
	Name      string       `json:"name"`
	Arguments *string      `json:"arguments"`
	Input     *string      `json:"input"`
	Content   []outputPart `json:"content"`
}

// outputPart is one content part of an output message.
type outputPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

func (it *outputItem) isCall() bool {
	return it.Type == "function_call" || it.Type == "custom_tool_call"
}

// payload returns a call's arguments (function) or input (custom).
func (it *outputItem) payload() string {
	if it.Type == "custom_tool_call" {
		if it.Input != nil {
			return *it.Input
		}
		return ""
	}
	if it.Arguments != nil {
		return *it.Arguments
	}
	return ""
}

// finishReason maps a terminal status to a Chat finish_reason.
func finishReason(status, incomplete string, toolCalls bool) string {
	if status == "incomplete" {
		if incomplete == "content_filter" {
			return "content_filter"
		}
		// max_output_tokens and any other early stop.
		return "length"
	}
	if toolCalls {
		return "tool_calls"
	}
	return "stop"
}

// failure maps an upstream error to the client error. keepType keeps the
// upstream error type when it has one (stream error frames).
func failure(e *upstreamError, keepType bool) *apierr.Error {
	if e == nil {
		e = &upstreamError{}
	}
	msg := e.Message
	if msg == "" {
		msg = "The upstream response failed."
	}
	var out *apierr.Error
	switch e.Code {
	case "rate_limit_exceeded", "insufficient_quota":
		typ := e.Type
		if typ == "" {
			typ = e.Code
		}
		out = apierr.New(http.StatusTooManyRequests, typ, e.Code, msg)
	case "context_length_exceeded", "invalid_prompt":
		out = apierr.New(http.StatusBadRequest, apierr.TypeInvalidRequest, e.Code, msg)
	default:
		out = apierr.New(http.StatusBadGateway, apierr.TypeUpstream, e.Code, msg)
	}
	if keepType && e.Type != "" {
		out.Type = e.Type
	}
	out.Param = e.Param
	return out
}

// badUpstream is the 502 for an answer the relay cannot convert.
func badUpstream(msg string) *apierr.Error {
	return apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "", msg)
}
