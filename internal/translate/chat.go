package translate

import (
	"encoding/json"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// translateChat translates a classic Chat Completions body field by field.
func translateChat(req *Request, top map[string]json.RawMessage, fs fieldSet, alias Alias, cfg *Config) *apierr.Error {
	t := &chatTranslator{req: req}
	var p policy
	var format, verbosity, maxCompletion, maxTokens, obfuscation json.RawMessage
	for _, k := range sortedKeys(top) {
		v := top[k]
		if isNull(v) && k != "model" && k != "messages" {
			// An optional field sent as null means "not set".
			if !chatFields[k] {
				return unknownParam(k)
			}
			continue
		}
		if c, ok := chatScalars[k]; ok && !c.ok(v) {
			return invalidType(k, c.want)
		}
		switch k {
		case "model", "messages":
			// handled below
		case "stream", "stream_options":
			obf, aerr := streamField(req, fs, k, v)
			if aerr != nil {
				return aerr
			}
			if obf != nil {
				obfuscation = obf
			}
		case "tools":
			tools, aerr := t.tools(v)
			if aerr != nil {
				return aerr
			}
			fs[k] = tools
		case "tool_choice":
			tc, aerr := toolChoice(k, v)
			if aerr != nil {
				return aerr
			}
			fs[k] = tc
		case "parallel_tool_calls", "temperature", "top_p", "user", "safety_identifier",
			"prompt_cache_key", "prompt_cache_retention", "prompt_cache_options", "moderation",
			"metadata", "service_tier":
			fs[k] = v
		case "response_format":
			f, aerr := responseFormat(v)
			if aerr != nil {
				return aerr
			}
			format = f
		case "verbosity":
			verbosity = v
		case "reasoning_effort":
			s, ok := unquote(v)
			if !ok {
				return invalidType(k, "a string")
			}
			p.effort = s
		case "max_completion_tokens":
			maxCompletion = v
		case "max_tokens":
			maxTokens = v
		case "store":
			p.store = v
		case "n":
			var n float64
			if err := json.Unmarshal(v, &n); err != nil {
				return invalidType(k, "an integer")
			}
			if n != 1 {
				return unsupportedValue(k, "Unsupported value: 'n' must be 1; this model returns a single choice.")
			}
		case "logprobs":
			if string(v) == "true" {
				return unsupportedValue(k, "Unsupported value: 'logprobs' is not supported with this model.")
			}
		case "modalities":
			var mods []string
			if err := json.Unmarshal(v, &mods); err != nil {
				return invalidType(k, "an array of strings")
			}
			for _, m := range mods {
				if m == "audio" {
					return unsupportedValue(k, "Unsupported value: 'modalities' does not support 'audio' with this model.")
				}
			}
		case "stop", "top_logprobs", "audio", "web_search_options", "functions", "function_call":
			return unsupportedParam(k, "is not supported with this model")
		case "seed", "logit_bias", "frequency_penalty", "presence_penalty", "prediction":
			// No Responses equivalent; dropped.
		default:
			return unknownParam(k)
		}
	}
	if obfuscation != nil && req.Stream {
		// Upstream accepts stream_options only on streaming requests.
		var w objectWriter
		w.raw("include_obfuscation", obfuscation)
		fs["stream_options"] = w.bytes()
	}
	switch {
	case maxCompletion != nil:
		fs["max_output_tokens"] = maxCompletion
	case maxTokens != nil:
		fs["max_output_tokens"] = maxTokens
	}
	if p.effort != "" {
		var w objectWriter
		w.str("effort", p.effort)
		p.reasoning = w.bytes()
	}
	if format != nil || verbosity != nil {
		var w objectWriter
		if format != nil {
			w.raw("format", format)
		}
		if verbosity != nil {
			w.raw("verbosity", verbosity)
			p.verbosity = true
		}
		p.text = w.bytes()
	}
	if aerr := t.messages(top["messages"]); aerr != nil {
		return aerr
	}
	return applyPolicy(req, alias, cfg, p, fs)
}

// chatFields are the top-level Chat fields this translator knows.
var chatFields = map[string]bool{
	"model": true, "messages": true, "stream": true, "stream_options": true, "tools": true,
	"tool_choice": true, "parallel_tool_calls": true, "temperature": true, "top_p": true,
	"user": true, "safety_identifier": true, "prompt_cache_key": true,
	"prompt_cache_retention": true, "prompt_cache_options": true, "moderation": true,
	"metadata": true, "service_tier": true, "response_format": true, "verbosity": true,
	"reasoning_effort": true, "max_completion_tokens": true, "max_tokens": true, "store": true,
	"n": true, "logprobs": true, "modalities": true, "stop": true, "top_logprobs": true,
	"audio": true, "web_search_options": true, "functions": true, "function_call": true,
	"seed": true, "logit_bias": true, "frequency_penalty": true, "presence_penalty": true,
	"prediction": true,
}

// scalarField is the type check of a scalar top-level Chat field.
type scalarField struct {
	ok   func(json.RawMessage) bool
	want string // the expected type, as the error names it
}

// chatScalars are the scalar Chat fields whose type is checked before
// their value is used.
var chatScalars = map[string]scalarField{
	"stream":                {isBool, "a boolean"},
	"verbosity":             {isString, "a string"},
	"max_completion_tokens": {isNumber, "an integer"},
	"max_tokens":            {isNumber, "an integer"},
	"store":                 {isBool, "a boolean"},
	"logprobs":              {isBool, "a boolean"},
}

// streamField handles stream and stream_options, which both request shapes
// read the same way, and returns stream_options.include_obfuscation when
// it was set.
func streamField(req *Request, fs fieldSet, k string, v json.RawMessage) (json.RawMessage, *apierr.Error) {
	if k == "stream" {
		if !isBool(v) {
			return nil, invalidType(k, "a boolean")
		}
		req.Stream = string(v) == "true"
		fs[k] = v
		return nil, nil
	}
	so, aerr := parseStreamOptions(v)
	if aerr != nil {
		return nil, aerr
	}
	req.IncludeUsage = so.includeUsage
	return so.obfuscation, nil
}

// streamOptions is the decoded stream_options object.
type streamOptions struct {
	includeUsage bool
	obfuscation  json.RawMessage
}

func parseStreamOptions(v json.RawMessage) (streamOptions, *apierr.Error) {
	var so struct {
		IncludeUsage       json.RawMessage `json:"include_usage"`
		IncludeObfuscation json.RawMessage `json:"include_obfuscation"`
	}
	if !isObject(v) || json.Unmarshal(v, &so) != nil {
		return streamOptions{}, invalidType("stream_options", "an object")
	}
	var out streamOptions
	if !isNull(so.IncludeUsage) {
		if !isBool(so.IncludeUsage) {
			return out, invalidType("stream_options.include_usage", "a boolean")
		}
		out.includeUsage = string(so.IncludeUsage) == "true"
	}
	if !isNull(so.IncludeObfuscation) {
		if !isBool(so.IncludeObfuscation) {
			return out, invalidType("stream_options.include_obfuscation", "a boolean")
		}
		out.obfuscation = so.IncludeObfuscation
	}
	return out, nil
}
