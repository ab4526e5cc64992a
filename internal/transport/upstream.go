package transport

import (
	"context"
	"errors"
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
		req.Body.Close()
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
// than by clearing the request's GetBody. It counts the readers it opened
// that are not closed yet, for OnBodyReleased.
type bodySource struct {
	mu      sync.Mutex
	parts   net.Buffers
	dropped bool
	readers int    // opened and not closed
	done    func() // OnBodyReleased's, run once
}

// bodySourceKey is the request context key of its bodySource.
type bodySourceKey struct{}

// open returns a reader of the parts; it reads nothing once they are
// dropped (the transport no longer asks by then).
func (s *bodySource) open() (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped {
		return http.NoBody, nil
	}
	s.readers++
	return &partsReader{b: append(net.Buffers(nil), s.parts...), src: s}, nil
}

// drop forgets the parts.
func (s *bodySource) drop() {
	s.mu.Lock()
	s.parts, s.dropped = nil, true
	s.mu.Unlock()
	s.released()
}

// readerClosed counts a reader closed.
func (s *bodySource) readerClosed() {
	s.mu.Lock()
	s.readers--
	s.mu.Unlock()
	s.released()
}

// released runs done once the parts are dropped and every reader is
// closed.
func (s *bodySource) released() {
	s.mu.Lock()
	var done func()
	if s.dropped && s.readers == 0 {
		done, s.done = s.done, nil
	}
	s.mu.Unlock()
	if done != nil {
		done()
	}
}

// partsReader reads a copy of the parts list (not of the bytes). Read and
// Close exclude each other, and a closed reader reads nothing: once Close
// has returned, no byte of the parts is read through it any more, even
// when the transport closes the body from another goroutine while its
// writer is still reading it (HTTP/2 does so to abort a body).
type partsReader struct {
	mu     sync.Mutex
	b      net.Buffers
	closed bool
	src    *bodySource
}

// errBodyClosed is what a closed partsReader reads.
var errBodyClosed = errors.New("upstream request body closed")

func (r *partsReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errBodyClosed
	}
	return r.b.Read(p)
}

func (r *partsReader) Close() error {
	r.mu.Lock()
	was := r.closed
	r.closed, r.b = true, nil
	r.mu.Unlock()
	if !was {
		r.src.readerClosed()
	}
	return nil
}

// OnBodyReleased arranges for fn to run once nothing reads the body parts
// of req (built by NewRequest) any more: Do has returned and the
// transport has closed every reader of them it opened (it may go on
// writing a body after the answer has arrived). fn runs at most once, on
// whichever goroutine releases the parts last; it never runs for a request
// that is never sent or whose body the transport never closes. A request
// without a body runs fn at once.
func OnBodyReleased(req *http.Request, fn func()) {
	s, ok := req.Context().Value(bodySourceKey{}).(*bodySource)
	if !ok {
		fn()
		return
	}
	s.mu.Lock()
	s.done = fn
	s.mu.Unlock()
	s.released()
}

// CloseIdle closes idle upstream connections (on Cleanup).
func (c *Upstream) CloseIdle() { c.client.CloseIdleConnections() }
