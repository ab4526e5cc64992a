package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

// earlierTurns is how many assistant turns a conversation has before the
// measured request: five rounds of (tool call, answer to the tool result).
// Every one of them carries reasoning the cache can replay.
const earlierTurns = 10

// systemPrompt is the start of every conversation, shaped like the long
// instructions an editor sends.
var systemPrompt = strings.Repeat("You are a careful coding assistant working inside the user's editor. "+
	"Answer concisely, cite file paths, and prefer small, reviewable changes. "+
	"Use the tools to read files before proposing edits; never invent file contents.\n", 12)

// conversation is one client's chat history: the messages up to and
// including the measured request's user message, and the upstream
// response ids of its earlier assistant turns (whose reasoning a replay
// hit carries back).
type conversation struct {
	tag      string            // unique marker, the first word of the final user message
	messages []json.RawMessage // the whole history of the measured request
	turns    []string          // upstream response id of each earlier assistant turn, in order
}

// chatMessage is a Chat Completions message as the harness sends it.
type chatMessage struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// toolCall is an assistant's function call in Chat Completions form.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// rawMessage encodes a message for the history.
func rawMessage(m chatMessage) json.RawMessage {
	b, _ := json.Marshal(m) // a struct of strings and slices of them always encodes
	return b
}

func text(s string) *string { return &s }

// fileContent is the tool result of one read: about n bytes of Go-like
// source, distinct per conversation and file.
func fileContent(tag string, file, n int) string {
	var b strings.Builder
	b.Grow(n + 128)
	fmt.Fprintf(&b, "// %s: internal/service/file%d.go\npackage service\n\n", tag, file)
	for line := 0; b.Len() < n; line++ {
		fmt.Fprintf(&b, "func handler%dLine%d(ctx context.Context, req *Request) (*Response, error) { return process(ctx, req, %d) }\n",
			file, line, line*7+file)
	}
	return b.String()
}

// chatBody encodes the Chat Completions request for messages.
func chatBody(messages []json.RawMessage, stream bool) ([]byte, error) {
	tool := func(name, desc, param string) map[string]any {
		return map[string]any{"type": "function", "function": map[string]any{
			"name": name, "description": desc,
			"parameters": map[string]any{
				"type":       "object",
				"properties": map[string]any{param: map[string]any{"type": "string"}},
				"required":   []string{param},
			},
		}}
	}
	req := map[string]any{
		"model":    relayModel,
		"stream":   stream,
		"messages": messages,
		"tools": []any{
			tool("read_file", "Read a file of the workspace", "path"),
			tool("grep", "Search the workspace with a regular expression", "pattern"),
		},
	}
	if stream {
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("loadharness: encode chat request: %w", err)
	}
	return b, nil
}

// chatAnswer is the part of a chat completion the conversation keeps.
type chatAnswer struct {
	Choices []struct {
		Message struct {
			Content   *string    `json:"content"`
			ToolCalls []toolCall `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
}

// assistantTurn is the assistant message of an answer.
type assistantTurn struct {
	Content   *string
	ToolCalls []toolCall
}

// builder drives conversations through a relay to give them their
// earlier turns.
type builder struct {
	client *http.Client
	url    string // the relay's /v1/chat/completions
	fake   *fakeupstream.Server
	name   string // of the relay, for the report, e.g. "cache-on"
}

// build creates a conversation of about size bytes (the final chat
// request's body) named tag: a system prompt, then five rounds of a user
// request that the fake answers with a read_file call, the file's content
// as the tool result and the fake's answer to it, then the final question.
// Each of the ten assistant turns goes through the relay (JSON), so a
// relay with the cache enabled has recorded their reasoning.
func (b *builder) build(ctx context.Context, tag string, size int) (*conversation, error) {
	c := &conversation{tag: tag}
	c.messages = append(c.messages, rawMessage(chatMessage{Role: "system", Content: text(systemPrompt)}))
	// what the five tool results share out: the size minus the system
	// prompt, about 600 bytes for each round's other messages and 1000
	// for the tools and the final question
	fileSize := max((size-len(systemPrompt)-600*earlierTurns/2-1000)/(earlierTurns/2), 256)
	for round := range earlierTurns / 2 {
		c.messages = append(c.messages, rawMessage(chatMessage{Role: "user",
			Content: text(fmt.Sprintf("%s step %d: read the next file of the service package and explain what it does [[tool]]", tag, round))}))
		ans, err := b.send(ctx, c)
		if err != nil {
			return nil, err
		}
		if len(ans.ToolCalls) == 0 {
			return nil, fmt.Errorf("loadharness: %s step %d: the answer has no tool call", tag, round)
		}
		c.messages = append(c.messages, rawMessage(chatMessage{Role: "assistant", Content: ans.Content, ToolCalls: ans.ToolCalls}))
		for i, tc := range ans.ToolCalls {
			c.messages = append(c.messages, rawMessage(chatMessage{Role: "tool", ToolCallID: tc.ID,
				Content: text(fileContent(tag, round*4+i, fileSize/len(ans.ToolCalls)))}))
		}
		ans, err = b.send(ctx, c)
		if err != nil {
			return nil, err
		}
		if ans.Content == nil || len(ans.ToolCalls) > 0 {
			return nil, fmt.Errorf("loadharness: %s step %d: the answer to the tool result is not text", tag, round)
		}
		c.messages = append(c.messages, rawMessage(chatMessage{Role: "assistant", Content: ans.Content}))
	}
	c.messages = append(c.messages, rawMessage(chatMessage{Role: "user",
		Content: text(tag + " final question: which of these files should I change to add request tracing, and how?")}))
	return c, nil
}

// send posts the conversation so far through the relay, records the
// upstream response id of the answer as the next earlier turn and returns
// the assistant's message.
func (b *builder) send(ctx context.Context, c *conversation) (msg assistantTurn, err error) {
	body, err := chatBody(c.messages, false)
	if err != nil {
		return msg, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, strings.NewReader(string(body)))
	if err != nil {
		return msg, fmt.Errorf("loadharness: %s: %w", c.tag, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+relayToken)
	resp, err := b.client.Do(req)
	if err != nil {
		return msg, fmt.Errorf("loadharness: %s: %w", c.tag, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return msg, fmt.Errorf("loadharness: %s: read answer: %w", c.tag, err)
	}
	if resp.StatusCode != http.StatusOK {
		return msg, fmt.Errorf("loadharness: %s: status %d: %.300s", c.tag, resp.StatusCode, raw)
	}
	var ans chatAnswer
	if err := json.Unmarshal(raw, &ans); err != nil || len(ans.Choices) == 0 {
		return msg, fmt.Errorf("loadharness: %s: not a chat completion: %.300s", c.tag, raw)
	}
	respID := b.upstreamResponseID(resp.Header.Get("X-Relay-Request-Id"))
	if respID == "" {
		return msg, fmt.Errorf("loadharness: %s: no accepted upstream request for relay request %q", c.tag, resp.Header.Get("X-Relay-Request-Id"))
	}
	c.turns = append(c.turns, respID)
	m := ans.Choices[0].Message
	msg.Content, msg.ToolCalls = m.Content, m.ToolCalls
	return msg, nil
}

// upstreamResponseID returns the response id of the last accepted upstream
// request the relay sent for its request id, or "".
func (b *builder) upstreamResponseID(relayID string) string {
	if relayID == "" {
		return ""
	}
	var id string
	b.fake.Scan(func(r *fakeupstream.Request) {
		if r.Status == http.StatusOK && r.ResponseID != "" && r.Header.Get("X-Client-Request-Id") == relayID {
			id = r.ResponseID
		}
	})
	return id
}

// buildAll builds n conversations of about size bytes with tags
// "<prefix>-c<i>", two at a time.
func (b *builder) buildAll(ctx context.Context, prefix string, n, size int) ([]*conversation, error) {
	out := make([]*conversation, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = b.build(ctx, fmt.Sprintf("%s-c%d", prefix, i), size)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
