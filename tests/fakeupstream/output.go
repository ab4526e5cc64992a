package fakeupstream

// Stages of an output item in a stream.
const (
	stageAdded     = iota // response.output_item.added: in progress, reasoning ciphertext incomplete
	stageDone             // response.output_item.done
	stageCompleted        // response.completed output and stream:false JSON
)

// summaryParts is the reasoning summary array of an item at its final stage.
func (it *outItem) summaryParts() []any {
	if it.Summary == "" {
		return []any{}
	}
	return []any{map[string]any{"type": "summary_text", "text": it.Summary}}
}

// part is a message content part holding text.
func (it *outItem) part(text string) map[string]any {
	if it.PartType == "refusal" {
		return map[string]any{"type": "refusal", "refusal": text}
	}
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

// json renders the item at a stage.
func (it *outItem) json(stage int) map[string]any {
	switch it.Type {
	case "reasoning":
		m := map[string]any{"type": "reasoning", "id": it.ID, "summary": it.summaryParts()}
		switch stage {
		case stageAdded:
			// As documented, the in-progress copy is incomplete; it never
			// verifies if a client replays it.
			m["summary"] = []any{}
			m["encrypted_content"] = it.Enc[:len(it.Enc)/2]
		case stageDone:
			m["encrypted_content"] = it.EncDone
		default:
			m["encrypted_content"] = it.Enc
		}
		return m
	case "message":
		m := map[string]any{"type": "message", "id": it.ID, "role": "assistant", "phase": "final_answer",
			"status": it.Status, "content": []any{it.part(it.Text)}}
		if stage == stageAdded {
			m["status"], m["content"] = "in_progress", []any{}
		}
		return m
	case "function_call":
		m := map[string]any{"type": "function_call", "id": it.ID, "call_id": it.CallID, "name": it.Name,
			"arguments": it.Text, "status": it.Status}
		if stage == stageAdded {
			m["arguments"], m["status"] = "", "in_progress"
		}
		return m
	default: // custom_tool_call
		m := map[string]any{"type": "custom_tool_call", "id": it.ID, "call_id": it.CallID, "name": it.Name,
			"input": it.Text, "status": it.Status}
		if stage == stageAdded {
			m["input"], m["status"] = "", "in_progress"
		}
		return m
	}
}

// output renders all items for response.completed / stream:false.
func (t *turn) output() []any {
	out := make([]any, len(t.items))
	for i, it := range t.items {
		out[i] = it.json(stageCompleted)
	}
	return out
}

// response builds a full Response object (WIRE §4) with the given status;
// settings echo the request, defaults are the API's.
func (t *turn) response(status string) map[string]any {
	f := t.p.fields
	echo := func(key string, def any) any {
		if v, ok := f[key]; ok && v != nil {
			return v
		}
		return def
	}
	reasoning := map[string]any{"effort": "medium", "summary": nil}
	if r, ok := f["reasoning"].(object); ok {
		if v, ok := r["effort"]; ok && v != nil {
			reasoning["effort"] = v
		}
		if t.p.summary != "" {
			reasoning["summary"] = t.p.summary
		}
	}
	text := map[string]any{"format": map[string]any{"type": "text"}, "verbosity": "medium"}
	if tx, ok := f["text"].(object); ok {
		for k, v := range tx {
			if v != nil {
				text[k] = v
			}
		}
	}
	m := map[string]any{
		"id": t.respID, "object": "response", "created_at": t.created, "status": status,
		"background": false, "error": nil, "incomplete_details": nil,
		"instructions": echo("instructions", nil), "max_output_tokens": echo("max_output_tokens", nil),
		"max_tool_calls": echo("max_tool_calls", nil), "model": t.p.model,
		"metadata": echo("metadata", map[string]any{}), "output": []any{},
		"parallel_tool_calls": echo("parallel_tool_calls", true), "previous_response_id": nil,
		"prompt_cache_key": echo("prompt_cache_key", nil), "reasoning": reasoning,
		"safety_identifier": echo("safety_identifier", nil), "service_tier": "default",
		"store": echo("store", true), "temperature": echo("temperature", 1.0), "text": text,
		"tool_choice": echo("tool_choice", "auto"), "tools": echo("tools", []any{}),
		"top_logprobs": echo("top_logprobs", 0), "top_p": echo("top_p", 1.0),
		"truncation": echo("truncation", "disabled"), "usage": nil, "user": echo("user", nil),
	}
	switch status {
	case "completed":
		m["completed_at"] = t.created + 1
		m["output"], m["usage"] = t.output(), t.usage
	case "incomplete":
		m["incomplete_details"] = map[string]any{"reason": t.incomplete}
		m["output"], m["usage"] = t.output(), t.usage
	case "failed":
		code, msg := t.failure()
		m["error"] = map[string]any{"code": code, "message": msg}
	}
	return m
}
