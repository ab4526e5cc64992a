package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// workload is one kind of traffic: a non-streaming (JSON) or a streaming
// (SSE) turn of the same conversation.
type workload struct {
	name   string // "json" or "sse"
	stream bool
}

// allWorkloads are the kinds of traffic the harness can measure, in the
// order they are reported.
var allWorkloads = []workload{{name: "json"}, {name: "sse", stream: true}}

// parseWorkloads parses "json,sse" (or a part of it) into workloads in
// report order.
func parseWorkloads(s string) ([]workload, error) {
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			want[f] = true
		}
	}
	var out []workload
	for _, w := range allWorkloads {
		if want[w.name] {
			out = append(out, w)
			delete(want, w.name)
		}
	}
	for name := range want {
		return nil, fmt.Errorf("loadharness: -workloads: unknown workload %q (want json, sse)", name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("loadharness: -workloads needs json, sse or both")
	}
	return out, nil
}

// Wire markers the client looks for to decide that an answer is complete.
var (
	sseDone          = []byte("data: [DONE]")
	sseCompleted     = []byte("event: response.completed")
	jsonChatObject   = []byte(`"object":"chat.completion"`)
	jsonFinishStop   = []byte(`"finish_reason":"stop"`)
	jsonResponseDone = []byte(`"status":"completed"`)
	jsonResponseObj  = []byte(`"object":"response"`)
)

// checker reads a response body to its end and reports whether the answer
// was complete. It may keep buffers between calls; each worker has its own.
type checker interface {
	check(body io.Reader) error
	// size is the number of body bytes the last check read.
	size() int
}

// errNoTerminal is returned when a body ended without its terminal marker.
var errNoTerminal = errors.New("body ended without its terminal event")

// jsonChecker accepts a complete JSON document that contains every marker.
type jsonChecker struct {
	markers [][]byte
	buf     bytes.Buffer
}

func (c *jsonChecker) size() int { return c.buf.Len() }

func (c *jsonChecker) check(body io.Reader) error {
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(body); err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	b := c.buf.Bytes()
	if !json.Valid(b) {
		return fmt.Errorf("%w: invalid JSON (%d bytes)", errNoTerminal, len(b))
	}
	for _, m := range c.markers {
		if !bytes.Contains(b, m) {
			return fmt.Errorf("%w: no %s", errNoTerminal, m)
		}
	}
	return nil
}

// sseChecker reads an event stream line by line to EOF and accepts it when
// some line starts with the terminal marker.
type sseChecker struct {
	terminal []byte
	r        *bufio.Reader
	n        int
}

func (c *sseChecker) size() int { return c.n }

func (c *sseChecker) check(body io.Reader) error {
	if c.r == nil {
		c.r = bufio.NewReaderSize(body, 32<<10)
	} else {
		c.r.Reset(body)
	}
	seen, lineStart := false, true
	c.n = 0
	for {
		line, err := c.r.ReadSlice('\n')
		c.n += len(line)
		if lineStart && bytes.HasPrefix(line, c.terminal) {
			seen = true
		}
		// a line longer than the buffer arrives in pieces: only the first
		// piece starts a line
		lineStart = err != bufio.ErrBufferFull
		switch {
		case err == nil, err == bufio.ErrBufferFull:
		case err == io.EOF:
			if !seen {
				return errNoTerminal
			}
			return nil
		default:
			return fmt.Errorf("read stream: %w", err)
		}
	}
}

// newChecker returns a checker for a target's answers.
func newChecker(relay, stream bool) checker {
	switch {
	case stream && relay:
		return &sseChecker{terminal: sseDone}
	case stream:
		return &sseChecker{terminal: sseCompleted}
	case relay:
		return &jsonChecker{markers: [][]byte{jsonChatObject, jsonFinishStop}}
	default:
		return &jsonChecker{markers: [][]byte{jsonResponseObj, jsonResponseDone}}
	}
}

// target is one endpoint under load: the relay or the baseline proxy, with
// the request body each client sends (client i of a phase sends
// bodies[i%len(bodies)], its own conversation).
type target struct {
	name   string // "relay" or "baseline"
	relay  bool
	stream bool
	url    string
	bodies [][]byte
	header http.Header
	// answerBytes is the size of the answer body to the last probe request.
	answerBytes int
}
