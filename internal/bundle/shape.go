package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/transport"
)

// Bounds of a JSON shape.
const (
	// MaxShapePaths bounds the paths of one shape.
	MaxShapePaths = 2000
	// MaxShapeDepth bounds the nesting a shape descends into.
	MaxShapeDepth = 20
)

// Shape returns the sorted, distinct JSON-pointer paths of doc with their
// JSON types ("/output/*/type:string"; array elements are all "*", so the
// shape describes structure, not counts; the root is ":object"). complete
// is false when doc is not JSON or the shape hit MaxShapePaths or
// MaxShapeDepth: such a shape cannot be compared.
func Shape(doc []byte) (paths []string, complete bool) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	set := map[string]bool{}
	complete = walkShape(v, "", 0, set)
	paths = make([]string, 0, len(set))
	for p := range set {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, complete
}

// walkShape adds v's paths under prefix to set; false when a bound was hit.
func walkShape(v any, prefix string, depth int, set map[string]bool) bool {
	if len(set) >= MaxShapePaths {
		return false
	}
	set[prefix+":"+jsonType(v)] = true
	if depth >= MaxShapeDepth {
		switch v.(type) {
		case map[string]any, []any:
			return false
		}
		return true
	}
	ok := true
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ok = walkShape(t[k], prefix+"/"+escapePointer(k), depth+1, set) && ok
		}
	case []any:
		for _, e := range t {
			ok = walkShape(e, prefix+"/*", depth+1, set) && ok
		}
	}
	return ok
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	default:
		return "null"
	}
}

// escapePointer escapes a key as a JSON-pointer reference token.
func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// event is one parsed server-sent event.
type event struct {
	// Name is the event: field.
	Name string
	// Type is the event name, else the data's JSON "type", else "[DONE]"
	// for a Chat Completions end marker, else "message".
	Type string
	// Data is the event's data.
	Data []byte
}

// parseEvents parses an event stream. complete is false when the stream
// ends inside an event or is malformed (the events before are returned).
// maxEvent caps one event (0: 8 MiB).
func parseEvents(stream []byte, maxEvent int) (evs []event, complete bool) {
	sr := transport.NewSSEReader(bytes.NewReader(stream), maxEvent)
	for {
		ev, err := sr.Next()
		if err != nil {
			return evs, errors.Is(err, io.EOF)
		}
		e := event{Name: ev.Name, Type: ev.Name, Data: bytes.Clone(ev.Data)}
		if e.Type == "" {
			if bytes.Equal(bytes.TrimSpace(ev.Data), []byte("[DONE]")) {
				e.Type = "[DONE]"
			} else {
				var probe struct {
					Type string `json:"type"`
				}
				_ = json.Unmarshal(ev.Data, &probe)
				e.Type = probe.Type
			}
		}
		if e.Type == "" {
			e.Type = "message"
		}
		evs = append(evs, e)
	}
}

// reframe renders parsed events the way captures record them, so that
// hashes of a recorded and a fresh stream are comparable.
func reframe(evs []event) []byte {
	var out []byte
	for _, e := range evs {
		out = bodylog.AppendSSEFrame(out, e.Name, e.Data)
	}
	return out
}
