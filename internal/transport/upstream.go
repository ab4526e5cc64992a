package transport

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/redact"
)

// Upstream is a client of one Responses API base URL with one credential.
// The client's own Authorization never reaches it: requests carry only the
// headers set here and those passed in explicitly.
type Upstream struct {
	base   *url.URL
	apiKey string
	client *http.Client
}

// NewUpstream returns a client for base (e.g. https://api.openai.com/v1).
// The HTTP client has connection, TLS-handshake and dial timeouts but no
// overall timeout: reasoning answers can take many minutes and are bounded
// by the relay's idle deadlines instead.
func NewUpstream(base, apiKey string) (*Upstream, error) {
	u, err := ParseBaseURL(base)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &Upstream{
		base:   u,
		apiKey: apiKey,
		client: &http.Client{
			Transport: tr,
			// never follow redirects: a redirect must not carry the
			// credential to another place, and the API does not redirect
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// ParseBaseURL validates an upstream base URL: absolute http(s), no user
// info, query or fragment. A trailing slash is removed.
func ParseBaseURL(base string) (*url.URL, error) {
	// the URL is named in errors only redacted: it may carry a password
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %s", redact.URL(base), redact.Error(err))
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("upstream %q: scheme must be https or http", redact.URL(base))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("upstream %q: missing host", redact.URL(base))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("upstream %q: must not carry credentials, a query or a fragment", redact.URL(base))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// Endpoint returns the absolute URL of path (e.g. "responses") under the base.
func (c *Upstream) Endpoint(path string) string {
	return c.base.String() + "/" + strings.TrimLeft(path, "/")
}

// EndpointPath returns the URL path of path under the base, e.g.
// "/v1/responses".
func (c *Upstream) EndpointPath(path string) string {
	return c.base.Path + "/" + strings.TrimLeft(path, "/")
}

// Origin returns scheme://host of the base URL.
func (c *Upstream) Origin() string { return c.base.Scheme + "://" + c.base.Host }

// NewRequest builds the POST of a body, given as parts of n bytes in
// total, to path under the base URL, with the upstream credential and the
// extra headers (such as OpenAI-Beta) as given. The parts are sent in order
// without being joined (a large request is not copied once more) and must
// not change until Do has returned. The request is built once, so that
// what a caller records of it (package bodylog) is what Do sends.
func (c *Upstream) NewRequest(ctx context.Context, path string, parts net.Buffers, n int64, stream bool, extra http.Header) (*http.Request, error) {
	src := &bodySource{parts: parts}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, bodySourceKey{}, src), http.MethodPost, c.Endpoint(path), nil)
	if err != nil {
		return nil, fmt.Errorf("building upstream request: %w", err)
	}
	// GetBody lets the transport resend the body when it retries on a new
	// connection; each call reads the same parts afresh
	req.GetBody = src.open
	req.Body, _ = req.GetBody()
	req.ContentLength = n
	if n == 0 {
		req.Body, req.GetBody = http.NoBody, nil
	}
	for k, vs := range extra {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	return req, nil
}

// Do sends a request built by NewRequest. The caller must close the
// response body. Once the upstream has answered, the request no longer
// references the body's parts (the transport resends a body only before
// an answer), so that a large request can be collected while its answer
// streams.
func (c *Upstream) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.client.Do(req)
	if src, ok := req.Context().Value(bodySourceKey{}).(*bodySource); ok {
		src.drop()
	}
	if err != nil {
		return nil, fmt.Errorf("upstream request: %w", err)
	}
	return resp, nil
}

// bodySource holds the parts of a request body for the transport's
// GetBody until Do drops them. The transport keeps its own copy of the
// request while it reads the answer, so the parts are dropped here rather
// than by clearing the request's GetBody.
type bodySource struct {
	mu    sync.Mutex
	parts net.Buffers
}

// bodySourceKey is the request context key of its bodySource.
type bodySourceKey struct{}

// open returns a reader of the parts; it reads nothing once they are
// dropped (the transport no longer asks by then).
func (s *bodySource) open() (io.ReadCloser, error) {
	s.mu.Lock()
	b := append(net.Buffers(nil), s.parts...)
	s.mu.Unlock()
	return io.NopCloser(&b), nil
}

// drop forgets the parts.
func (s *bodySource) drop() {
	s.mu.Lock()
	s.parts = nil
	s.mu.Unlock()
}

// CloseIdle closes idle upstream connections (on Cleanup).
func (c *Upstream) CloseIdle() { c.client.CloseIdleConnections() }
