package translate_test

import (
	"fmt"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/translate"
)

// A Chat body from Cursor becomes a Responses request for the alias's model.
func ExampleTranslate() {
	cfg := &translate.Config{
		Aliases: map[string]translate.Alias{"cursor-gpt": {Model: "gpt-5.2", Effort: "high"}},
	}
	req, aerr := translate.Translate([]byte(`{"model":"cursor-gpt","stream":true,
		"messages":[{"role":"user","content":"Hi"}]}`), cfg)
	if aerr != nil {
		fmt.Println(aerr)
		return
	}
	body, _ := req.Body()
	fmt.Println(string(body))
	fmt.Println(req.History[0].Role, req.History[0].Items)
	// Output:
	// {"model":"gpt-5.2","reasoning":{"effort":"high"},"stream":true,"store":false,"include":["reasoning.encrypted_content"],"input":[{"type":"message","role":"user","content":"Hi"}]}
	// user [0 1]
}

// The handler feeds each upstream SSE event to Event, writes what it
// appends, and on a terminal event finishes the stream.
func ExampleStream() {
	s := translate.NewStream(translate.ChatOptions{ID: "chatcmpl-x", Created: 1, Model: "gpt-5.2"})
	events := []struct{ name, data string }{
		{"response.created", `{"type":"response.created","response":{"id":"resp_1","created_at":1767225600,"model":"gpt-5.2"}}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"Hi"}`},
		{"response.completed", `{"type":"response.completed","response":{"id":"resp_1","status":"completed"}}`},
	}
	var out []byte
	for _, e := range events {
		var res translate.Result
		var err error
		if out, res, err = s.Event(out, e.name, []byte(e.data)); err != nil {
			out = s.Fail(out, nil)
			break
		}
		if res.Terminal {
			out = s.Finish(out)
			break
		}
	}
	fmt.Print(string(out))
	// Output:
	// data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-5.2","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}
	//
	// data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-5.2","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}
	//
	// data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-5.2","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}
	//
	// data: [DONE]
}
