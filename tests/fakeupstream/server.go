package fakeupstream

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBody caps request bodies; larger ones get 413.
const maxBody = 32 << 20

// epoch is the created_at of the first response; later ones count up from
// it so output does not depend on the wall clock.
const epoch = 1767225600

// Options configure a Server.
type Options struct {
	APIKey string        // required bearer token ("Authorization: Bearer <key>"); 401 otherwise
	Secret []byte        // key for reasoning ciphertext; random when nil
	Delay  time.Duration // default pause between SSE events (0 = none)
	// AltAPIKeys are further accepted bearer tokens. Reasoning issued under
	// one key does not verify under another, as with two OpenAI
	// organizations; tests use this for credential rotation.
	AltAPIKeys []string
}

// Server is a fake OpenAI Responses API. It implements http.Handler; tests
// wrap it in httptest.NewServer. It is safe for concurrent use.
type Server struct {
	opts Options
	keys []string
	seal *sealer
	ids  atomic.Uint64

	mu     sync.Mutex
	script func(*Request) Scenario
	reqs   []*Request
}

// Request is what the fake recorded about one HTTP request.
type Request struct {
	Body     json.RawMessage     // exactly as received
	Header   http.Header         // as received (tests check that the client's token did not leak)
	Method   string              // HTTP method
	Path     string              // URL path
	Stream   bool                // request field stream
	Model    string              // request field model
	Replayed []ReplayedReasoning // reasoning items in input that verified, in input order
	// Rejected is empty when the request was accepted, else the error code
	// returned (e.g. "invalid_encrypted_content", "unknown_parameter",
	// "fake_invalid_scenario"), or for errors OpenAI sends with a null code:
	// "not_found" (404), "unauthorized" (401), "method_not_allowed",
	// "request_too_large", or the error type ("invalid_request_error").
	Rejected        string
	RejectedMessage string   // the error message returned with Rejected
	Status          int      // HTTP status the fake answered with
	Scenario        Scenario // the scenario the request was answered with (accepted requests)
	ResponseID      string   // the response id this request got (if any)

	parsed *parsedRequest
}

// ReplayedReasoning identifies an issued reasoning item that came back in input.
type ReplayedReasoning struct {
	ID         string // reasoning item id the ciphertext was issued for
	ResponseID string // response that issued it
	WithID     bool   // the input item carried its id (false: sent without id, codex style)
}

// items returns the validated input items, or nil before validation.
func (r *Request) items() []inputItem {
	if r == nil || r.parsed == nil {
		return nil
	}
	return r.parsed.items
}

// UserText is the text of the last user message of the input, without any
// scenario token; empty when there is none or the request was rejected
// before its input was read.
func (r *Request) UserText() string {
	_, rest := ParseScenario(lastUserText(r.items()))
	return rest
}

// New returns a Server. A nil Secret is replaced by 32 random bytes.
func New(opts Options) *Server {
	secret := opts.Secret
	if secret == nil {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret) // crypto/rand.Read never fails (Go 1.24+)
	}
	seal, err := newSealer(secret)
	if err != nil {
		// AES-256 with a 32-byte derived key cannot fail; keep a nil
		// sealer and answer 500 rather than panicking.
		seal = nil
	}
	keys := append([]string{opts.APIKey}, opts.AltAPIKeys...)
	return &Server{opts: opts, keys: keys, seal: seal}
}

// SetScript overrides how a request is answered (nil restores DefaultScript).
func (s *Server) SetScript(f func(*Request) Scenario) {
	s.mu.Lock()
	s.script = f
	s.mu.Unlock()
}

// Requests returns a copy of every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		c := *r
		c.Body = append(json.RawMessage(nil), r.Body...)
		c.Header = r.Header.Clone()
		c.Replayed = append([]ReplayedReasoning(nil), r.Replayed...)
		out[i] = c
	}
	return out
}

// Reset forgets recorded requests (issued reasoning stays valid).
func (s *Server) Reset() {
	s.mu.Lock()
	s.reqs = nil
	s.mu.Unlock()
}

// nextID returns a fresh id with the given prefix, derived from a counter.
func (s *Server) nextID(prefix string, hexLen int) (string, uint64) {
	n := s.ids.Add(1)
	sum := sha256.Sum256([]byte(prefix + strconv.FormatUint(n, 10)))
	return prefix + hex.EncodeToString(sum[:])[:hexLen], n
}

// ServeHTTP answers POST .../responses; every other path gets a 404 JSON error.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID, _ := s.nextID("req_", 32)
	w.Header().Set("X-Request-Id", reqID)
	body, readErr := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	rec := &Request{Body: body, Header: r.Header.Clone(), Method: r.Method, Path: r.URL.Path}
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	script := s.script
	s.mu.Unlock()

	p, apiKey, replayed, aerr := s.admit(r, body, readErr)
	if aerr != nil {
		s.update(rec, func(rec *Request) {
			if p != nil {
				rec.parsed, rec.Stream, rec.Model = p, p.stream, p.model
			} else {
				rec.Model, rec.Stream = peek(body)
			}
			rec.Rejected, rec.RejectedMessage, rec.Status = aerr.reason(), aerr.Message, aerr.Status
		})
		aerr.write(w)
		return
	}
	view := Request{Body: body, Header: rec.Header, Method: r.Method, Path: r.URL.Path,
		Stream: p.stream, Model: p.model, Replayed: replayed, parsed: p}
	if script == nil {
		script = DefaultScript
	}
	sc := script(&view)
	if sc.Kind == "" {
		sc.Kind = KindText
	}
	if !slices.Contains(kinds, sc.Kind) && sc.Invalid == "" {
		sc.Invalid = fmt.Sprintf("fakeupstream: script returned unknown scenario kind %q", sc.Kind)
	}
	t := s.newTurn(p, sc, apiKey)
	s.update(rec, func(rec *Request) {
		rec.parsed, rec.Stream, rec.Model, rec.Replayed, rec.Scenario = p, p.stream, p.model, replayed, sc
		rec.ResponseID, rec.Status = t.respID, t.httpStatus()
		if sc.Invalid != "" {
			rec.Rejected, rec.RejectedMessage, rec.ResponseID = "fake_invalid_scenario", sc.Invalid, ""
		}
	})
	t.serve(w, r)
}

// peek reads model and stream from a body that failed validation, best effort.
func peek(body []byte) (string, bool) {
	var top struct {
		Model  json.RawMessage `json:"model"`
		Stream json.RawMessage `json:"stream"`
	}
	if json.Unmarshal(body, &top) != nil {
		return "", false
	}
	var model string
	var stream bool
	_ = json.Unmarshal(top.Model, &model)
	_ = json.Unmarshal(top.Stream, &stream)
	return model, stream
}

// update changes a recorded request under the lock.
func (s *Server) update(rec *Request, f func(*Request)) {
	s.mu.Lock()
	f(rec)
	s.mu.Unlock()
}

// admit authenticates and validates a request, returning the parsed body,
// the API key used and the verified reasoning items.
func (s *Server) admit(r *http.Request, body []byte, readErr error) (*parsedRequest, string, []ReplayedReasoning, *apiError) {
	if !strings.HasSuffix(r.URL.Path, "/responses") {
		return nil, "", nil, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)}
	}
	apiKey, aerr := s.authenticate(r)
	if aerr != nil {
		return nil, "", nil, aerr
	}
	if r.Method != http.MethodPost {
		return nil, "", nil, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
			Message: fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path)}
	}
	if readErr != nil {
		return nil, "", nil, invalidRequest("", "", fmt.Sprintf("Could not read the request body: %v", readErr))
	}
	if len(body) > maxBody {
		return nil, "", nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Message: fmt.Sprintf("Request body too large: the limit is %d bytes.", maxBody)}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, "", nil, invalidRequest("", "", fmt.Sprintf(
			"Invalid Content-Type header (%q), expected application/json.", r.Header.Get("Content-Type")))
	}
	decoded, aerr := decodeBody(r.Header.Get("Content-Encoding"), body)
	if aerr != nil {
		return nil, "", nil, aerr
	}
	p, aerr := parseRequest(decoded)
	if aerr != nil {
		return nil, "", nil, aerr
	}
	if s.seal == nil {
		return p, "", nil, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "fakeupstream: no cipher"}
	}
	replayed, aerr := s.verifyReasoning(p.items, apiKey)
	if aerr != nil {
		return p, "", nil, aerr
	}
	return p, apiKey, replayed, nil
}

// decodeBody undoes an identity or gzip Content-Encoding; others are rejected.
func decodeBody(encoding string, body []byte) ([]byte, *apiError) {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, invalidRequest("", "", fmt.Sprintf("Could not decode gzip request body: %v", err))
		}
		out, err := io.ReadAll(io.LimitReader(zr, maxBody+1))
		if err != nil || len(out) > maxBody {
			return nil, invalidRequest("", "", "Could not decode gzip request body.")
		}
		return out, nil
	default:
		return nil, invalidRequest("", "", fmt.Sprintf("Unsupported Content-Encoding %q.", encoding))
	}
}

// authenticate checks "Authorization: Bearer <key>" against the accepted keys.
func (s *Server) authenticate(r *http.Request) (string, *apiError) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || token == "" {
		return "", &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error",
			Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."}
	}
	for _, k := range s.keys {
		if k != "" && subtle.ConstantTimeCompare([]byte(k), []byte(token)) == 1 {
			return k, nil
		}
	}
	return "", &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key",
		Message: fmt.Sprintf("Incorrect API key provided: %s.", maskKey(token))}
}

// maskKey shows only the ends of a key, as OpenAI does.
func maskKey(k string) string {
	if len(k) <= 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + strings.Repeat("*", 8) + k[len(k)-4:]
}
