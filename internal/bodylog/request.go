package bodylog

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

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/redact"
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

// Request records the phases of one relayed request, attempt by attempt.
// A nil *Request records nothing, so callers need no checks of their own.
// Its methods are safe for concurrent use.
//
// A second upstream_request starts a new attempt: the bodies still open
// are closed, the attempt number goes up and the client_request is
// recorded again under it, so that every attempt has its four phases.
type Request struct {
	w       *Writer
	id      string
	secrets []string

	mu           sync.Mutex
	attempt      int
	model        string
	stream       bool
	outcome      string
	open         []*Body
	pending      job // finished phases not yet handed to the writer
	clientMeta   Meta
	clientBody   []byte // the client_request body, for later attempts
	sawUpstream  bool
	haveClientRq bool
}

// Attempt returns the attempt being recorded.
func (r *Request) Attempt() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempt
}

// nextAttempt closes what is open and starts the next attempt with the
// client request recorded again.
func (r *Request) nextAttempt() {
	r.mu.Lock()
	open := r.open
	r.open = nil
	r.mu.Unlock()
	for _, b := range open {
		b.Close("retried")
	}
	r.mu.Lock()
	r.attempt++
	meta, body, have := r.clientMeta, r.clientBody, r.haveClientRq
	r.mu.Unlock()
	if have {
		r.record(ClientRequest, meta, body)
	}
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

// Whole records a phase whose body is complete in memory. The body of a
// client_request is kept (not copied) until the request ends, to record it
// again for a later attempt: the caller must not modify it.
func (r *Request) Whole(phase Phase, m Meta, body []byte) {
	if r == nil {
		return
	}
	switch phase {
	case ClientRequest:
		m.Begun = m.begun()
		r.mu.Lock()
		r.clientMeta, r.clientBody, r.haveClientRq = m, body, true
		r.mu.Unlock()
	case UpstreamRequest:
		r.mu.Lock()
		again := r.sawUpstream
		r.sawUpstream = true
		r.mu.Unlock()
		if again {
			r.nextAttempt()
		}
	}
	r.record(phase, m, body)
}

// record writes a whole phase.
func (r *Request) record(phase Phase, m Meta, body []byte) {
	b := r.Start(phase, m)
	b.Write(body)
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
	line.Body = &BodyRef{Path: ArtifactPath(begun, r.id, line.Attempt, phase), Format: format}
	b := &Body{r: r, line: line, begun: begun, max: r.w.maxArtifact}
	b.header = Record{
		Type: RecordHeader, V: Version, RequestID: r.id, Attempt: line.Attempt, Phase: phase, Format: format,
		Method: line.Method, URL: line.URL, Status: line.Status, ContentType: line.ContentType,
		Model: line.Model, Stream: line.Stream, Headers: line.Headers,
	}
	if format == FormatSSE {
		b.begin()
	}
	r.mu.Lock()
	r.open = append(r.open, b)
	r.mu.Unlock()
	return b
}

// line builds the index line of a phase from what is known at its start.
func (r *Request) line(phase Phase, m Meta, begun time.Time) *IndexLine {
	r.mu.Lock()
	model, stream, attempt := r.model, r.stream, r.attempt
	r.mu.Unlock()
	ct := m.ContentType
	if ct == "" {
		ct = m.Header.Get("Content-Type")
	}
	return &IndexLine{
		V: Version, RequestID: r.id, Attempt: attempt, Phase: phase, Time: FormatTime(begun),
		Model: model, Stream: stream, Status: m.Status, ContentType: ct,
		Headers: redact.Headers(m.Header, r.secrets...), Method: m.Method, URL: redact.URL(m.URL, r.secrets...),
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

// rawSlack is how far past the artifact cap a raw body is kept before it
// is redacted and cut, so that a secret straddling the cap is still
// recognized and never stored in part.
const rawSlack = 4096

// Body is the body of one phase being recorded. A nil *Body records
// nothing. Its methods are safe for concurrent use.
//
// An event stream is encoded frame by frame as it arrives, on the caller's
// goroutine (a few microseconds a frame), and handed to the writer in
// compressed pieces. A raw body is only copied as it arrives; redaction,
// hashing, encoding and compression happen on the writer's worker after
// Close, so that recording a large request body costs the request a copy.
type Body struct {
	r      *Request
	line   *IndexLine
	header Record
	begun  time.Time
	max    int64

	mu        sync.Mutex
	raw       []byte // a raw body as received, up to max+rawSlack bytes
	gz        *gzip.Writer
	buf       bytes.Buffer
	hash      hash.Hash
	scratch   []byte
	submitted bool   // the artifact's first piece was handed over
	lost      string // why the artifact is incomplete
	closed    bool
}

// begin starts the compressed artifact with its header record.
func (b *Body) begin() {
	b.hash = sha256.New()
	b.gz = gzipPool.Get().(*gzip.Writer)
	b.gz.Reset(&b.buf)
	b.record(b.header)
}

// Write records p: one frame of an event stream (with its arrival time),
// or the next piece of a raw body. p is copied; the caller keeps it.
func (b *Body) Write(p []byte) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	ref := b.line.Body
	ref.Received += int64(len(p))
	if ref.Format == FormatRaw {
		if room := b.max + rawSlack - int64(len(b.raw)); room > 0 {
			b.raw = append(b.raw, p[:min(int64(len(p)), room)]...)
		}
		return
	}
	if b.lost != "" || ref.Truncated {
		return
	}
	p, n := redact.Body(p, b.r.secrets...)
	ref.Redactions += n
	if room := b.max - ref.Size; int64(len(p)) > room {
		p = p[:room]
		ref.Truncated = true
	}
	ref.Frames++
	b.data(Record{Type: RecordFrame, T: time.Since(b.begun).Microseconds()}, p)
	if ref.Truncated {
		b.record(Record{Type: RecordTruncated, At: ref.Size})
	}
	if b.buf.Len() >= flushSize {
		b.flush()
	}
}

// renderRaw encodes a raw body into its artifact and index line; the
// writer's worker runs it.
func (b *Body) renderRaw(indexName string, durationUs int64) []fileAppend {
	ref := b.line.Body
	p, n := redact.Body(b.raw, b.r.secrets...)
	ref.Redactions = n
	ref.Truncated = ref.Received > int64(len(b.raw)) // bytes past the slack were never kept
	if int64(len(p)) > b.max {
		p = p[:b.max]
		ref.Truncated = true
	}
	b.begin()
	for len(p) > 0 {
		n := min(len(p), chunkSize)
		// keep UTF-8 sequences whole so that chunks stay readable
		for n < len(p) && n > chunkSize-4 && !utf8.RuneStart(p[n]) {
			n--
		}
		b.data(Record{Type: RecordChunk}, p[:n])
		p = p[n:]
	}
	if ref.Truncated {
		b.record(Record{Type: RecordTruncated, At: ref.Size})
	}
	b.raw = nil
	out := b.finish()
	if b.lost != "" {
		ref.SHA256, ref.Incomplete = "", b.lost
		out = nil
	}
	b.line.DurationUs = durationUs
	if data, err := json.Marshal(b.line); err == nil {
		out = append(out, fileAppend{rel: indexName, data: append(data, '\n')})
	}
	return out
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

// finish writes the end record, closes the compressor and returns the
// artifact's last piece (none when the artifact is lost).
func (b *Body) finish() []fileAppend {
	ref := b.line.Body
	var out []fileAppend
	if b.lost == "" {
		ref.SHA256 = hex.EncodeToString(b.hash.Sum(nil))
		b.record(Record{Type: RecordEnd, Size: ref.Size, Received: ref.Received, Frames: ref.Frames,
			Redactions: ref.Redactions, SHA256: ref.SHA256})
		if err := b.gz.Close(); err != nil {
			b.lost = "encode_failed"
		}
		if b.lost == "" {
			out = append(out, fileAppend{rel: ref.Path, create: !b.submitted, data: bytes.Clone(b.buf.Bytes())})
		}
	}
	b.buf = bytes.Buffer{}
	b.gz.Reset(nil)
	gzipPool.Put(b.gz)
	b.gz = nil
	return out
}

// Close ends the body; the phase's artifact and index line are written
// with the request's next Flush. reason (a reason code) becomes the
// phase's error when not empty. Later calls do nothing.
func (b *Body) Close(reason string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	b.line.Error = reason
	durationUs := time.Since(b.begun).Microseconds()
	indexName := IndexName(time.Now())
	if b.line.Body.Format == FormatRaw {
		b.r.hold(fileAppend{render: func() []fileAppend { return b.renderRaw(indexName, durationUs) }, size: int64(len(b.raw))})
		return
	}
	tail := b.finish()
	if b.lost != "" {
		// the artifact is incomplete: the index line still says so
		b.line.Body.SHA256, b.line.Body.Incomplete = "", b.lost
		tail = nil
	}
	b.line.DurationUs = durationUs
	if data, err := json.Marshal(b.line); err == nil {
		tail = append(tail, fileAppend{rel: indexName, data: append(data, '\n')})
	}
	b.r.hold(tail...)
}
