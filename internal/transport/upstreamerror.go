package transport

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/redact"
)

// UpstreamError turns a non-2xx upstream answer into the error the client
// receives. An OpenAI-shaped body keeps its message, type, param and code
// with the upstream status; anything else becomes a generic error naming
// the status. Upstream authentication failures become 502: they are the
// relay's configuration problem, not the client's token, and their
// messages (which can echo part of the key) are replaced. The message is
// scrubbed of secrets (the relay's own credentials) and of
// credential-shaped tokens with redact.Text.
func UpstreamError(status int, body []byte, secrets ...string) *apierr.Error {
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_auth_failed",
			fmt.Sprintf("the upstream rejected the relay's credential (HTTP %d); check the relay's api_key", status))
	}
	var env struct {
		Error *struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Param   json.RawMessage `json:"param"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Message != "" {
		e := &apierr.Error{
			Status:  status,
			Message: redact.Text(env.Error.Message, secrets...),
			Type:    env.Error.Type,
			Param:   rawString(env.Error.Param),
			Code:    rawString(env.Error.Code),
		}
		if e.Type == "" {
			e.Type = apierr.TypeUpstream
		}
		return e
	}
	return apierr.New(status, apierr.TypeUpstream, fmt.Sprintf("upstream_http_%d", status),
		fmt.Sprintf("the upstream answered HTTP %d without an OpenAI error body", status))
}

// rawString returns a JSON string's value, or "" for null, absent or
// non-string values (codes are sometimes numbers; they are dropped).
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
