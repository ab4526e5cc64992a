package caddymodule

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/translate"
)

// Body logging (log_bodies) records four phases of every model request, at
// the places where they happen:
//
//	client_request     admit, once the body is read (logClientRequest)
//	upstream_request   postUpstream, the request exactly as built (logUpstreamRequest)
//	upstream_response  postUpstream, then every body read or event relayed (logUpstreamResponse)
//	client_response    every place that writes the status line (logClientResponse), then every write
//
// All of it is a no-op when log_bodies is off (rq.bodies is nil).

// bodyLogWriters shares one body-log writer per directory across handlers
// and configuration reloads: its single worker and write bound then hold
// for the whole directory, and requests still streaming under an old
// configuration keep writing through a reload.
var bodyLogWriters = caddy.NewUsagePool()

// bodyLogDestructor closes a pooled body-log writer.
type bodyLogDestructor struct{ w *bodylog.Writer }

// Destruct waits briefly for pending writes and stops the worker.
func (d bodyLogDestructor) Destruct() error {
	err := d.w.Close(5 * time.Second)
	bodyLogClosed(d.w)
	return err
}

// provisionBodyLog opens (or shares) the writer for log_bodies.
func (h *Handler) provisionBodyLog(ctx caddy.Context) error {
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
	val, loaded, err := bodyLogWriters.LoadOrNew(abs, func() (caddy.Destructor, error) {
		w, err := bodylog.Open(bodylog.Options{Dir: abs, Logger: logger})
		if err != nil {
			return nil, err
		}
		return bodyLogDestructor{w}, nil
	})
	if err != nil {
		return fmt.Errorf("log_bodies: %w", err)
	}
	h.bodyLog = val.(bodyLogDestructor).w
	h.bodyLogKey = abs
	if loaded && !h.bodyLog.Reenable() {
		logger.Warn("body capture stays disabled: a write to the capture directory is still blocked",
			zap.String("capture_dir", abs))
	}
	return nil
}

// cleanupBodyLog releases this configuration's reference to the writer.
func (h *Handler) cleanupBodyLog() {
	if h.bodyLogKey != "" {
		_, _ = bodyLogWriters.Delete(h.bodyLogKey)
		h.bodyLogKey = ""
	}
}

// logClientRequest records the client's request once its body is read,
// with the model and stream flag the relay understood (none when it did
// not understand the body).
func (rq *request) logClientRequest(body []byte, model string, stream bool) {
	if rq.bodies == nil {
		return
	}
	rq.bodies.SetModel(model, stream)
	rq.bodies.Whole(bodylog.ClientRequest, bodylog.Meta{
		Method: rq.r.Method, URL: rq.r.URL.RequestURI(), Header: rq.r.Header, Begun: rq.start,
	}, body)
}

// chatModel is the model and stream flag of a chat request's translation,
// for the body log (none when it did not translate).
func chatModel(treq *translate.Request) (string, bool) {
	if treq == nil {
		return "", false
	}
	return treq.Model, treq.Stream
}

// logUpstreamRequest records the upstream request as built, body and
// headers (its Authorization is redacted by package bodylog), and flushes
// both request phases to the disk before the (possibly long) call.
func (rq *request) logUpstreamRequest(req *http.Request, body [][]byte) {
	if rq.bodies == nil {
		return
	}
	hdr := req.Header.Clone()
	hdr.Set("Content-Length", strconv.FormatInt(req.ContentLength, 10))
	var whole []byte
	for _, p := range body {
		whole = append(whole, p...)
	}
	rq.bodies.Whole(bodylog.UpstreamRequest, bodylog.Meta{Method: req.Method, URL: req.URL.String(), Header: hdr}, whole)
	rq.bodies.Flush()
}

// logUpstreamResponse starts recording the upstream's answer (resp nil:
// the round trip got no response). Its body is recorded as it is read
// (rq.upstreamBody) and closed when the request ends.
func (rq *request) logUpstreamResponse(resp *http.Response) {
	switch {
	case rq.bodies == nil:
	case resp == nil:
		rq.bodies.NoBody(bodylog.UpstreamResponse, bodylog.Meta{}, "no_response")
	default:
		rq.upstreamBody = rq.bodies.Start(bodylog.UpstreamResponse, bodylog.Meta{Status: resp.StatusCode, Header: resp.Header})
	}
}

// logUpstreamFrame records one upstream event as it arrived.
func (rq *request) logUpstreamFrame(name string, data []byte) {
	if rq.upstreamBody != nil {
		rq.upstreamBody.Write(bodylog.AppendSSEFrame(make([]byte, 0, len(name)+len(data)+24), name, data))
	}
}

// logClientResponse starts recording the client response, with the status
// and headers just written. What reaches the client after it is recorded
// with rq.clientBody.Write: one frame per write of an event stream (the
// relay writes one flushed write per event), chunks otherwise.
func (rq *request) logClientResponse(status int) {
	if rq.bodies != nil && rq.clientBody == nil {
		rq.clientBody = rq.bodies.Start(bodylog.ClientResponse, bodylog.Meta{Status: status, Header: rq.w.Header()})
	}
}
