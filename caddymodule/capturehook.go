package caddymodule

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/capture"
	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/translate"
)

// captureWriters shares one capture writer per directory across handlers
// and configuration reloads: its single worker and write bound then hold
// for the whole directory, and requests still streaming under an old
// configuration keep writing through a reload.
var captureWriters = caddy.NewUsagePool()

// captureDestructor closes a pooled capture writer.
type captureDestructor struct{ w *capture.Writer }

// Destruct waits briefly for pending writes and stops the worker.
func (d captureDestructor) Destruct() error {
	err := d.w.Close(5 * time.Second)
	captureClosed(d.w)
	return err
}

// provisionCapture opens (or shares) the writer for log_bodies.
func (h *Handler) provisionCapture(ctx caddy.Context) error {
	if h.LogBodies == "" {
		return nil
	}
	dir := caddy.NewReplacer().ReplaceAll(h.LogBodies, "")
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("log_bodies %s: %w", dir, err)
	}
	abs = filepath.Clean(abs)
	logger := ctx.Logger().Named("capture")
	val, loaded, err := captureWriters.LoadOrNew(abs, func() (caddy.Destructor, error) {
		w, err := capture.Open(capture.Options{Dir: abs, Logger: logger})
		if err != nil {
			return nil, err
		}
		return captureDestructor{w}, nil
	})
	if err != nil {
		return fmt.Errorf("log_bodies: %w", err)
	}
	h.capture = val.(captureDestructor).w
	h.captureKey = abs
	if loaded && !h.capture.Reenable() {
		logger.Warn("body capture stays disabled: a write to the capture directory is still blocked",
			zap.String("capture_dir", abs))
	}
	return nil
}

// cleanupCapture releases this configuration's reference to the writer.
func (h *Handler) cleanupCapture() {
	if h.captureKey != "" {
		_, _ = captureWriters.Delete(h.captureKey)
		h.captureKey = ""
	}
}

// beginCapture starts recording the request when log_bodies is set: the
// client response is teed through a wrapping ResponseWriter. Call it
// before anything is written, and defer rq.cap.Finish().
func (rq *request) beginCapture() {
	rq.cap = rq.h.capture.Begin(rq.id, 1, rq.h.secrets)
	if rq.cap != nil {
		rq.w = &captureResponseWriter{ResponseWriter: rq.w, cap: rq.cap}
	}
}

// captureChatRequest records the client's chat request with the model
// and stream flag of its translation (none when it did not translate).
func (rq *request) captureChatRequest(body []byte, treq *translate.Request) {
	if rq.cap == nil {
		return
	}
	model, stream := "", false
	if treq != nil {
		model, stream = treq.Model, treq.Stream
	}
	rq.captureClientRequest(body, model, stream)
}

// captureClientRequest records the client's request once its body is read.
func (rq *request) captureClientRequest(body []byte, model string, stream bool) {
	if rq.cap == nil {
		return
	}
	rq.cap.SetModel(model, stream)
	rq.cap.Whole(capture.ClientRequest, capture.Meta{
		Method: rq.r.Method, URL: rq.r.URL.RequestURI(), Header: rq.r.Header, Begun: rq.start,
	}, body)
}

// captureUpstreamRequest records the request about to be sent upstream,
// with the headers transport.Upstream.Post sets (its Authorization is
// redacted by the capture).
func (rq *request) captureUpstreamRequest(body []byte, stream bool, extra http.Header) {
	if rq.cap == nil {
		return
	}
	hdr := extra.Clone()
	hdr.Set("Authorization", "Bearer "+rq.h.apiKey)
	hdr.Set("Content-Type", "application/json")
	if stream {
		hdr.Set("Accept", "text/event-stream")
	} else {
		hdr.Set("Accept", "application/json")
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	rq.cap.Whole(capture.UpstreamRequest, capture.Meta{
		Method: http.MethodPost, URL: rq.h.upstream.Endpoint("responses"), Header: hdr,
	}, body)
	// both request phases reach the disk before the (possibly long) call
	rq.cap.Flush()
}

// captureUpstreamResponse starts recording the upstream's answer; the
// body is recorded as it is read (Body.Write) and closed by Finish.
func (rq *request) captureUpstreamResponse(resp *http.Response) *capture.Body {
	if rq.cap == nil {
		return nil
	}
	return rq.cap.Start(capture.UpstreamResponse, capture.Meta{Status: resp.StatusCode, Header: resp.Header})
}

// captureUpstreamFailure records an upstream round trip that got no
// response.
func (rq *request) captureUpstreamFailure() {
	if rq.cap == nil {
		return
	}
	rq.cap.NoBody(capture.UpstreamResponse, capture.Meta{}, "no_response")
}

// captureFrame records one upstream event as it arrived.
func (rq *request) captureFrame(name string, data []byte) {
	rq.capUp.Write(capture.AppendSSEFrame(make([]byte, 0, len(name)+len(data)+24), name, data))
}

// captureResponseWriter tees what the relay writes to the client into the
// client_response capture: each Write of an event stream is one frame (the
// relay writes one flushed write per event), other bodies are chunks.
type captureResponseWriter struct {
	http.ResponseWriter
	cap  *capture.Request
	body *capture.Body
}

// WriteHeader starts the client_response phase with the final headers.
func (c *captureResponseWriter) WriteHeader(status int) {
	if c.body == nil && status >= 200 {
		c.body = c.cap.Start(capture.ClientResponse, capture.Meta{Status: status, Header: c.Header()})
	}
	c.ResponseWriter.WriteHeader(status)
}

// Write records what reached the client.
func (c *captureResponseWriter) Write(p []byte) (int, error) {
	if c.body == nil {
		c.WriteHeader(http.StatusOK)
	}
	n, err := c.ResponseWriter.Write(p)
	if n > 0 {
		c.body.Write(p[:n])
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the connection for flushes
// and deadlines.
func (c *captureResponseWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
