package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/redact"
)

// BundleFormat identifies a replay bundle.
const BundleFormat = "caddy-reasoning-relay/replay-bundle"

// BundleVersion is the version of the bundle format.
const BundleVersion = 1

// Bundle is everything known about one captured request, self-contained.
type Bundle struct {
	// Format is BundleFormat.
	Format string `json:"format"`
	// Version is BundleVersion.
	Version int `json:"version"`
	// RequestID is the relay's request ID.
	RequestID string `json:"requestId"`
	// Attempt is the attempt the request and completeness describe.
	Attempt int `json:"attempt"`
	// Attempts lists every captured attempt, ascending.
	Attempts []int `json:"attempts"`
	// Request is the upstream request of Attempt; nil when it was not
	// captured.
	Request *Request `json:"request,omitempty"`
	// Captures are all captures of the request, by attempt and phase.
	Captures []Capture `json:"captures"`
	// Completeness says whether Request can be replayed.
	Completeness Completeness `json:"completeness"`
}

// Request is the literal request that went upstream.
type Request struct {
	// Method is the HTTP method.
	Method string `json:"method"`
	// URL is the absolute upstream URL (redacted form).
	URL string `json:"url"`
	// Headers are the request headers; credentials are [REDACTED].
	Headers http.Header `json:"headers"`
	// Body is the body when it is valid UTF-8; BodyBase64 otherwise.
	Body       string `json:"body,omitempty"`
	BodyBase64 string `json:"bodyBase64,omitempty"`
	// BodySHA256 is the hex SHA-256 of the body bytes.
	BodySHA256 string `json:"bodySha256"`
	// BodySize is the body's length in bytes.
	BodySize int64 `json:"bodySize"`
	// ContentType, Model and Stream repeat the capture's.
	ContentType string `json:"contentType,omitempty"`
	Model       string `json:"model,omitempty"`
	Stream      bool   `json:"stream"`
}

// Capture is one index line with its verified body.
type Capture struct {
	// Index is the index line as read.
	Index bodylog.IndexLine `json:"index"`
	// Body holds a raw body that is valid UTF-8; BodyBase64 any other.
	Body       string `json:"body,omitempty"`
	BodyBase64 string `json:"bodyBase64,omitempty"`
	// Frames holds the frames of an event stream.
	Frames []Frame `json:"frames,omitempty"`
	// Issues name what is wrong with this capture (e.g. a missing
	// artifact); empty when it is complete.
	Issues []string `json:"issues,omitempty"`
}

// Frame is one recorded event-stream frame.
type Frame struct {
	// T is the arrival time in microseconds since the phase began.
	T int64 `json:"t"`
	// Data is the frame when valid UTF-8; DataBase64 otherwise.
	Data       string `json:"data,omitempty"`
	DataBase64 string `json:"dataBase64,omitempty"`
}

// Completeness decides whether a bundle's request can be replayed.
type Completeness struct {
	// Replayable is true when Blockers is empty.
	Replayable bool `json:"replayable"`
	// Blockers are sorted reason codes such as "missing_phase:upstream_request".
	Blockers []string `json:"blockers"`
	// Warnings are sorted reason codes that do not prevent a replay.
	Warnings []string `json:"warnings"`
}

// encodeBytes splits b into a UTF-8 string or base64.
func encodeBytes(b []byte) (text, b64 string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return "", base64.StdEncoding.EncodeToString(b)
}

// decodeBytes is the inverse of encodeBytes.
func decodeBytes(text, b64 string) ([]byte, error) {
	if b64 != "" {
		if text != "" {
			return nil, errors.New("both text and base64 are set")
		}
		return base64.StdEncoding.DecodeString(b64)
	}
	return []byte(text), nil
}

// BodyBytes returns the request body.
func (r *Request) BodyBytes() ([]byte, error) { return decodeBytes(r.Body, r.BodyBase64) }

// BodyBytes returns a capture's stored body: the raw body, or the frames
// concatenated.
func (c *Capture) BodyBytes() ([]byte, error) {
	if len(c.Frames) == 0 {
		return decodeBytes(c.Body, c.BodyBase64)
	}
	var buf bytes.Buffer
	for _, f := range c.Frames {
		p, err := decodeBytes(f.Data, f.DataBase64)
		if err != nil {
			return nil, err
		}
		buf.Write(p)
	}
	return buf.Bytes(), nil
}

// Find returns the capture of attempt and phase, or nil.
func (b *Bundle) Find(attempt int, phase bodylog.Phase) *Capture {
	for i := range b.Captures {
		c := &b.Captures[i]
		if c.Index.Attempt == attempt && c.Index.Phase == phase {
			return c
		}
	}
	return nil
}

// ReadBundle reads and checks a bundle file: at most MaxBundleBytes, not a
// symbolic link, known format and version, no unknown fields, every header
// and URL in redacted form, no credential-shaped token in any body, and
// the request body matching its SHA-256 and size.
func ReadBundle(path string) (*Bundle, error) {
	data, err := readFileCapped(path, MaxBundleBytes)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Bundle
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("read bundle %s: not a replay bundle: %w", path, err)
	}
	if b.Format != BundleFormat || b.Version != BundleVersion {
		return nil, fmt.Errorf("read bundle %s: format %q version %d is not %s version %d", path, b.Format, b.Version, BundleFormat, BundleVersion)
	}
	if err := b.CheckRedacted(); err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", path, err)
	}
	if r := b.Request; r != nil {
		body, err := r.BodyBytes()
		if err != nil {
			return nil, fmt.Errorf("read bundle %s: request body: %w", path, err)
		}
		sum := sha256.Sum256(body)
		if hex.EncodeToString(sum[:]) != r.BodySHA256 || int64(len(body)) != r.BodySize {
			return nil, fmt.Errorf("read bundle %s: the request body does not match its SHA-256 or size", path)
		}
	}
	return &b, nil
}

// CheckRedacted reports an error when any header, URL or body of the
// bundle is not in redacted form.
func (b *Bundle) CheckRedacted() error {
	if r := b.Request; r != nil {
		if err := redact.CheckHeaders(r.Headers); err != nil {
			return fmt.Errorf("request: %w", err)
		}
		if err := redact.CheckURL(r.URL); err != nil {
			return fmt.Errorf("request: %w", err)
		}
		body, err := r.BodyBytes()
		if err != nil {
			return fmt.Errorf("request body: %w", err)
		}
		if err := redact.CheckBody(body); err != nil {
			return fmt.Errorf("request: %w", err)
		}
	}
	for i := range b.Captures {
		c := &b.Captures[i]
		where := fmt.Sprintf("capture %s attempt %d", c.Index.Phase, c.Index.Attempt)
		if err := checkLine(&c.Index); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		body, err := c.BodyBytes()
		if err != nil {
			return fmt.Errorf("%s body: %w", where, err)
		}
		if err := redact.CheckBody(body); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

// checkLine reports an error when an index line's headers or URL are not
// in redacted form.
func checkLine(l *bodylog.IndexLine) error {
	if err := redact.CheckHeaders(l.Headers); err != nil {
		return err
	}
	return redact.CheckURL(l.URL)
}
