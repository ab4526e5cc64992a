package caddymodule

import (
	"context"
	"errors"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/redact"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/transport"
)

// The upstream side of a model request, shared by the chat and the
// responses route: one POST to `<upstream>/responses`, the headers that
// cross to it (OpenAI-Beta) and back (request ID, rate limits), its
// error answers and its buffered body.

// postUpstream sends a body (parts of n bytes) to the upstream's responses
// endpoint with the client headers that are forwarded. The request is
// built once, and the body log records it as built. The response's body
// is recorded as it is read. rc (nil: none) holds the buffers the parts
// are in until the transport lets go of them. On failure (no response) the
// client has been answered.
func (rq *request) postUpstream(ctx context.Context, parts net.Buffers, n int64, stream bool, idle *transport.Watchdog, rc *recycler) (*http.Response, bool) {
	req, err := rq.h.upstream.NewRequest(ctx, "responses", parts, n, stream, rq.upstreamHeaders())
	if err == nil {
		rc.upstream(req)
		rq.logUpstreamRequest(req, parts)
		idle.Kick()
		var resp *http.Response
		if resp, err = rq.h.upstream.Do(req); err == nil {
			rq.logUpstreamResponse(resp)
			idle.Kick()
			return resp, true
		}
	}
	rq.logUpstreamResponse(nil)
	rq.upstreamFailure(ctx, err)
	return nil, false
}

// upstreamHeaders are the client headers forwarded upstream. The client's
// Authorization never is.
func (rq *request) upstreamHeaders() http.Header {
	hdr := http.Header{}
	if v := rq.r.Header.Values("OpenAI-Beta"); len(v) > 0 {
		hdr["Openai-Beta"] = v
	}
	hdr.Set("X-Client-Request-Id", rq.id)
	hdr.Set("User-Agent", "caddy-reasoning-relay")
	return hdr
}

// effectiveOpenAIBeta is the OpenAI-Beta feature list the upstream sees:
// every value of every OpenAI-Beta header line (all of them are
// forwarded), split at commas, trimmed and joined with "," in the order
// they arrive. It goes into the cache scope, so that two requests share a
// scope only if the upstream saw the same features for both. The order is
// kept and nothing is deduplicated: two spellings of one set then get
// different scopes, which costs a replay at most, never a wrong one.
func effectiveOpenAIBeta(h http.Header) string {
	var parts []string
	for _, v := range h.Values("OpenAI-Beta") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
	}
	return strings.Join(parts, ",")
}

// upstreamFailure answers a failed upstream round trip (no response).
func (rq *request) upstreamFailure(ctx context.Context, err error) {
	switch {
	case errors.Is(context.Cause(ctx), errUpstreamIdle):
		rq.fail(apierr.New(http.StatusGatewayTimeout, apierr.TypeTimeout, "upstream_timeout",
			"The upstream did not answer within the relay's idle timeout."), "upstream_idle_timeout")
	case rq.r.Context().Err() != nil:
		rq.log("client_gone", 499)
	default:
		rq.h.logger.Warn("upstream request failed", zap.String("request_id", rq.id),
			zap.String("error", redact.Error(err, rq.h.secrets...)))
		rq.fail(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_unreachable",
			"The relay could not reach the upstream."), "upstream_unreachable")
	}
}

// isSuccess reports whether the upstream accepted the request (2xx).
func isSuccess(resp *http.Response) bool { return resp.StatusCode >= 200 && resp.StatusCode < 300 }

// upstreamError reads a non-2xx upstream answer's (capped) body into the
// error the client would get. ok is false when reading failed and the
// client has been answered. The upstream's rate-limit headers are passed
// on (failUpstream) only when this answer is the one the client gets (not
// for an attempt that is retried).
func (rq *request) upstreamError(ctx context.Context, resp *http.Response, idle *transport.Watchdog) (*apierr.Error, bool) {
	raw, ok := rq.readUpstreamBody(ctx, resp, idle)
	if !ok {
		return nil, false
	}
	return transport.UpstreamError(resp.StatusCode, raw, rq.h.secrets...), true
}

// failUpstream answers the client with the upstream's error e, passing on
// the upstream's request ID and rate-limit headers, with the reason code
// upstream_status_<status>.
func (rq *request) failUpstream(e *apierr.Error, resp *http.Response, status int) {
	rq.h.copyUpstreamHeaders(rq.w.Header(), resp.Header)
	rq.fail(e, "upstream_status_"+strconv.Itoa(status))
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

// readUpstreamBody reads a buffered upstream body under the response cap
// and the idle deadline. On failure it has already answered the client.
func (rq *request) readUpstreamBody(ctx context.Context, resp *http.Response, idle *transport.Watchdog) ([]byte, bool) {
	raw, err := transport.ReadAll(transport.ProgressReader{R: resp.Body, WD: idle}, rq.h.MaxResponseBytes, resp.ContentLength)
	switch {
	case err == nil:
		rq.upstreamBody.Write(raw)
		return raw, true
	case err == transport.ErrTooLarge:
		rq.fail(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_response_too_large",
			"The upstream answer exceeds the relay's max_response_bytes limit of "+formatBytes(rq.h.MaxResponseBytes)+"."), "response_too_large")
	default:
		rq.upstreamFailure(ctx, err)
	}
	return nil, false
}

// isEventStream reports whether a response is text/event-stream.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}
