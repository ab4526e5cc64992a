package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// rawPost posts body to path with the given token and returns the status,
// headers and decoded error object.
func rawPost(t *testing.T, r *relay, path, token string, body []byte) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, r.caddy.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	checkNoSecrets(t, string(raw))
	var env struct {
		Error map[string]any `json:"error"`
	}
	_ = json.Unmarshal(raw, &env)
	return resp, env.Error
}

// checkNoSecrets fails if s contains a credential.
func checkNoSecrets(t *testing.T, s string) {
	t.Helper()
	for _, secret := range []string{upstreamKey, relayToken, otherToken, "CANARY"} {
		if strings.Contains(s, secret) {
			t.Fatalf("a secret leaked: %q", s)
		}
	}
}

func TestErrorsBeforeUpstream(t *testing.T) {
	r := sharedRelayFor(t)
	valid := []byte(`{"model":"cursor-fast","messages":[{"role":"user","content":"hi"}]}`)
	tests := []struct {
		name, path, token string
		body              []byte
		status            int
		param, code       string
	}{
		{"no token", "/v1/chat/completions", "", valid, 401, "", "invalid_api_key"},
		{"wrong token", "/v1/chat/completions", "nope", valid, 401, "", "invalid_api_key"},
		{"relay token prefix", "/v1/chat/completions", relayToken[:len(relayToken)-1], valid, 401, "", "invalid_api_key"},
		{"unknown route", "/v1/embeddings", relayToken, valid, 404, "", "unknown_url"},
		{"invalid json", "/v1/chat/completions", relayToken, []byte(`{"model":`), 400, "", ""},
		{"n > 1", "/v1/chat/completions", relayToken, []byte(`{"model":"x","n":2,"messages":[{"role":"user","content":"hi"}]}`), 400, "n", ""},
		{"audio part", "/v1/chat/completions", relayToken, []byte(`{"model":"x","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}]}]}`), 400, "messages[0].content[0]", ""},
		{"unknown field", "/v1/chat/completions", relayToken, []byte(`{"model":"x","bogus":1,"messages":[{"role":"user","content":"hi"}]}`), 400, "bogus", "unknown_parameter"},
		{"no model", "/v1/chat/completions", relayToken, []byte(`{"messages":[{"role":"user","content":"hi"}]}`), 400, "model", ""},
		{"too large", "/v1/chat/completions", relayToken, bytes.Repeat([]byte("x"), 300<<10), 413, "", "request_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(r.fake.Requests())
			resp, e := rawPost(t, r, tt.path, tt.token, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tt.status, e)
			}
			if e == nil || e["message"] == "" || e["type"] == "" {
				t.Fatalf("error body %v", e)
			}
			if tt.param != "" && e["param"] != tt.param {
				t.Fatalf("param %v, want %s", e["param"], tt.param)
			}
			if tt.code != "" && e["code"] != tt.code {
				t.Fatalf("code %v, want %s", e["code"], tt.code)
			}
			if resp.Header.Get("X-Relay-Request-Id") == "" {
				t.Fatal("no X-Relay-Request-Id")
			}
			if got := len(r.fake.Requests()); got != before {
				t.Fatalf("a rejected request reached the upstream")
			}
		})
	}
	// wrong method
	resp, err := http.Get(r.caddy.BaseURL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET chat: %d allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestUpstreamErrors: errors before the first byte keep the upstream
// status; errors after streaming began arrive as an error chunk the SDK
// raises; a stream cut before its terminal event or a malformed one never
// becomes a successful answer.
func TestUpstreamErrors(t *testing.T) {
	r := sharedRelayFor(t)
	c := r.client(relayToken)
	req := func(tag string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg(tag)}}
	}
	for _, streaming := range []bool{false, true} {
		_, err := run(t, c, req("limited [[http_error:429]]"), streaming)
		if e := apiError(t, err); e.StatusCode != 429 || e.Code != "rate_limit_exceeded" {
			t.Fatalf("stream=%v: %d %q", streaming, e.StatusCode, e.Code)
		}
		_, err = run(t, c, req("boom [[http_error:500]]"), streaming)
		if e := apiError(t, err); e.StatusCode != 500 {
			t.Fatalf("stream=%v: %d", streaming, e.StatusCode)
		}
	}
	// JSON: a failed response is an error, not an empty answer
	if _, err := run(t, c, req("fails [[failed]]"), false); apiError(t, err).StatusCode != 502 {
		t.Fatalf("failed JSON: %v", err)
	}
	for _, tag := range []string{"[[failed]]", "[[error_flat]]", "[[error_nested]]", "[[cut]]", "[[malformed]]"} {
		content, err := run(t, c, req("mid-stream "+tag), true)
		if err == nil {
			t.Fatalf("%s: stream succeeded with %q", tag, content)
		}
		checkNoSecrets(t, err.Error())
	}
}

// run performs one request and returns the accumulated content or the
// error the SDK reports.
func run(t *testing.T, c openai.Client, params openai.ChatCompletionNewParams, streaming bool) (string, error) {
	t.Helper()
	if !streaming {
		comp, err := c.Chat.Completions.New(ctx(t), params)
		if err != nil {
			return "", err
		}
		return comp.Choices[0].Message.Content, nil
	}
	stream := c.Chat.Completions.NewStreaming(ctx(t), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return "", err
	}
	if len(acc.Choices) == 0 {
		return "", nil
	}
	return acc.Choices[0].Message.Content, nil
}
