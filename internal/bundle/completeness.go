package bundle

import (
	"sort"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
)

// completeness decides whether the bundle's request can be replayed and
// compared, from the captures of the selected attempt. Whatever a replay
// or its comparison needs (the client and upstream requests, the upstream
// response, their artifacts, an untruncated and unredacted request body, a
// terminated upstream stream) blocks; what only describes the client's
// side (the client response missing, truncated or unterminated) warns.
func completeness(b *Bundle) Completeness {
	var blockers, warnings []string
	for _, phase := range bodylog.Phases {
		c := b.Find(b.Attempt, phase)
		if c == nil {
			if phase == bodylog.ClientResponse {
				// a replay needs only the upstream exchange; an attempt
				// that was retried never answered the client
				warnings = append(warnings, "missing_phase:"+string(phase))
			} else {
				blockers = append(blockers, "missing_phase:"+string(phase))
			}
			continue
		}
		for _, issue := range c.Issues {
			blockers = append(blockers, issue+":"+string(phase))
		}
		if c.Index.Error != "" {
			warnings = append(warnings, "phase_error:"+string(phase)+":"+c.Index.Error)
		}
		ref := c.Index.Body
		switch phase {
		case bodylog.UpstreamRequest:
			if c.Index.URL == "" {
				blockers = append(blockers, "missing_url:upstream_request")
			}
			if c.Index.Method == "" {
				blockers = append(blockers, "missing_method:upstream_request")
			}
			if ref == nil {
				blockers = append(blockers, "missing_body:upstream_request")
				continue
			}
			if ref.Truncated {
				blockers = append(blockers, "truncated_body:upstream_request")
			}
			if ref.Redactions > 0 {
				blockers = append(blockers, "redacted_body:upstream_request")
			}
		case bodylog.UpstreamResponse, bodylog.ClientResponse:
			if ref == nil {
				if phase == bodylog.UpstreamResponse {
					blockers = append(blockers, "missing_body:upstream_response")
				} else {
					warnings = append(warnings, "missing_body:client_response")
				}
				continue
			}
			if ref.Truncated {
				warnings = append(warnings, "truncated_body:"+string(phase))
			}
			if ref.Format == bodylog.FormatSSE && len(c.Issues) == 0 && !ref.Truncated {
				body, err := c.BodyBytes()
				if err != nil || !terminated(body) {
					if phase == bodylog.UpstreamResponse {
						blockers = append(blockers, "unterminated_stream:upstream_response")
					} else {
						warnings = append(warnings, "unterminated_stream:client_response")
					}
				}
			}
		}
	}
	sort.Strings(blockers)
	sort.Strings(warnings)
	if blockers == nil {
		blockers = []string{}
	}
	if warnings == nil {
		warnings = []string{}
	}
	return Completeness{Replayable: len(blockers) == 0, Blockers: blockers, Warnings: warnings}
}

// terminated reports whether an event stream ends with a terminal event:
// a Responses response.completed, response.incomplete, response.failed
// or error event, or a Chat Completions "[DONE]".
func terminated(stream []byte) bool {
	evs, _ := parseEvents(stream, 0)
	if len(evs) == 0 {
		return false
	}
	last := evs[len(evs)-1]
	switch last.Type {
	case "response.completed", "response.incomplete", "response.failed", "error", "[DONE]":
		return true
	}
	return false
}
