package fakeupstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// knownFields is the set of top-level Responses request fields (WIRE §3.1).
// Anything else, including Chat-only fields such as messages or max_tokens,
// is rejected with unknown_parameter.
var knownFields = []string{
	"access_programs", "background", "context_management", "conversation", "image",
	"include", "input", "instructions", "max_output_tokens", "max_tool_calls",
	"metadata", "model", "moderation", "parallel_tool_calls", "previous_response_id",
	"prompt", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention",
	"reasoning", "safety_identifier", "service_tier", "store", "stream", "stream_options",
	"temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p",
	"truncation", "user",
}

// knownIncludes are the accepted values of include[] (WIRE §3.1).
var knownIncludes = []string{
	"file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
	"message.input_image.image_url", "computer_call_output.output.image_url",
	"code_interpreter_call.outputs", "reasoning.encrypted_content", "message.output_text.logprobs",
}

// parsedRequest is a validated Responses request.
type parsedRequest struct {
	fields  object // decoded top-level members, for echoing settings into the Response
	model   string
	stream  bool
	summary string // reasoning.summary, empty when not requested
	items   []inputItem
	tools   []toolDef
}

// parseRequest decodes and strictly validates a Responses request body.
func parseRequest(body []byte) (*parsedRequest, *apiError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"}
	}
	top, ok := v.(object)
	if !ok {
		return nil, invalidRequest("", "invalid_type",
			fmt.Sprintf("Invalid type for request body: expected an object, but got %s instead.", describe(v)))
	}
	if err := checkKeys(top, "", knownFields...); err != nil {
		return nil, err
	}
	p := &parsedRequest{fields: top}
	var err *apiError
	if p.model, err = reqString(top, "model", ""); err != nil {
		return nil, err
	}
	if p.stream, _, err = optBool(top, "stream", ""); err != nil {
		return nil, err
	}
	if err = checkScalars(top); err != nil {
		return nil, err
	}
	if err = checkStreamOptions(top); err != nil {
		return nil, err
	}
	if err = checkInclude(top); err != nil {
		return nil, err
	}
	if p.summary, err = checkReasoning(top); err != nil {
		return nil, err
	}
	if err = checkText(top); err != nil {
		return nil, err
	}
	if p.tools, err = parseTools(top); err != nil {
		return nil, err
	}
	if err = checkToolChoice(top, p.tools); err != nil {
		return nil, err
	}
	in, ok := top["input"]
	if !ok || in == nil {
		return nil, errMissing("input")
	}
	if p.items, err = parseInput(in); err != nil {
		return nil, err
	}
	if id, ok, _ := optString(top, "previous_response_id", ""); ok {
		return nil, invalidRequest("previous_response_id", "previous_response_not_found",
			fmt.Sprintf("Previous response with id '%s' not found.", id))
	}
	return p, nil
}

// checkScalars type-checks the simple top-level members.
func checkScalars(top object) *apiError {
	for _, k := range []string{"store", "parallel_tool_calls", "background"} {
		if _, _, err := optBool(top, k, ""); err != nil {
			return err
		}
	}
	for _, k := range []string{"instructions", "user", "safety_identifier", "prompt_cache_key", "previous_response_id"} {
		if _, _, err := optString(top, k, ""); err != nil {
			return err
		}
	}
	if err := optInt(top, "max_output_tokens", "", 16); err != nil {
		return err
	}
	if err := optInt(top, "max_tool_calls", "", 1); err != nil {
		return err
	}
	if err := optInt(top, "top_logprobs", "", 0); err != nil {
		return err
	}
	if err := optNumber(top, "temperature", "", 0, 2); err != nil {
		return err
	}
	if err := optNumber(top, "top_p", "", 0, 1); err != nil {
		return err
	}
	if _, err := optEnum(top, "truncation", "", "auto", "disabled"); err != nil {
		return err
	}
	if _, err := optEnum(top, "service_tier", "", "auto", "default", "flex", "scale", "priority", "fast", "ultrafast"); err != nil {
		return err
	}
	if _, err := optEnum(top, "prompt_cache_retention", "", "in_memory", "24h"); err != nil {
		return err
	}
	if v, ok := top["metadata"]; ok && v != nil {
		m, err := asObject(v, "metadata")
		if err != nil {
			return err
		}
		if len(m) > 16 {
			return invalidRequest("metadata", "object_above_max_properties",
				fmt.Sprintf("Invalid 'metadata': too many properties. Expected an object with at most 16 properties, but got an object with %d properties instead.", len(m)))
		}
		for k, mv := range m {
			if _, ok := mv.(string); !ok {
				return errType(path("metadata", k), "a string", mv)
			}
		}
	}
	return nil
}

// checkStreamOptions allows only stream_options.include_obfuscation; the
// Chat-only include_usage is an unknown parameter here.
func checkStreamOptions(top object) *apiError {
	v, ok := top["stream_options"]
	if !ok || v == nil {
		return nil
	}
	so, err := asObject(v, "stream_options")
	if err != nil {
		return err
	}
	if err := checkKeys(so, "stream_options", "include_obfuscation"); err != nil {
		return err
	}
	_, _, err = optBool(so, "include_obfuscation", "stream_options")
	return err
}

// checkInclude accepts only the documented include values.
func checkInclude(top object) *apiError {
	v, ok := top["include"]
	if !ok || v == nil {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		return errType("include", "an array", v)
	}
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return errType(index("include", i), "a string", e)
		}
		if !slices.Contains(knownIncludes, s) {
			return errValue(index("include", i), s, knownIncludes)
		}
	}
	return nil
}

// checkReasoning validates the reasoning object and returns reasoning.summary.
func checkReasoning(top object) (string, *apiError) {
	v, ok := top["reasoning"]
	if !ok || v == nil {
		return "", nil
	}
	r, err := asObject(v, "reasoning")
	if err != nil {
		return "", err
	}
	if err := checkKeys(r, "reasoning", "effort", "summary", "generate_summary", "context", "mode"); err != nil {
		return "", err
	}
	if _, err := optEnum(r, "effort", "reasoning", "none", "minimal", "low", "medium", "high", "xhigh", "max"); err != nil {
		return "", err
	}
	summary, err := optEnum(r, "summary", "reasoning", "auto", "concise", "detailed")
	if err != nil {
		return "", err
	}
	gen, err := optEnum(r, "generate_summary", "reasoning", "auto", "concise", "detailed")
	if err != nil {
		return "", err
	}
	if _, err := optEnum(r, "context", "reasoning", "auto", "current_turn", "all_turns"); err != nil {
		return "", err
	}
	if _, err := optEnum(r, "mode", "reasoning", "standard", "pro"); err != nil {
		return "", err
	}
	if summary == "" {
		summary = gen
	}
	return summary, nil
}

// checkText validates text.format (flat json_schema) and text.verbosity.
func checkText(top object) *apiError {
	v, ok := top["text"]
	if !ok || v == nil {
		return nil
	}
	t, err := asObject(v, "text")
	if err != nil {
		return err
	}
	if err := checkKeys(t, "text", "format", "verbosity"); err != nil {
		return err
	}
	if _, err := optEnum(t, "verbosity", "text", "low", "medium", "high"); err != nil {
		return err
	}
	fv, ok := t["format"]
	if !ok || fv == nil {
		return nil
	}
	f, err := asObject(fv, "text.format")
	if err != nil {
		return err
	}
	typ, err := reqString(f, "type", "text.format")
	if err != nil {
		return err
	}
	switch typ {
	case "text", "json_object":
		return checkKeys(f, "text.format", "type")
	case "json_schema":
		if _, err := reqString(f, "name", "text.format"); err != nil {
			return err
		}
		if err := checkKeys(f, "text.format", "type", "name", "schema", "description", "strict"); err != nil {
			return err
		}
		sv, ok := f["schema"]
		if !ok || sv == nil {
			return errMissing("text.format.schema")
		}
		if _, err := asObject(sv, "text.format.schema"); err != nil {
			return err
		}
		if _, _, err := optBool(f, "strict", "text.format"); err != nil {
			return err
		}
		_, _, err = optString(f, "description", "text.format")
		return err
	default:
		return errValue("text.format.type", typ, []string{"text", "json_object", "json_schema"})
	}
}
