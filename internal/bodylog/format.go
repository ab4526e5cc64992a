package bodylog

import (
	"bytes"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"time"
)

// Phase names one of the four recorded steps of an attempt.
type Phase string

// The phases, in the order they happen.
const (
	ClientRequest    Phase = "client_request"
	UpstreamRequest  Phase = "upstream_request"
	UpstreamResponse Phase = "upstream_response"
	ClientResponse   Phase = "client_response"
)

// Phases lists the phases in order.
var Phases = []Phase{ClientRequest, UpstreamRequest, UpstreamResponse, ClientResponse}

// Valid reports whether p is one of the four phases.
func (p Phase) Valid() bool {
	switch p {
	case ClientRequest, UpstreamRequest, UpstreamResponse, ClientResponse:
		return true
	}
	return false
}

// Body formats.
const (
	// FormatRaw is a body stored as chunk records.
	FormatRaw = "raw"
	// FormatSSE is an event stream stored as frame records.
	FormatSSE = "sse"
)

// Version is the version of the index line and artifact formats.
const Version = 1

// Limits and defaults.
const (
	// DefaultMaxArtifactBytes is the stored body size after which an
	// artifact is cut with a truncation record.
	DefaultMaxArtifactBytes = 8 << 20
	// DefaultWriteTimeout is the longest one file write may take before
	// the writer disables itself.
	DefaultWriteTimeout = 2 * time.Second
	// DefaultMaxOutstanding is how many file writes may be queued or
	// running at once across all requests of one directory.
	DefaultMaxOutstanding = 4
	// chunkSize is the largest body chunk record.
	chunkSize = 64 << 10
	// flushSize is how much compressed output a streamed artifact
	// accumulates before it is handed to the worker.
	flushSize = 64 << 10
)

// IndexLine is one line of a relay-capture-YYYY-MM-DD.jsonl index file.
type IndexLine struct {
	// V is the format version (Version).
	V int `json:"v"`
	// RequestID is the relay's request ID (X-Relay-Request-Id).
	RequestID string `json:"requestId"`
	// Attempt numbers the upstream attempts of one request from 1.
	Attempt int `json:"attempt"`
	// Phase is the recorded phase.
	Phase Phase `json:"phase"`
	// Time is when the phase began, RFC 3339 in UTC with nanoseconds.
	Time string `json:"time"`
	// Model is the requested (client phases) or upstream model.
	Model string `json:"model,omitempty"`
	// Stream is the request's stream flag.
	Stream bool `json:"stream"`
	// Status is the HTTP status of a response phase.
	Status int `json:"status,omitempty"`
	// DurationUs is how long the phase took, in microseconds.
	DurationUs int64 `json:"durationUs"`
	// ContentType is the body's Content-Type.
	ContentType string `json:"contentType,omitempty"`
	// Headers are the phase's headers, redacted.
	Headers http.Header `json:"headers"`
	// Method is the HTTP method of a request phase.
	Method string `json:"method,omitempty"`
	// URL is the redacted URL of a request phase (the client's request
	// URI, or the absolute upstream URL).
	URL string `json:"url,omitempty"`
	// Body references the body artifact; nil when the phase had no body
	// (e.g. the upstream could not be reached).
	Body *BodyRef `json:"body,omitempty"`
	// Error is a reason code when the phase ended abnormally.
	Error string `json:"error,omitempty"`
}

// BodyRef describes a body artifact.
type BodyRef struct {
	// Path is the artifact's path relative to the capture directory,
	// slash-separated.
	Path string `json:"path"`
	// Format is FormatRaw or FormatSSE.
	Format string `json:"format"`
	// SHA256 is the hex SHA-256 of the stored body; empty when the
	// artifact is incomplete.
	SHA256 string `json:"sha256,omitempty"`
	// Size is the stored body's length in bytes.
	Size int64 `json:"size"`
	// Received is how many body bytes the relay saw (more than Size when
	// truncated).
	Received int64 `json:"received"`
	// Frames counts the frame records of an event stream.
	Frames int `json:"frames,omitempty"`
	// Truncated is set when the body was cut at the artifact cap.
	Truncated bool `json:"truncated,omitempty"`
	// Redactions counts the values replaced by [REDACTED] in the body.
	Redactions int `json:"redactions,omitempty"`
	// Incomplete names why the artifact could not be written completely
	// ("dropped": the write queue was full; "disabled": the writer
	// disabled itself). The artifact must not be trusted then.
	Incomplete string `json:"incomplete,omitempty"`
}

// Record types of an artifact.
const (
	RecordHeader    = "header"
	RecordChunk     = "chunk"
	RecordFrame     = "frame"
	RecordTruncated = "truncated"
	RecordEnd       = "end"
)

// Record is one JSON line of a decompressed artifact.
type Record struct {
	// Type is one of the Record* constants.
	Type string `json:"type"`

	// Header fields: identity and the metadata of the index line known
	// when the phase began, with the IndexLine fields' meanings.
	//
	// V is the format version (Version).
	V int `json:"v,omitempty"`
	// RequestID is the relay's request ID (X-Relay-Request-Id).
	RequestID string `json:"requestId,omitempty"`
	// Attempt numbers the upstream attempts of one request from 1.
	Attempt int `json:"attempt,omitempty"`
	// Phase is the recorded phase.
	Phase Phase `json:"phase,omitempty"`
	// Format is FormatRaw or FormatSSE.
	Format string `json:"format,omitempty"`
	// Method and URL are a request phase's method and redacted URL.
	Method string `json:"method,omitempty"`
	URL    string `json:"url,omitempty"`
	// Status is a response phase's HTTP status.
	Status int `json:"status,omitempty"`
	// ContentType is the phase's Content-Type.
	ContentType string `json:"contentType,omitempty"`
	// Model is the requested (client phases) or upstream model.
	Model string `json:"model,omitempty"`
	// Stream is the request's stream flag.
	Stream bool `json:"stream,omitempty"`
	// Headers are the phase's headers, redacted.
	Headers http.Header `json:"headers,omitempty"`

	// Chunk and frame fields. T is a frame's arrival time in microseconds
	// since the phase began.
	T int64 `json:"t,omitempty"`
	// Data holds the bytes when they are valid UTF-8.
	Data string `json:"data,omitempty"`
	// B64 holds any other bytes (standard base64).
	B64 string `json:"b64,omitempty"`

	// Truncated fields. At is the body offset where the artifact was cut.
	At int64 `json:"at,omitempty"`

	// End fields, as in BodyRef: Size is the stored body's length,
	// Received the body bytes the relay saw, Frames the frame records,
	// Redactions the values replaced by [REDACTED], SHA256 the hex
	// SHA-256 of the stored body.
	Size       int64  `json:"size,omitempty"`
	Received   int64  `json:"received,omitempty"`
	Frames     int    `json:"frames,omitempty"`
	Redactions int    `json:"redactions,omitempty"`
	SHA256     string `json:"sha256,omitempty"`
}

// requestIDPattern is what a request ID must look like to be captured or
// exported: it becomes part of a file name.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidRequestID reports whether id can name capture files.
func ValidRequestID(id string) bool { return requestIDPattern.MatchString(id) }

// indexNamePattern matches index file names.
var indexNamePattern = regexp.MustCompile(`^relay-capture-[0-9]{4}-[0-9]{2}-[0-9]{2}\.jsonl$`)

// IsIndexName reports whether a file name is an index file's.
func IsIndexName(name string) bool { return indexNamePattern.MatchString(name) }

// IndexName returns the index file name for the UTC day of t.
func IndexName(t time.Time) string {
	return "relay-capture-" + t.UTC().Format("2006-01-02") + ".jsonl"
}

// BodiesDir is the folder of the artifacts, relative to the capture
// directory.
const BodiesDir = "bodies"

// ArtifactPath returns the slash-separated path, relative to the capture
// directory, of the artifact of one phase begun at t.
func ArtifactPath(t time.Time, requestID string, attempt int, phase Phase) string {
	return path.Join(BodiesDir, t.UTC().Format("2006-01-02"),
		requestID+"-"+strconv.Itoa(attempt)+"-"+string(phase)+".gz")
}

// artifactPathPattern matches what ArtifactPath produces.
var artifactPathPattern = regexp.MustCompile(`^bodies/[0-9]{4}-[0-9]{2}-[0-9]{2}/[A-Za-z0-9_-]{1,64}-[0-9]{1,9}-(client_request|upstream_request|upstream_response|client_response)\.gz$`)

// CheckArtifactPath reports an error unless p has exactly the shape
// ArtifactPath gives the artifact of requestID, attempt and phase.
func CheckArtifactPath(p, requestID string, attempt int, phase Phase) error {
	if !artifactPathPattern.MatchString(p) {
		return fmt.Errorf("artifact path %q is not a capture artifact path", p)
	}
	want := "-" + strconv.Itoa(attempt) + "-" + string(phase) + ".gz"
	base := path.Base(p)
	if base != requestID+want {
		return fmt.Errorf("artifact path %q does not belong to %s attempt %d phase %s", p, requestID, attempt, phase)
	}
	return nil
}

// FormatTime renders t the way index lines do.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// AppendSSEFrame appends one event the way event streams are recorded and
// compared: "event: <name>\n" when name is set, one "data: " line per line
// of data, then a blank line.
func AppendSSEFrame(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	for {
		i := bytes.IndexByte(data, '\n')
		dst = append(dst, "data: "...)
		if i < 0 {
			dst = append(dst, data...)
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		data = data[i+1:]
	}
	return append(dst, "\n\n"...)
}
