package caddymodule

import (
	"net/http"
	"strings"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/redact"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// The relay knows its own credentials exactly (Handler.secrets). Whatever
// it sends to a client passes through redact with them: error messages
// (with redact.Text, which also catches credential-shaped tokens), every
// answer body and every SSE frame (with redact.Secrets, which replaces
// only the exact values, so that model output is otherwise untouched) and
// the upstream headers it passes on. An upstream error that arrives inside
// a 200 (an SSE `error` or `response.failed` event, a JSON answer with
// `status: "failed"`) is thus scrubbed like a non-2xx one, on every route.

// scrubError returns a copy of e with its message, param, code and type
// scrubbed of the relay's credentials and of credential-shaped tokens.
func (h *Handler) scrubError(e *apierr.Error) *apierr.Error {
	c := *e
	c.Message = redact.Text(e.Message, h.secrets...)
	c.Param = redact.Text(e.Param, h.secrets...)
	c.Code = redact.Text(e.Code, h.secrets...)
	c.Type = redact.Text(e.Type, h.secrets...)
	return &c
}

// scrubOut returns p, an answer body or SSE frame about to be written to
// the client, without the relay's credentials.
func (h *Handler) scrubOut(p []byte) []byte {
	p, _ = redact.Secrets(p, h.secrets...)
	return p
}

// copyUpstreamHeaders passes the upstream's request ID, rate-limit and
// retry headers to the client: they help Cursor back off and help operators
// correlate with OpenAI. Their values are scrubbed of the relay's
// credentials.
func (h *Handler) copyUpstreamHeaders(dst, src http.Header) {
	for k, vs := range src {
		lk := strings.ToLower(k)
		if lk == "x-request-id" || lk == "retry-after" || lk == "openai-processing-ms" ||
			strings.HasPrefix(lk, "x-ratelimit-") {
			out := make([]string, len(vs))
			for i, v := range vs {
				out[i] = redact.SecretsText(v, h.secrets...)
			}
			dst[k] = out
		}
	}
}
