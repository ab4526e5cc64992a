package fakeupstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// applyPatch is the custom tool input of KindCustomTool.
const applyPatch = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch"

// refusalText is the refusal of KindRefusal.
const refusalText = "I'm sorry, but I can't help with that."

// reasoningTokens is the fixed reasoning token count reported in usage.
const reasoningTokens = 64

// outItem is one output item of a turn in its final form.
type outItem struct {
	Type     string // reasoning, message, function_call, custom_tool_call
	ID       string
	Summary  string // reasoning: summary text ("" = no summary requested)
	Enc      string // reasoning: ciphertext in response.completed and JSON output
	EncDone  string // reasoning: ciphertext in output_item.done (differs from Enc only for drift)
	PartType string // message: output_text or refusal
	Text     string // message: text or refusal; calls: arguments or input
	Status   string // message/function_call: final status
	CallID   string // calls
	Name     string // calls
}

// turn is one accepted request being answered.
type turn struct {
	srv        *Server
	p          *parsedRequest
	sc         Scenario
	respID     string
	created    int64
	items      []*outItem
	status     string // completed, incomplete, failed
	incomplete string // incomplete_details.reason
	usage      map[string]any
}

// newTurn decides the output of a request from its scenario.
func (s *Server) newTurn(p *parsedRequest, sc Scenario, apiKey string) *turn {
	respID, n := s.nextID("resp_", 48)
	t := &turn{srv: s, p: p, sc: sc, respID: respID, created: epoch + int64(n), status: "completed"}
	if sc.Invalid != "" || sc.Kind == KindHTTPError {
		return t
	}
	userText := strings.TrimSpace(tokenPattern.ReplaceAllString(lastUserText(p.items), ""))
	t.items = append(t.items, t.reasoning(userText, apiKey))
	text := sc.Text
	if text == "" {
		text = "echo: " + userText
	}
	switch sc.Kind {
	case KindTool, KindParallelTools:
		fns := toolsOf(p.tools, "function")
		if len(fns) == 0 {
			t.message("output_text", "fakeupstream: scenario "+string(sc.Kind)+" needs a function tool in the request", "completed")
			break
		}
		t.functionCall(fns[0], sc.Text)
		if sc.Kind == KindParallelTools {
			t.functionCall(fns[min(1, len(fns)-1)], sc.Text)
		}
	case KindCustomTool:
		cts := toolsOf(p.tools, "custom")
		if len(cts) == 0 {
			t.message("output_text", "fakeupstream: scenario custom_tool needs a custom tool in the request", "completed")
			break
		}
		id, _ := s.nextID("ctc_", 48)
		call, _ := s.nextID("call_", 24)
		t.items = append(t.items, &outItem{Type: "custom_tool_call", ID: id, CallID: call, Name: cts[0].Name, Text: applyPatch, Status: "completed"})
	case KindRefusal:
		t.message("refusal", refusalText, "completed")
	case KindLength, KindContentFilter:
		t.status, t.incomplete = "incomplete", "max_output_tokens"
		if sc.Kind == KindContentFilter {
			t.incomplete = "content_filter"
		}
		t.message("output_text", firstHalf(text), "incomplete")
	case KindEchoItems:
		if sc.Text == "" {
			text = echoItems(p.items)
		}
		t.message("output_text", text, "completed")
	case KindToolResults:
		if sc.Text == "" {
			text = "tool results received: " + strings.Join(trailingCallIDs(p.items), ", ")
		}
		t.message("output_text", text, "completed")
	default: // text, slow, drift, failed, error_*, cut, malformed
		t.message("output_text", text, "completed")
	}
	if sc.Kind == KindFailed {
		t.status = "failed"
	}
	t.usage = t.computeUsage()
	return t
}

// reasoning issues the turn's reasoning item with a ciphertext bound to its
// id, the response id and the API key.
func (t *turn) reasoning(userText, apiKey string) *outItem {
	id, _ := t.srv.nextID("rs_", 48)
	c := claims{Item: id, Response: t.respID, KeyHash: keyHash(apiKey),
		Thought: "The user wrote: " + truncateRunes(userText, 200)}
	it := &outItem{Type: "reasoning", ID: id, Enc: t.srv.seal.seal(c, "completed")}
	it.EncDone = it.Enc
	if t.sc.Kind == KindDrift {
		it.EncDone = t.srv.seal.seal(c, "done")
	}
	if t.p.summary != "" {
		it.Summary = "**Considering the request** I will answer it directly."
	}
	return it
}

// message appends an assistant message with one content part.
func (t *turn) message(partType, text, status string) {
	id, _ := t.srv.nextID("msg_", 48)
	t.items = append(t.items, &outItem{Type: "message", ID: id, PartType: partType, Text: text, Status: status})
}

// functionCall appends a function_call to tool with the given arguments,
// or generated ones when args is empty.
func (t *turn) functionCall(tool toolDef, args string) {
	id, _ := t.srv.nextID("fc_", 48)
	call, _ := t.srv.nextID("call_", 24)
	if args != "" {
		t.items = append(t.items, &outItem{Type: "function_call", ID: id, CallID: call, Name: tool.Name, Text: args, Status: "completed"})
		return
	}
	generated := map[string]string{}
	for _, name := range tool.Required {
		generated[name] = "fake-" + name
	}
	b, err := json.Marshal(generated)
	if err != nil {
		b = []byte("{}")
	}
	t.items = append(t.items, &outItem{Type: "function_call", ID: id, CallID: call, Name: tool.Name, Text: string(b), Status: "completed"})
}

// toolsOf filters tools by type.
func toolsOf(tools []toolDef, typ string) []toolDef {
	var out []toolDef
	for _, t := range tools {
		if t.Type == typ {
			out = append(out, t)
		}
	}
	return out
}

// computeUsage derives deterministic, non-zero token counts.
func (t *turn) computeUsage() map[string]any {
	in := max(8, len(t.p.fields)*4+len(t.p.items)*12)
	for _, it := range t.p.items {
		in += utf8.RuneCountInString(it.Text) / 4
	}
	out := reasoningTokens
	for _, it := range t.items {
		if it.Type != "reasoning" {
			out += utf8.RuneCountInString(it.Text)/4 + 1
		}
	}
	return map[string]any{
		"input_tokens":          in,
		"input_tokens_details":  map[string]any{"cached_tokens": in / 2, "cache_write_tokens": 0},
		"output_tokens":         out,
		"output_tokens_details": map[string]any{"reasoning_tokens": reasoningTokens},
		"total_tokens":          in + out,
	}
}

// httpStatus is the status the turn answers with.
func (t *turn) httpStatus() int {
	switch {
	case t.sc.Invalid != "":
		return http.StatusBadRequest
	case t.sc.Kind == KindHTTPError:
		return t.httpErrorStatus()
	case (t.sc.Kind == KindErrorFlat || t.sc.Kind == KindErrorNested) && !t.p.stream:
		return http.StatusInternalServerError
	default:
		return http.StatusOK
	}
}

// httpErrorStatus is Scenario.Status, 500 when unset.
func (t *turn) httpErrorStatus() int {
	if t.sc.Status >= 400 && t.sc.Status <= 599 {
		return t.sc.Status
	}
	return http.StatusInternalServerError
}

// httpError is the error body of KindHTTPError for the scenario's status.
func (t *turn) httpError() *apiError {
	st := t.httpErrorStatus()
	e := &apiError{Status: st, Type: "server_error", Code: "server_error",
		Message: "The server had an error while processing your request. Sorry about that!"}
	switch {
	case st == http.StatusTooManyRequests:
		e.Type, e.Code = "requests", "rate_limit_exceeded"
		e.Message = fmt.Sprintf("Rate limit reached for %s on requests per min (RPM): Limit 1, Used 1, Requested 1. Please try again in 1s.", t.p.model)
	case st == http.StatusUnauthorized:
		e.Type, e.Code, e.Message = "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
	case st == http.StatusForbidden:
		e.Type, e.Code, e.Message = "permission_error", "permission_denied", "You are not allowed to sample from this model."
	case st == http.StatusNotFound:
		e.Type, e.Code = "invalid_request_error", "model_not_found"
		e.Message = fmt.Sprintf("The model '%s' does not exist or you do not have access to it.", t.p.model)
	case st == http.StatusServiceUnavailable:
		e.Code, e.Message = "server_is_overloaded", "The server is overloaded or not ready yet."
	case st < 500:
		e.Type, e.Code, e.Message = "invalid_request_error", "invalid_request", "The request was rejected by the fake upstream."
	}
	if t.sc.Code != "" {
		e.Code = t.sc.Code
	}
	return e
}

// failure returns the error code and message of failed and error scenarios.
func (t *turn) failure() (string, string) {
	code := t.sc.Code
	if code == "" {
		code = "server_error"
	}
	return code, "The server had an error while processing your request. Sorry about that!"
}

// firstHalf returns the first half of s (at least one rune when s is not empty).
func firstHalf(s string) string {
	r := []rune(s)
	if len(r) == 0 {
		return ""
	}
	return string(r[:max(1, len(r)/2)])
}

// truncateRunes shortens s to at most n runes.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// split cuts s into at most n non-empty pieces of near-equal rune length;
// the pieces concatenate to s.
func split(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return []string{""}
	}
	n = min(n, len(r))
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}
