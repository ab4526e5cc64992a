package translate

import (
	"encoding/json"
	"errors"
)

// Settings is a translated request's upstream body sorted the way the
// reasoning cache identifies a request (reasoningcache/canonical.Scope):
// the members that have a meaning of their own there, and the rest of the
// generation configuration. The history (input), the model and the
// transport members (stream, stream_options) are not settings.
type Settings struct {
	// Reasoning is the reasoning object sent upstream, or nil.
	Reasoning json.RawMessage
	// Tools is the tools array sent upstream, or nil.
	Tools json.RawMessage
	// MaxOutputTokens is max_output_tokens (0: not sent).
	MaxOutputTokens int64
	// Store is the store flag sent (false when not sent).
	Store bool
	// Include lists the include entries sent.
	Include []string
	// Config is every other member of the body, as one JSON object.
	Config json.RawMessage
}

// notConfig are the body members that Settings does not count as
// configuration: those with a field of their own, the history, the model
// and the transport members.
var notConfig = map[string]bool{
	"input": true, "model": true, "tools": true, "reasoning": true, "max_output_tokens": true,
	"store": true, "include": true, "stream": true, "stream_options": true,
}

// Settings sorts the request's upstream body members (Fields) into
// Settings. It fails when a member does not have the type the upstream
// expects (only possible for members passed through unchecked).
func (r *Request) Settings() (Settings, error) {
	var s Settings
	config := map[string]json.RawMessage{}
	for _, f := range r.Fields {
		switch f.Key {
		case "reasoning":
			s.Reasoning = f.Value
		case "tools":
			s.Tools = f.Value
		case "max_output_tokens":
			if err := json.Unmarshal(f.Value, &s.MaxOutputTokens); err != nil {
				return Settings{}, errors.New("max_output_tokens is not an integer")
			}
		case "store":
			if err := json.Unmarshal(f.Value, &s.Store); err != nil {
				return Settings{}, errors.New("store is not a boolean")
			}
		case "include":
			if err := json.Unmarshal(f.Value, &s.Include); err != nil {
				return Settings{}, errors.New("include is not a list of strings")
			}
		default:
			if !notConfig[f.Key] {
				config[f.Key] = f.Value
			}
		}
	}
	cfg, err := json.Marshal(config)
	if err != nil {
		return Settings{}, err
	}
	s.Config = cfg
	return s, nil
}
