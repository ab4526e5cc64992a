package translate

import (
	"bytes"
	"encoding/json"
	"testing"
)

func FuzzTranslate(f *testing.F) {
	f.Add([]byte(`{"model":"gpt-5.2","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"fast","input":"hi","store":true}`))
	cfg := testConfig()
	f.Fuzz(func(t *testing.T, body []byte) {
		req, aerr := Translate(body, cfg)
		if aerr != nil {
			if aerr.HTTPStatus() != 400 || aerr.Message == "" {
				t.Fatalf("bad error %+v", aerr)
			}
			return
		}
		b, err := req.Body()
		if err != nil {
			t.Fatalf("Body: %v", err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("Body is not JSON: %v\n%s", err, b)
		}
		if !isString(m["model"]) || !isArray(m["input"]) {
			t.Fatalf("Body lacks model or input: %s", b)
		}
		next := 0
		for i, h := range req.History {
			if h.Items[0] != next || h.Items[1] < h.Items[0] || h.Items[1] > len(req.Input) {
				t.Fatalf("history[%d].Items = %v", i, h.Items)
			}
			next = h.Items[1]
		}
		if next != len(req.Input) || len(req.History) == 0 {
			t.Fatalf("history covers %d of %d items", next, len(req.Input))
		}
	})
}

// FuzzStream feeds one event per line: "name\tdata" or just data.
func FuzzStream(f *testing.F) {
	f.Add([]byte(evCreated + "\n" + evMsgAdded + "\n" +
		`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"x"}` + "\n" + evCompleted))
	f.Add([]byte("error\t{\"code\":\"c\",\"message\":\"m\"}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, usage := range []bool{false, true} {
			s := NewStream(ChatOptions{ID: "chatcmpl-f", Created: 1, Model: "m", IncludeUsage: usage})
			var out []byte
			failed := false
			for _, line := range bytes.Split(in, []byte("\n")) {
				name, data := "", line
				if i := bytes.IndexByte(line, '\t'); i >= 0 {
					name, data = string(line[:i]), line[i+1:]
				}
				var res Result
				var err error
				out, res, err = s.Event(out, name, data)
				if err != nil {
					out = s.Fail(out, badUpstream("x"))
					failed = true
					break
				}
				if res.Terminal {
					break
				}
			}
			if !failed {
				out = s.Finish(out)
			}
			chunks, _ := decodeFrames(t, out)
			calls := collect(t, chunks)
			for i := range len(calls.ids) {
				if _, ok := calls.ids[i]; !ok || calls.nameCount[i] != 1 {
					t.Fatalf("tool call indices not dense or name not sent once: %s", out)
				}
			}
			if sent := s.Sent(); sent.Content != calls.content || sent.Refusal != calls.refusal || len(sent.ToolCalls) != len(calls.ids) {
				t.Fatalf("Sent %+v differs from the frames %s", sent, out)
			}
			_ = s.Output()
			_ = s.Sent()
		}
	})
}

func FuzzChatCompletion(f *testing.F) {
	f.Add([]byte(`{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}`))
	f.Add([]byte(`{"status":"failed","error":{"code":"rate_limit_exceeded","message":"m"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, aerr := ChatCompletion(body, ChatOptions{ID: "chatcmpl-f", Created: 1, Model: "m"})
		if aerr != nil {
			if s := aerr.HTTPStatus(); s != 400 && s != 429 && s != 502 {
				t.Fatalf("status %d", s)
			}
			return
		}
		var m struct {
			Object  string            `json:"object"`
			Choices []json.RawMessage `json:"choices"`
		}
		if err := json.Unmarshal(out, &m); err != nil || m.Object != "chat.completion" || len(m.Choices) != 1 {
			t.Fatalf("bad completion %s: %v", out, err)
		}
	})
}
