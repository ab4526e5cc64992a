package caddymodule

import (
	"context"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/translate"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/transport"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache"
)

// serveChat relays POST …/chat/completions. It is the relay's central
// sequence, and reads top to bottom:
//
//  1. admit: authenticate, pin the reasoning cache, read the body;
//  2. translate the body (Chat or Responses shaped) to a Responses request;
//  3. prepare the cache session (Engine.Prepare): plan the replay of
//     earlier turns' original output and commit the dispatch intent;
//  4. post upstream, once more without replay if the upstream rejects the
//     replayed reasoning;
//  5. relay the event stream, or read the JSON answer, up to its terminal
//     event, without writing the end of the answer;
//  6. complete the cache session (Session.Complete): commit what the
//     cache observed BEFORE the client can see the end of the answer;
//  7. write the terminal frames (or the JSON body);
//  8. end the session exactly once: Delivered (after the response, see
//     settle.go), else Abandon once bytes reached the client, else Release.
//
// Between steps 3 and 8 there is no return: every failure falls through
// to the one end of the session.
func (rq *request) serveChat() {
	h := rq.h
	body, ok := rq.admit() // 1
	if !ok {
		return
	}
	rc := rq.newRecycler(body)
	defer rc.release()
	treq, aerr := translate.Translate(body, &h.translator) // 2
	rc.translated(treq)
	model, stream := chatModel(treq)
	rq.logClientRequest(body, model, stream)
	if aerr != nil {
		rq.fail(aerr, "invalid_request")
		return
	}

	ctx, cancel := context.WithCancelCause(rq.r.Context())
	defer cancel(errFinished)
	cs, ok := rq.prepareCache(ctx, treq) // 3
	if !ok {
		return
	}
	// the next request may read its body: this one holds only what it
	// sends upstream from here on
	rq.endPreparation()
	if !cs.handled() {
		treq.KeepCallerStorage() // storage is overridden only for cached requests
	}
	// from here on only the translation is needed: a large client body
	// can be collected while the request is relayed
	if treq.ReleaseClientBody() {
		rc.bodyFree()
	}

	idle := transport.NewWatchdog(time.Duration(h.IdleTimeout), func() { cancel(errUpstreamIdle) })
	defer idle.Stop()
	var ans chatAnswer
	resp, ok := rq.postChat(ctx, treq, cs, idle, rc) // 4
	if ok {
		defer resp.Body.Close()
		ans, ok = rq.relayChat(ctx, cancel, resp, idle, treq.Stream, rq.chatOptions(treq, cs), cs) // 5
	}
	delivered := false
	if ok {
		countUsage(ans.usage(), cs.replayed() > 0)
		if ans.succeeded() {
			cs.complete(ctx, ans.outcome()) // 6: before the terminal frame
		}
		delivered = ans.writeEnd() // 7
	}
	switch { // 8: exactly once
	case delivered:
		rq.deliveredAfterResponse(ctx, cs) // its resolve does not hold up the end of the answer
	case rq.wroteBody && treq.Stream:
		cs.abandon(ctx, "stream_interrupted")
	case rq.wroteBody:
		cs.abandon(ctx, "delivery_failed")
	default:
		cs.release(ctx)
	}
}

// chatOptions are the parameters of the Chat answer to a translated
// request.
func (rq *request) chatOptions(treq *translate.Request, cs *cacheSession) translate.ChatOptions {
	return translate.ChatOptions{
		ID:           "chatcmpl-" + strings.TrimPrefix(rq.id, "rr_"),
		Created:      rq.start.Unix(),
		Model:        treq.Model,
		IncludeUsage: treq.IncludeUsage,
		RecordLimit:  cs.recordLimit(),
		RecordGrow:   cs.recordGrow(),
	}
}

// postChat sends the translated request upstream. When the upstream
// rejects replayed reasoning before anything reached the client, the
// cache records a conflict for exactly those turns and the request is sent
// once more without replay. On failure it has answered the client.
func (rq *request) postChat(ctx context.Context, treq *translate.Request, cs *cacheSession, idle *transport.Watchdog, rc *recycler) (*http.Response, bool) {
	for attempt := 1; ; attempt++ {
		parts, n, err := treq.BodyParts()
		if err != nil {
			rq.fail(apierr.New(http.StatusInternalServerError, apierr.TypeServer, "translation_failed",
				"The relay could not encode the upstream request."), "translation_failed")
			return nil, false
		}
		resp, ok := rq.postUpstream(ctx, parts, n, treq.Stream, idle, rc)
		if !ok {
			return nil, false
		}
		if isSuccess(resp) {
			// the upstream has the body: its input items (about the size
			// of the history) need not stay while the answer is relayed,
			// and the body budget need not count them
			treq.DropInput()
			cs.answered()
			rq.releaseBody()
			// nothing of the request references the body or the input
			// items any more (with a cache session or a body log rc is nil)
			rc.release()
			return resp, true
		}
		e, ok := rq.upstreamError(ctx, resp, idle)
		resp.Body.Close()
		if !ok {
			return nil, false
		}
		rejected := attempt == 1 && cs.replayed() > 0 && isReplayRejection(e)
		if rejected {
			cs.rejected()
		}
		if rejected && rq.h.replayRetry() {
			rq.h.logger.Warn("upstream rejected replayed reasoning; resending without replay",
				zap.String("request_id", rq.id), zap.Int("status", e.Status), zap.String("error_code", e.Code))
			if err := cs.dropReplay(ctx, treq); err == nil {
				continue
			}
		}
		rq.failUpstream(e, resp, e.Status)
		return nil, false
	}
}

// chatAnswer is an upstream answer relayed up to its terminal event. The
// end of the answer (a stream's terminal frames, a JSON answer's whole
// body) is not written yet: the cache commits its outcome first.
type chatAnswer interface {
	// usage is the upstream's token usage, nil when it sent none.
	usage() *translate.Usage
	// succeeded reports whether the response completed or is incomplete
	// (rather than failed): only then is its outcome committed.
	succeeded() bool
	// outcome is what the client was sent, for Session.Complete.
	outcome() reasoningcache.Outcome
	// writeEnd writes the end of the answer and reports whether a
	// successful answer reached the client completely.
	writeEnd() bool
}

// relayChat relays the upstream's answer up to its terminal event: an
// event stream is converted and relayed frame by frame, a JSON answer is
// read and converted. ok is false when the answer failed before its
// terminal event; the client has then been answered (or is gone).
func (rq *request) relayChat(ctx context.Context, cancel context.CancelCauseFunc, resp *http.Response, idle *transport.Watchdog, stream bool, opts translate.ChatOptions, cs *cacheSession) (chatAnswer, bool) {
	if !stream {
		raw, ok := rq.readUpstreamBody(ctx, resp, idle)
		if !ok {
			return nil, false
		}
		comp, aerr := translate.ConvertCompletion(raw, opts)
		if aerr != nil {
			rq.fail(aerr, "upstream_failed_response")
			return nil, false
		}
		return &chatJSON{rq: rq, header: resp.Header, comp: comp}, true
	}
	if !isEventStream(resp.Header) {
		rq.fail(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_not_streaming",
			"The upstream answered a streaming request without an event stream."), "upstream_not_streaming")
		return nil, false
	}
	conv := &chatFrames{s: translate.NewStream(opts), cs: cs}
	es, ok := rq.relayEvents(ctx, cancel, resp, idle, conv)
	if !ok {
		return nil, false
	}
	return &chatStream{rq: rq, es: es, conv: conv}, true
}

// chatJSON is a converted JSON answer, not written yet.
type chatJSON struct {
	rq     *request
	header http.Header // the upstream's, for the headers passed on
	comp   *translate.Completion
}

func (a *chatJSON) usage() *translate.Usage { return a.comp.Usage }
func (a *chatJSON) succeeded() bool         { return true } // ConvertCompletion refuses failed responses
func (a *chatJSON) outcome() reasoningcache.Outcome {
	return outcomeOf(a.comp.Status, a.comp.Snapshot, a.comp.Output, nil, a.comp.Sent)
}
func (a *chatJSON) writeEnd() bool { return a.rq.writeJSON(a.header, a.comp.Body) }

// chatStream is an event stream relayed up to its terminal event.
type chatStream struct {
	rq   *request
	es   *eventStream
	conv *chatFrames
}

func (a *chatStream) usage() *translate.Usage { return a.conv.s.Usage() }
func (a *chatStream) succeeded() bool         { return a.conv.Succeeded() }
func (a *chatStream) outcome() reasoningcache.Outcome {
	s := a.conv.s
	out := outcomeOf(s.Status(), s.Snapshot(), s.Output(), s.DoneItems(), s.Sent())
	out.RecordExceeded = s.RecordExceeded()
	return out
}
func (a *chatStream) writeEnd() bool { return a.rq.endStream(a.es, a.conv) }

// chatFrames adapts translate.Stream to frameConverter. Every upstream
// event renews the cache session's generation deadline.
type chatFrames struct {
	s  *translate.Stream
	cs *cacheSession
}

// Event converts one upstream event to Chat chunks.
func (c *chatFrames) Event(dst []byte, name string, data []byte) ([]byte, bool, error) {
	c.cs.progress()
	out, res, err := c.s.Event(dst, name, data)
	return out, res.Terminal, err
}

// Finish appends the terminal chunks (finish reason, usage, [DONE]).
func (c *chatFrames) Finish(dst []byte) []byte { return c.s.Finish(dst) }

// Fail appends the chunk that reports an abnormal end.
func (c *chatFrames) Fail(dst []byte, e *apierr.Error) []byte { return c.s.Fail(dst, e) }

// Succeeded reports whether the terminal event was a successful one.
func (c *chatFrames) Succeeded() bool { return c.s.Err() == nil }
