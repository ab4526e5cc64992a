package capture

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash"
	"mime"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/redact"
)

// Meta is what a caller knows about a phase when it begins.
type Meta struct {
	// Method and URL of a request phase. The URL is redacted here.
	Method string
	URL    string
	// Status of a response phase.
	Status int
	// Header of the phase; redacted here. Its Content-Type is recorded
	// unless ContentType is set.
	Header      http.Header
	ContentType string
	// Begun is when the phase began (e.g. when the client request
	// arrived); the phase's time and duration count from it. Default: now.
	Begun time.Time
}

// begun returns when the phase began.
func (m *Meta) begun() time.Time {
	if m.Begun.IsZero() {
		return time.Now()
	}
	return m.Begun
}

// Request records the phases of one attempt of one relayed request. A nil
// *Request records nothing, so callers need no checks of their own. Its
// methods are safe for concurrent use.
type Request struct {
	w       *Writer
	id      string
	attempt int
	secrets []string

	mu      sync.Mutex
	model   string
	stream  bool
	outcome string
	open    []*Body
	pending job // finished phases not yet handed to the writer
}

// Begin starts recording attempt of request id. secrets are values (the
// relay's credentials) to redact wherever they appear in bodies. It returns
// nil when w is nil or disabled, or when id cannot name a file.
func (w *Writer) Begin(id string, attempt int, secrets []string) *Request {
	if w == nil || w.disabled.Load() || !ValidRequestID(id) || attempt < 1 {
		return nil
	}
	return &Request{w: w, id: id, attempt: attempt, secrets: secrets}
}

// SetModel records the model and stream flag for the phases that follow.
func (r *Request) SetModel(model string, stream bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.model, r.stream = model, stream
	r.mu.Unlock()
}

// SetOutcome records the reason code the request ended with; bodies still
// open at Finish carry it as their error unless it is "ok".
func (r *Request) SetOutcome(reason string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.outcome == "" {
		r.outcome = reason
	}
	r.mu.Unlock()
}

// Flush hands the phases finished so far to the writer, in one job. Call
// it at a point where they should reach the disk before a long wait (the
// relay does after recording the upstream request); Finish calls it too.
func (r *Request) Flush() {
	if r == nil {
		return
	}
	r.mu.Lock()
	j := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(j) > 0 {
		r.w.submit(j)
	}
}

// hold keeps appends for the next Flush.
func (r *Request) hold(a ...fileAppend) {
	r.mu.Lock()
	r.pending = append(r.pending, a...)
	r.mu.Unlock()
}

// Whole records a phase whose body is complete in memory.
func (r *Request) Whole(phase Phase, m Meta, body []byte) {
	if r == nil {
		return
	}
	b := r.Start(phase, m)
	b.write(body, true)
	b.Close("")
}

// NoBody records a phase that has no body (e.g. the upstream could not be
// reached), with reason as its error.
func (r *Request) NoBody(phase Phase, m Meta, reason string) {
	if r == nil {
		return
	}
	begun := m.begun()
	line := r.line(phase, m, begun)
	line.Error = reason
	r.holdLine(line, begun)
}

// Start begins a phase whose body arrives in pieces (Body.Write). The body
// is recorded as an event stream when the content type is
// text/event-stream, and as raw chunks otherwise.
func (r *Request) Start(phase Phase, m Meta) *Body {
	if r == nil {
		return nil
	}
	begun := m.begun()
	line := r.line(phase, m, begun)
	format := FormatRaw
	if mt, _, err := mime.ParseMediaType(line.ContentType); err == nil && mt == "text/event-stream" {
		format = FormatSSE
	}
	line.Body = &BodyRef{Path: ArtifactPath(begun, r.id, r.attempt, phase), Format: format}
	b := &Body{r: r, line: line, begun: begun, max: r.w.maxArtifact, hash: sha256.New()}
	b.gz = gzipPool.Get().(*gzip.Writer)
	b.gz.Reset(&b.buf)
	b.record(Record{
		Type: RecordHeader, V: Version, RequestID: r.id, Attempt: r.attempt, Phase: phase, Format: format,
		Method: line.Method, URL: line.URL, Status: line.Status, ContentType: line.ContentType,
		Model: line.Model, Stream: line.Stream, Headers: line.Headers,
	})
	r.mu.Lock()
	r.open = append(r.open, b)
	r.mu.Unlock()
	return b
}

// line builds the index line of a phase from what is known at its start.
func (r *Request) line(phase Phase, m Meta, begun time.Time) *IndexLine {
	r.mu.Lock()
	model, stream := r.model, r.stream
	r.mu.Unlock()
	ct := m.ContentType
	if ct == "" {
		ct = m.Header.Get("Content-Type")
	}
	return &IndexLine{
		V: Version, RequestID: r.id, Attempt: r.attempt, Phase: phase, Time: FormatTime(begun),
		Model: model, Stream: stream, Status: m.Status, ContentType: ct,
		Headers: redact.Headers(m.Header), Method: m.Method, URL: redact.URL(m.URL),
	}
}

// holdLine keeps an index line for the next Flush.
func (r *Request) holdLine(line *IndexLine, begun time.Time) {
	if a, ok := lineAppend(line, begun); ok {
		r.hold(a)
	}
}

// lineAppend encodes an index line, with its duration, as an append to
// today's index file.
func lineAppend(line *IndexLine, begun time.Time) (fileAppend, bool) {
	line.DurationUs = time.Since(begun).Microseconds()
	data, err := json.Marshal(line)
	if err != nil {
		return fileAppend{}, false
	}
	return fileAppend{rel: IndexName(time.Now()), data: append(data, '\n')}, true
}

// Finish closes every body still open, with the recorded outcome as its
// error unless it was "ok". Call it when the request ends.
func (r *Request) Finish() {
	if r == nil {
		return
	}
	r.mu.Lock()
	open := r.open
	r.open = nil
	reason := r.outcome
	r.mu.Unlock()
	if reason == "ok" {
		reason = ""
	}
	for _, b := range open {
		b.Close(reason)
	}
	r.Flush()
}

// gzipPool recycles compressors: their state is far bigger than a frame.
var gzipPool = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return gz
}}

// Body is the body of one phase being recorded. A nil *Body records
// nothing. Its methods are safe for concurrent use.
type Body struct {
	r     *Request
	line  *IndexLine
	begun time.Time
	max   int64

	mu        sync.Mutex
	gz        *gzip.Writer
	buf       bytes.Buffer
	hash      hash.Hash
	scratch   []byte
	submitted bool   // the artifact's first write was handed over
	lost      string // why the artifact is incomplete
	closed    bool
}

// Write records p: one frame of an event stream (with its arrival time),
// or the next piece of a raw body. p is redacted and copied; the caller
// keeps it.
func (b *Body) Write(p []byte) {
	if b == nil {
		return
	}
	b.write(p, false)
}

func (b *Body) write(p []byte, whole bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	ref := b.line.Body
	ref.Received += int64(len(p))
	if b.lost != "" || ref.Truncated {
		return
	}
	p, n := redact.Body(p, b.r.secrets...)
	ref.Redactions += n
	if room := b.max - ref.Size; int64(len(p)) > room {
		p = p[:room]
		ref.Truncated = true
	}
	if ref.Format == FormatSSE {
		ref.Frames++
		b.data(Record{Type: RecordFrame, T: time.Since(b.begun).Microseconds()}, p)
	} else {
		for len(p) > 0 {
			n := min(len(p), chunkSize)
			// keep UTF-8 sequences whole so that chunks stay readable
			for n < len(p) && n > chunkSize-4 && !utf8.RuneStart(p[n]) {
				n--
			}
			b.data(Record{Type: RecordChunk}, p[:n])
			p = p[n:]
		}
	}
	if ref.Truncated {
		b.record(Record{Type: RecordTruncated, At: ref.Size})
	}
	if !whole && b.buf.Len() >= flushSize {
		b.flush()
	}
}

// data records one chunk or frame holding p.
func (b *Body) data(rec Record, p []byte) {
	if utf8.Valid(p) {
		rec.Data = string(p)
	} else {
		rec.B64 = base64.StdEncoding.EncodeToString(p)
	}
	b.hash.Write(p)
	b.line.Body.Size += int64(len(p))
	b.record(rec)
}

// record appends one JSON line to the compressed artifact.
func (b *Body) record(rec Record) {
	if b.lost != "" {
		return
	}
	data, err := json.Marshal(rec)
	if err != nil {
		b.lost = "encode_failed"
		return
	}
	b.scratch = append(append(b.scratch[:0], data...), '\n')
	if _, err := b.gz.Write(b.scratch); err != nil {
		b.lost = "encode_failed"
	}
}

// flush hands the compressed bytes produced so far to the writer.
func (b *Body) flush() {
	if b.lost != "" || b.buf.Len() == 0 {
		return
	}
	a := fileAppend{rel: b.line.Body.Path, create: !b.submitted, data: bytes.Clone(b.buf.Bytes())}
	b.buf.Reset()
	if !b.r.w.submit(job{a}) {
		b.lost = "dropped"
		if b.r.w.disabled.Load() {
			b.lost = "disabled"
		}
		return
	}
	b.submitted = true
}

// Close ends the body and appends the phase's index line, with reason
// (a reason code) as its error when not empty. Later calls do nothing.
func (b *Body) Close(reason string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	ref := b.line.Body
	b.line.Error = reason
	var tail []fileAppend
	if b.lost == "" {
		ref.SHA256 = hex.EncodeToString(b.hash.Sum(nil))
		b.record(Record{Type: RecordEnd, Size: ref.Size, Received: ref.Received, Frames: ref.Frames,
			Redactions: ref.Redactions, SHA256: ref.SHA256})
		if err := b.gz.Close(); err != nil {
			b.lost = "encode_failed"
		}
		if b.lost == "" {
			tail = append(tail, fileAppend{rel: ref.Path, create: !b.submitted, data: bytes.Clone(b.buf.Bytes())})
			b.buf.Reset()
		}
	}
	if b.lost != "" {
		// the artifact is incomplete: the index line still says so
		ref.SHA256 = ""
		ref.Incomplete = b.lost
		tail = nil
	}
	gz := b.gz
	b.gz = nil
	if a, ok := lineAppend(b.line, b.begun); ok {
		tail = append(tail, a)
	}
	b.mu.Unlock()
	gz.Reset(nil)
	gzipPool.Put(gz)
	b.r.hold(tail...)
}
