package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/textproto"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/redact"
)

// ComparisonFormat identifies a comparison document.
const ComparisonFormat = "caddy-reasoning-relay/replay-comparison"

// Bounds of a replay's timeout.
const (
	MinTimeout     = time.Second
	MaxTimeout     = 10 * time.Minute
	DefaultTimeout = 2 * time.Minute
)

// CompareOptions say how to replay a bundle.
type CompareOptions struct {
	// Execute must be true: nothing is sent otherwise.
	Execute bool
	// URL, when set, is the endpoint to send to, authorized by the
	// operator; otherwise the bundle's URL, which must be TrustedEndpoint.
	URL string
	// HeaderEnv fill redacted headers: each "Name=ENVVAR" sets header
	// Name from environment variable ENVVAR. An Authorization value
	// without a scheme gets "Bearer ".
	HeaderEnv []string
	// LookupEnv reads the environment. Default: os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Timeout bounds the whole exchange, 1s to 10m. Default: 2m.
	Timeout time.Duration
}

// Comparison is the outcome of a replay. Each *Matches field is null when
// either side was truncated or missing, so null never reads as a mismatch.
type Comparison struct {
	// Format is ComparisonFormat and Version is BundleVersion: they
	// identify the document's layout.
	Format  string `json:"format"`
	Version int    `json:"version"`
	// RequestID and Attempt identify the replayed request, as in the
	// bundle.
	RequestID string `json:"requestId"`
	Attempt   int    `json:"attempt"`
	// Method is the replayed request's HTTP method.
	Method string `json:"method"`
	// Endpoint is the URL the request was replayed to, redacted.
	Endpoint string `json:"endpoint"`
	// RequestBodySHA256 is the hex SHA-256 of the replayed request body.
	RequestBodySHA256 string `json:"requestBodySha256"`
	// Original is the recorded response; Replay the one just received.
	Original Side `json:"original"`
	Replay   Side `json:"replay"`
	// StatusMatches compares the HTTP statuses.
	StatusMatches *bool `json:"statusMatches"`
	// BodyHashMatches compares the bodies byte for byte (by SHA-256).
	BodyHashMatches *bool `json:"bodyHashMatches"`
	// JSONShapeMatches compares the bodies' JSON shapes (paths and types,
	// not values); JSONShape lists the differences.
	JSONShapeMatches *bool `json:"jsonShapeMatches"`
	// ContentTypeMatches compares the Content-Type headers.
	ContentTypeMatches *bool `json:"contentTypeMatches"`
	// JSONShape lists the JSON paths only one side has.
	JSONShape ShapeDiff `json:"jsonShape"`
	// SSE compares two event streams; nil unless both sides are one.
	SSE *SSEDiff `json:"sse,omitempty"`
}

// Side describes one response.
type Side struct {
	// Status is the HTTP status; 0 when there was no response.
	Status int `json:"status"`
	// ContentType is the response's Content-Type.
	ContentType string `json:"contentType"`
	// Headers are the replayed response's headers, redacted.
	Headers http.Header `json:"headers,omitempty"`
	// BodySHA256 is the hex SHA-256 of the body (event streams: of their
	// frames as captures record them); empty when truncated or missing.
	BodySHA256 string `json:"bodySha256"`
	// BodyBytes counts the body bytes received; StoredBytes those kept.
	BodyBytes   int64 `json:"bodyBytes"`
	StoredBytes int64 `json:"storedBytes"`
	// Truncated is set when the body was cut at a cap.
	Truncated bool `json:"truncated"`
	// Missing is set when there is no body to compare.
	Missing bool `json:"missing"`
	// Body is the replayed body as stored (redacted); BodyBase64 when not
	// UTF-8.
	Body       string `json:"body,omitempty"`
	BodyBase64 string `json:"bodyBase64,omitempty"`
	// Error says why a replay got no (complete) response.
	Error string `json:"error,omitempty"`
}

// ShapeDiff lists the shape paths found on one side only.
type ShapeDiff struct {
	// OnlyOriginal lists the paths only the recorded response has.
	OnlyOriginal []string `json:"onlyOriginal"`
	// OnlyReplay lists the paths only the replayed response has.
	OnlyReplay []string `json:"onlyReplay"`
}

// SSEDiff compares two event streams.
type SSEDiff struct {
	// OriginalEvents and ReplayEvents are the event types of each stream,
	// in order.
	OriginalEvents []string `json:"originalEvents"`
	ReplayEvents   []string `json:"replayEvents"`
	// EventTypesMatch reports whether both sequences of event types are
	// equal.
	EventTypesMatch *bool `json:"eventTypesMatch"`
	// EventShapesMatch reports whether each pair of events has the same
	// JSON shape; null when an event could not be compared.
	EventShapesMatch *bool `json:"eventShapesMatch"`
	// FirstDifference describes the first event that differs.
	FirstDifference string `json:"firstDifference,omitempty"`
}

// headerEnvPattern is the form of one --header-env value.
var headerEnvPattern = regexp.MustCompile(`^([A-Za-z0-9!#$%&'*+.^_|~-]+)=([A-Za-z_][A-Za-z0-9_]*)$`)

// skipHeaders are not replayed: the HTTP client sets them.
var skipHeaders = map[string]bool{
	"Content-Length": true, "Host": true, "Connection": true, "Transfer-Encoding": true,
	"Accept-Encoding": true, "Te": true, "Trailer": true, "Upgrade": true, "Keep-Alive": true,
	"Proxy-Connection": true,
}

// Compare sends the bundle's request again and compares the answer with
// the recorded upstream response. It refuses (with an error, before
// sending anything) without Execute, for a bundle that is not replayable,
// a method other than POST, PUT or PATCH, an endpoint CheckEndpoint
// rejects, a timeout out of bounds, a malformed --header-env, a missing
// environment variable, or a redacted header no --header-env fills. A
// failed exchange is not an error: it is recorded in Replay.Error. No
// environment value appears in the result or in an error.
func Compare(ctx context.Context, b *Bundle, opts CompareOptions) (*Comparison, error) {
	if !opts.Execute {
		return nil, errors.New("compare: refusing to send anything without --execute")
	}
	if c := completeness(b); !c.Replayable {
		return nil, fmt.Errorf("compare: the bundle is not replayable: %s", strings.Join(c.Blockers, ", "))
	}
	r := b.Request
	if r == nil {
		return nil, errors.New("compare: the bundle has no request")
	}
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return nil, fmt.Errorf("compare: method %q is not replayed (only POST, PUT and PATCH)", r.Method)
	}
	target, authorized := r.URL, false
	if opts.URL != "" {
		target, authorized = opts.URL, true
	}
	u, err := CheckEndpoint(target, authorized)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if timeout < MinTimeout || timeout > MaxTimeout {
		return nil, fmt.Errorf("compare: --timeout %s is outside 1s to 10m", timeout)
	}
	hdr, secrets, err := replayHeaders(r.Headers, opts)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	body, err := r.BodyBytes()
	if err != nil {
		return nil, fmt.Errorf("compare: request body: %w", err)
	}

	out := &Comparison{
		Format: ComparisonFormat, Version: BundleVersion, RequestID: b.RequestID, Attempt: b.Attempt,
		Method: r.Method, Endpoint: redact.URL(u.String(), secrets...), RequestBodySHA256: r.BodySHA256,
		JSONShape: ShapeDiff{OnlyOriginal: []string{}, OnlyReplay: []string{}},
	}
	orig := b.Find(b.Attempt, bodylog.UpstreamResponse)
	origBody, origSSE := originalSide(orig, &out.Original)

	replayBody, replaySSE, err := send(ctx, r.Method, u.String(), hdr, body, timeout, secrets, &out.Replay)
	if err != nil {
		return nil, err
	}
	judge(out, origBody, origSSE, replayBody, replaySSE)
	return out, nil
}

// send replays the request and records the answer in side (redacted with
// secrets). It returns the answer's body and whether it is an event
// stream; a transport failure is recorded as a missing side, not returned.
func send(ctx context.Context, method, url string, hdr http.Header, body []byte, timeout time.Duration, secrets []string, side *Side) (replayBody []byte, replaySSE bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, false, fmt.Errorf("compare: %s", redact.Error(err, secrets...))
	}
	req.Header = hdr
	client := &http.Client{
		Transport:     &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		side.Missing = true
		side.Error = redact.Error(err, secrets...)
	} else {
		br := &BoundedReader{R: resp.Body, Cap: MaxStoredResponse, Cancel: cancel}
		rerr := br.ReadAll()
		resp.Body.Close()
		side.Status = resp.StatusCode
		side.ContentType = redact.Text(resp.Header.Get("Content-Type"), secrets...)
		side.Headers = redact.Headers(resp.Header, secrets...)
		side.BodyBytes = br.Total()
		side.StoredBytes = int64(len(br.Bytes()))
		side.Truncated = br.Truncated()
		if rerr != nil {
			side.Truncated = true
			side.Error = redact.Error(rerr, secrets...)
		}
		replayBody = br.Bytes()
		stored, _ := redact.Body(replayBody, secrets...)
		side.Body, side.BodyBase64 = encodeBytes(stored)
	}
	replaySSE = isSSE(side.ContentType)
	if !side.Missing && !side.Truncated {
		if replaySSE {
			evs, complete := parseEvents(replayBody, 0)
			if complete {
				side.BodySHA256 = sum(reframe(evs))
			} else {
				side.Truncated = true
			}
		} else {
			side.BodySHA256 = sum(replayBody)
		}
	}

	return replayBody, replaySSE, nil
}

// judge compares the two sides of out: status, content type, body hash,
// and the event sequence or JSON shape.
func judge(out *Comparison, origBody []byte, origSSE bool, replayBody []byte, replaySSE bool) {
	out.StatusMatches = both(out.Original.Status != 0 && out.Replay.Status != 0, out.Original.Status == out.Replay.Status)
	out.ContentTypeMatches = both(out.Original.ContentType != "" && out.Replay.ContentType != "",
		mediaType(out.Original.ContentType) == mediaType(out.Replay.ContentType))
	comparable := out.Original.BodySHA256 != "" && out.Replay.BodySHA256 != ""
	out.BodyHashMatches = both(comparable, out.Original.BodySHA256 == out.Replay.BodySHA256)
	switch {
	case !comparable:
	case origSSE && replaySSE:
		origEvents, _ := parseEvents(origBody, 0)
		replayEvents, _ := parseEvents(replayBody, 0) // complete: its hash is set
		out.SSE, out.JSONShapeMatches = compareEvents(origEvents, replayEvents)
	case origSSE != replaySSE:
		f := false
		out.JSONShapeMatches = &f
	default:
		op, ok1 := Shape(origBody)
		rp, ok2 := Shape(replayBody)
		out.JSONShape = diffPaths(op, rp)
		out.JSONShapeMatches = both(ok1 && ok2, len(out.JSONShape.OnlyOriginal) == 0 && len(out.JSONShape.OnlyReplay) == 0)
	}
}

// replayHeaders builds the headers to send: the bundle's, without those
// the client sets, with every redacted one filled from the environment.
// It returns the environment values used, for scrubbing.
func replayHeaders(bundle http.Header, opts CompareOptions) (http.Header, []string, error) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	fill := map[string]string{}
	var secrets []string
	for _, m := range opts.HeaderEnv {
		g := headerEnvPattern.FindStringSubmatch(m)
		if g == nil {
			return nil, nil, errors.New("--header-env takes NAME=ENVVAR (a header name and an environment variable name)")
		}
		name := textproto.CanonicalMIMEHeaderKey(g[1])
		v, ok := lookup(g[2])
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, nil, fmt.Errorf("environment variable %s (for header %s) is not set", g[2], name)
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, nil, fmt.Errorf("environment variable %s (for header %s) holds a line break", g[2], name)
		}
		if name == "Authorization" && !strings.Contains(v, " ") {
			v = "Bearer " + v
		}
		fill[name] = v
		secrets = append(secrets, v, strings.TrimPrefix(v, "Bearer "))
	}
	out := http.Header{}
	for k, vs := range bundle {
		ck := textproto.CanonicalMIMEHeaderKey(k)
		if skipHeaders[ck] || strings.HasPrefix(ck, "Proxy-") && ck != "Proxy-Authorization" {
			continue
		}
		if _, ok := fill[ck]; ok {
			continue
		}
		if slices.Contains(vs, redact.Marker) {
			return nil, nil, fmt.Errorf("header %s is redacted in the bundle; fill it with --header-env %s=ENVVAR", ck, ck)
		}
		out[ck] = slices.Clone(vs)
	}
	for k, v := range fill {
		out.Set(k, v)
	}
	return out, secrets, nil
}

// originalSide fills s from the recorded upstream response and returns
// its body and whether it is an event stream.
func originalSide(c *Capture, s *Side) ([]byte, bool) {
	if c == nil || c.Index.Body == nil || len(c.Issues) > 0 {
		s.Missing = true
		if c != nil {
			s.Status, s.ContentType = c.Index.Status, c.Index.ContentType
		}
		return nil, false
	}
	ref := c.Index.Body
	s.Status, s.ContentType = c.Index.Status, c.Index.ContentType
	s.BodyBytes, s.StoredBytes, s.Truncated = ref.Received, ref.Size, ref.Truncated
	if !ref.Truncated {
		s.BodySHA256 = ref.SHA256
	}
	body, err := c.BodyBytes()
	if err != nil {
		s.Missing, s.BodySHA256 = true, ""
		return nil, false
	}
	return body, ref.Format == bodylog.FormatSSE
}

// compareEvents compares two complete event streams: the sequence of
// event types and the JSON shape of each event.
func compareEvents(a, b []event) (*SSEDiff, *bool) {
	d := &SSEDiff{OriginalEvents: eventTypes(a), ReplayEvents: eventTypes(b)}
	typesMatch := slices.Equal(d.OriginalEvents, d.ReplayEvents)
	d.EventTypesMatch = &typesMatch
	shapesOK, comparable := len(a) == len(b), true
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i].Type != b[i].Type {
			shapesOK = false
			if d.FirstDifference == "" {
				d.FirstDifference = fmt.Sprintf("event %d: type %s, replayed %s", i, a[i].Type, b[i].Type)
			}
			continue
		}
		pa, ok1 := eventShape(a[i])
		pb, ok2 := eventShape(b[i])
		if !ok1 || !ok2 {
			comparable = false
			continue
		}
		if diff := diffPaths(pa, pb); len(diff.OnlyOriginal)+len(diff.OnlyReplay) > 0 {
			shapesOK = false
			if d.FirstDifference == "" {
				d.FirstDifference = fmt.Sprintf("event %d (%s): shape differs: only recorded %v, only replayed %v", i, a[i].Type, diff.OnlyOriginal, diff.OnlyReplay)
			}
		}
	}
	if d.FirstDifference == "" && len(a) != len(b) {
		d.FirstDifference = fmt.Sprintf("%d events recorded, %d replayed", len(a), len(b))
	}
	d.EventShapesMatch = both(comparable, shapesOK)
	return d, d.EventShapesMatch
}

// eventShape is the shape of one event's data ("[DONE]" has its own).
func eventShape(e event) ([]string, bool) {
	if e.Type == "[DONE]" {
		return []string{"[DONE]"}, true
	}
	return Shape(e.Data)
}

func eventTypes(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// diffPaths lists the paths of two sorted shapes found on one side only.
func diffPaths(a, b []string) ShapeDiff {
	d := ShapeDiff{OnlyOriginal: []string{}, OnlyReplay: []string{}}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			d.OnlyOriginal = append(d.OnlyOriginal, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			d.OnlyReplay = append(d.OnlyReplay, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return d
}

// both returns nil unless known, else a pointer to v.
func both(known, v bool) *bool {
	if !known {
		return nil
	}
	return &v
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(ct))
	}
	return mt
}

func isSSE(ct string) bool { return mediaType(ct) == "text/event-stream" }
