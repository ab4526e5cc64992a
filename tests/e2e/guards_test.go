package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// streamRaw posts a streaming chat request and returns the raw SSE lines.
func streamRaw(t *testing.T, r *relay, content string) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"model": "cursor-fast", "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": content}},
	})
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, r.caddy.BaseURL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+relayToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

// TestKeepaliveDuringSilence: a slow upstream gets SSE comments in the
// gaps (sse_keepalive 100ms, 400ms between upstream events), and the
// answer still completes.
func TestKeepaliveDuringSilence(t *testing.T) {
	r := sharedRelayFor(t)
	lines := streamRaw(t, r, "slowly [[slow:400ms]]")
	keepalives := 0
	for _, l := range lines {
		if strings.HasPrefix(l, ":") {
			keepalives++
		}
	}
	if keepalives < 2 || lines[len(lines)-1] != "data: [DONE]" {
		t.Fatalf("%d keepalives, last line %q", keepalives, lines[len(lines)-1])
	}
}

// TestUpstreamIdleTimeout: an upstream silent for longer than idle_timeout
// ends the stream with an error chunk; keepalives do not count as
// progress.
func TestUpstreamIdleTimeout(t *testing.T) {
	r := startRelay(t, "idle_timeout 500ms")
	lines := streamRaw(t, r, "stalls [[slow:3s]]")
	last := lines[len(lines)-1]
	if !strings.Contains(last, `"error"`) || !strings.Contains(last, "upstream_timeout") {
		t.Fatalf("last line %q", last)
	}
	if !r.caddy.WaitLog(`"reason":"upstream_idle_timeout"`, 5*time.Second) {
		t.Fatal("no upstream_idle_timeout reason in the logs")
	}
}

// TestClientDisconnectCancelsUpstream: when the client goes away, the
// relay cancels its upstream request.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	r := startRelay(t, "")
	c := r.client(relayToken)
	cctx, cancel := context.WithCancel(t.Context())
	stream := c.Chat.Completions.NewStreaming(cctx, openai.ChatCompletionNewParams{
		Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("bye [[slow:300ms]]")},
	})
	if !stream.Next() {
		t.Fatalf("no first chunk: %v", stream.Err())
	}
	cancel()
	stream.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		n := r.cancelled
		r.mu.Unlock()
		if n == 1 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the upstream request was not cancelled")
}

// TestSecretsStayPut: the client's token never goes upstream, the
// upstream key never comes back, and neither appears in Caddy's logs
// (at DEBUG level).
func TestSecretsStayPut(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	if _, err := run(t, c, openai.ChatCompletionNewParams{Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("secret-check-11")}}, true); err != nil {
		t.Fatal(err)
	}
	up := r.upstreamRequest(t, "secret-check-11")
	if got := up.Header.Get("Authorization"); got != "Bearer "+upstreamKey {
		t.Fatalf("upstream Authorization %q", got)
	}
	for k, vs := range up.Header {
		for _, v := range vs {
			if strings.Contains(v, relayToken) {
				t.Fatalf("relay token leaked upstream in %s", k)
			}
		}
	}
	if !r.caddy.WaitLog(`"request_id":"rr_`, 5*time.Second) {
		t.Fatal("no request_id in the relay's logs")
	}
	logs := r.caddy.Logs()
	for _, s := range []string{upstreamKey, relayToken, otherToken} {
		if strings.Contains(logs, s) {
			t.Fatalf("secret %q in logs", s)
		}
	}
}

// TestModels lists aliases, their targets and extra models.
func TestModels(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	page, err := c.Models.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "cursor-fast,plain,gpt-5.2,gpt-4.1,gpt-5.2-codex" {
		t.Fatalf("models %v", ids)
	}
}

// TestResponsesPassthrough: POST /responses is forwarded as is, JSON and
// SSE, and the SDK's Responses client works through the relay.
func TestResponsesPassthrough(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	resp, err := c.Responses.New(ctx(t), responses.ResponseNewParams{
		Model: "gpt-5.2",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("passthrough-12")},
		Store: openai.Bool(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != "completed" || !strings.Contains(resp.OutputText(), "passthrough-12") {
		t.Fatalf("status %q text %q", resp.Status, resp.OutputText())
	}
	up := r.upstreamBody(t, "passthrough-12")
	if up["model"] != "gpt-5.2" || up["include"] != nil {
		t.Fatalf("passthrough changed the body: %v", up)
	}

	stream := c.Responses.NewStreaming(ctx(t), responses.ResponseNewParams{
		Model: "gpt-5.2",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("passthrough-sse-13")},
	})
	var types []string
	for stream.Next() {
		types = append(types, stream.Current().Type)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(types) < 4 || types[0] != "response.created" || types[len(types)-1] != "response.completed" {
		t.Fatalf("event types %v", types)
	}
}

// TestRequestIDOnEveryResponse covers success, auth failure and models.
func TestRequestIDOnEveryResponse(t *testing.T) {
	r := sharedRelayFor(t)
	for _, path := range []string{"/v1/models", "/nothing"} {
		req, _ := http.NewRequest(http.MethodGet, r.caddy.BaseURL+path, nil)
		req.Header.Set("Authorization", "Bearer "+relayToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("X-Relay-Request-Id"), "rr_") {
			t.Fatalf("%s: X-Relay-Request-Id %q", path, resp.Header.Get("X-Relay-Request-Id"))
		}
	}
}
