package translate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
)

// Translate parses a client body posted to /chat/completions (either shape)
// and translates it. A body with "input" and no "messages" is
// Responses-shaped; anything else is treated as a Chat body. Errors are
// *apierr.Error 400 invalid_request_error naming the offending param, or
// code "unknown_parameter" for unknown fields of a Chat body.
//
// The body is validated once and then split without copying: Input items
// and History.Raw may share memory with body, which the caller must not
// modify afterwards.
func Translate(body []byte, cfg *Config) (*Request, *apierr.Error) {
	// one pass validates the body and splits its top-level members
	top := make(map[string]json.RawMessage, 16)
	valid := !bytes.HasPrefix(body, utf8BOM) && scanJSON(body, func(k, v []byte) {
		if bytes.IndexByte(k, '\\') < 0 {
			top[string(k[1:len(k)-1])] = v
		} else if s, ok := unquote(k); ok {
			top[s] = v
		}
	})
	if !valid {
		if aerr := CheckJSON(body); aerr != nil {
			return nil, aerr
		}
		return nil, apierr.InvalidRequest("", "", "We could not parse the JSON body of your request.")
	}
	if !isObject(body[jsonscan.SkipSpace(body, 0):]) {
		return nil, apierr.InvalidRequest("", "", "The request body must be a JSON object.")
	}
	hasMessages := !isNull(top["messages"])
	_, hasInput := top["input"]
	model, aerr := parseModel(top["model"])
	if aerr != nil {
		return nil, aerr
	}
	alias := cfg.ResolveModel(model)
	req := &Request{
		clientSize:  len(body),
		ClientModel: model,
		Model:       alias.Model,
		Eligible:    !alias.NoReasoning,
	}
	fs := fieldSet{"model": appendString(nil, alias.Model)}
	if hasInput && !hasMessages {
		delete(top, "messages") // null
		req.Shape = ShapeResponses
		aerr = translateResponses(req, top, fs, alias, cfg)
	} else {
		req.Shape = ShapeChat
		aerr = translateChat(req, top, fs, alias, cfg)
	}
	if aerr != nil {
		return nil, aerr
	}
	req.Fields = fs.ordered()
	return req, nil
}

func parseModel(raw json.RawMessage) (string, *apierr.Error) {
	if isNull(raw) {
		return "", missing("model")
	}
	s, ok := unquote(raw)
	if !ok {
		return "", invalidType("model", "a string")
	}
	if s == "" {
		return "", invalidValue("model", "Invalid value for 'model': it must not be empty.")
	}
	return s, nil
}

// policy carries what the request itself said about reasoning, text and
// storage; applyPolicy merges it with the alias and config defaults.
type policy struct {
	effort    string          // the request's own effort, if any
	summary   bool            // the request set reasoning.summary
	reasoning json.RawMessage // Responses shape: the caller's reasoning object
	verbosity bool            // the request set a verbosity
	text      json.RawMessage // the text object built so far or sent by the caller
	store     json.RawMessage // caller's store
	include   json.RawMessage // caller's include (Responses shape)
}

const encryptedContent = "reasoning.encrypted_content"

// applyPolicy sets reasoning, text, store and include in fs.
func applyPolicy(req *Request, alias Alias, cfg *Config, p policy, fs fieldSet) *apierr.Error {
	// The operator's alias values apply as configured; the global default
	// effort only to reasoning models, which are the ones that accept it.
	var add objectWriter
	if p.effort == "" {
		effort := alias.Effort
		if effort == "" && cfg != nil && req.Eligible {
			effort = cfg.DefaultEffort
		}
		if effort != "" {
			add.str("effort", effort)
		}
	}
	if !p.summary && alias.Summary != "" {
		add.str("summary", alias.Summary)
	}
	reasoning, err := mergeObject(p.reasoning, add.b)
	if err != nil {
		return invalidType("reasoning", "an object")
	}
	if reasoning != nil {
		fs["reasoning"] = reasoning
	}

	var textAdd objectWriter
	if !p.verbosity && alias.Verbosity != "" {
		textAdd.str("verbosity", alias.Verbosity)
	}
	text, err := mergeObject(p.text, textAdd.b)
	if err != nil {
		return invalidType("text", "an object")
	}
	if text != nil {
		fs["text"] = text
	}

	if !req.Eligible {
		if p.store != nil {
			fs["store"] = p.store
		}
		if p.include != nil {
			fs["include"] = p.include
		}
		return nil
	}
	req.callerStore, req.callerInclude = p.store, p.include
	fs["store"] = json.RawMessage("false")
	var include []string
	if p.include != nil {
		if err := json.Unmarshal(p.include, &include); err != nil {
			return invalidType("include", "an array of strings")
		}
	}
	seen := make(map[string]bool, len(include)+1)
	b := []byte{'['}
	for _, v := range append(include, encryptedContent) {
		if seen[v] {
			continue
		}
		seen[v] = true
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendString(b, v)
	}
	fs["include"] = append(b, ']')
	return nil
}

// mergeObject adds the members in add (an unterminated objectWriter
// buffer, "{k:v,..." or empty) to the object base, keeping base's members.
// It returns nil when both are empty. When base is unchanged it is returned
// as is; otherwise the result has base's members in lexical key order
// followed by the added ones not present in base.
func mergeObject(base json.RawMessage, add []byte) (json.RawMessage, error) {
	if len(add) == 0 {
		if base == nil {
			return nil, nil
		}
		if !isObject(base) {
			return nil, fmt.Errorf("not an object")
		}
		return base, nil
	}
	addObj := append(add, '}')
	if base == nil {
		return addObj, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(base, &m); err != nil || m == nil {
		return nil, fmt.Errorf("not an object")
	}
	var extra map[string]json.RawMessage
	if err := json.Unmarshal(addObj, &extra); err != nil {
		return nil, err
	}
	var w objectWriter
	for _, k := range sortedKeys(m) {
		w.raw(k, m[k])
	}
	for _, k := range sortedKeys(extra) {
		if _, ok := m[k]; !ok {
			w.raw(k, extra[k])
		}
	}
	return w.bytes(), nil
}
