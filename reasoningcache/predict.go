package reasoningcache

import (
	"encoding/json"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
)

// predict builds the assistant envelope(s) the client will send back for
// the visible output, in the request's shape, or returns a reason code
// when that cannot be known without guessing. Tool arguments are
// re-stringified as a JavaScript client does (see restringify).
//
// Chat: {"role":"assistant","content":<text or null>,"tool_calls":[{"id",
// "type":"function","function":{"name","arguments"}}]} (no tool_calls when
// there are none; custom calls come back as function calls).
//
// Responses shape: an assistant message item
// {"type":"message","role":"assistant","content":[{"type":"output_text",
// "text":...}]} when there is text, then one function_call
// {"type","call_id","name","arguments"} or custom_tool_call
// {"type","call_id","name","input"} item per call.
func predict(shape canonical.Shape, v *Sent) ([]json.RawMessage, string) {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type chatCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	args := make([]string, len(v.ToolCalls))
	for i, c := range v.ToolCalls {
		a, ok := restringify(c.Arguments)
		switch {
		case ok:
			args[i] = a
		case c.Custom && !looksLikeJSON(c.Arguments):
			// Free-form custom input is not JSON; a client keeps it as is.
			args[i] = c.Arguments
		default:
			return nil, "unsafe_arguments"
		}
	}
	if shape == canonical.ShapeChat {
		msg := struct {
			Role      string     `json:"role"`
			Content   *string    `json:"content"`
			ToolCalls []chatCall `json:"tool_calls,omitempty"`
		}{Role: "assistant"}
		if v.Content != "" {
			msg.Content = &v.Content
		}
		for i, c := range v.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, chatCall{ID: c.ID, Type: "function", Function: fn{Name: c.Name, Arguments: args[i]}})
		}
		b, err := json.Marshal(msg)
		if err != nil {
			return nil, "prediction_failed"
		}
		return []json.RawMessage{b}, ""
	}
	var out []json.RawMessage
	add := func(x any) bool {
		b, err := json.Marshal(x)
		if err != nil {
			return false
		}
		out = append(out, b)
		return true
	}
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if v.Content != "" && !add(struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []part `json:"content"`
	}{"message", "assistant", []part{{"output_text", v.Content}}}) {
		return nil, "prediction_failed"
	}
	for i, c := range v.ToolCalls {
		var ok bool
		if c.Custom {
			ok = add(struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
				Name   string `json:"name"`
				Input  string `json:"input"`
			}{"custom_tool_call", c.ID, c.Name, args[i]})
		} else {
			ok = add(struct {
				Type      string `json:"type"`
				CallID    string `json:"call_id"`
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			}{"function_call", c.ID, c.Name, args[i]})
		}
		if !ok {
			return nil, "prediction_failed"
		}
	}
	return out, ""
}

// looksLikeJSON reports whether s starts like a JSON object or array, in
// which case a client would try to parse it.
func looksLikeJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return false
}
