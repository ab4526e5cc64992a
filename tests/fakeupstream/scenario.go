package fakeupstream

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind names what the fake answers with.
type Kind string

// The scenarios of the default script; see the package brief in doc.go and
// ParseScenario for the token syntax.
const (
	KindText          Kind = "text"           // reasoning, then an assistant message "echo: <user text>"
	KindTool          Kind = "tool"           // reasoning, then one function_call
	KindParallelTools Kind = "parallel_tools" // reasoning, then two function_calls
	KindCustomTool    Kind = "custom_tool"    // reasoning, then one custom_tool_call with an ApplyPatch text
	KindRefusal       Kind = "refusal"        // a message with a refusal part
	KindLength        Kind = "length"         // incomplete, reason max_output_tokens, partial text
	KindContentFilter Kind = "content_filter" // incomplete, reason content_filter, partial text
	KindFailed        Kind = "failed"         // response.failed (JSON: status failed)
	KindErrorFlat     Kind = "error_flat"     // a few deltas, then a documented flat error event
	KindErrorNested   Kind = "error_nested"   // a few deltas, then an error event with a nested error object
	KindCut           Kind = "cut"            // a few deltas, then the body ends without a terminal event ("cut:abort": the connection drops mid-body)
	KindMalformed     Kind = "malformed"      // a few events, then a data line that is not JSON
	KindSlow          Kind = "slow"           // the text scenario with Scenario.Delay between events
	KindHTTPError     Kind = "http_error"     // a non-2xx JSON error with Scenario.Status before any stream byte
	KindDrift         Kind = "drift"          // text, but output_item.done and response.completed carry different ciphertext
	KindEchoItems     Kind = "echo_items"     // the message text is a JSON summary of the input items
	KindToolResults   Kind = "tool_results"   // text "tool results received: <call ids>"
)

// kinds lists the token names ParseScenario accepts.
var kinds = []Kind{KindText, KindTool, KindParallelTools, KindCustomTool, KindRefusal,
	KindLength, KindContentFilter, KindFailed, KindErrorFlat, KindErrorNested, KindCut,
	KindMalformed, KindSlow, KindHTTPError, KindDrift, KindEchoItems, KindToolResults}

// Scenario says how one request is answered. The zero value is KindText.
type Scenario struct {
	Kind   Kind          // what to answer; "" means KindText
	Text   string        // message text, or KindTool/KindParallelTools arguments; "" lets the kind choose (e.g. "echo: <user text>")
	Delay  time.Duration // pause between SSE events; 0 uses Options.Delay
	Status int           // KindHTTPError: the HTTP status (default 500)
	Code   string        // error code for KindFailed, KindErrorFlat/Nested, KindHTTPError; "" picks a default
	Abort  bool          // KindCut with stream:true: drop the connection without the final chunk (client sees unexpected EOF)
	// Invalid, when not empty, makes the fake answer 400 with this message
	// (code "fake_invalid_scenario"): used for unknown or malformed tokens
	// so that a typo in a test fails loudly.
	Invalid string
}

// tokenPattern matches "[[name]]" or "[[name:arg]]".
var tokenPattern = regexp.MustCompile(`\[\[([a-z_]+)(?::([^\]]*))?\]\]`)

// ParseScenario finds the first "[[name]]" or "[[name:arg]]" token in text
// and returns the scenario it names and text with every token removed and
// surrounding space trimmed. Text without a token gives KindText. Arguments:
// "slow:<duration>" (Go duration, e.g. 50ms), "http_error:<status>",
// "cut:abort", and an optional error code for "failed", "error_flat",
// "error_nested".
func ParseScenario(text string) (Scenario, string) {
	m := tokenPattern.FindStringSubmatch(text)
	rest := strings.TrimSpace(tokenPattern.ReplaceAllString(text, ""))
	if m == nil {
		return Scenario{Kind: KindText}, rest
	}
	name, arg := Kind(m[1]), m[2]
	sc := Scenario{Kind: name}
	if !slices.Contains(kinds, name) {
		sc.Invalid = fmt.Sprintf("fakeupstream: unknown scenario token %q", m[0])
		return sc, rest
	}
	switch name {
	case KindSlow:
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			sc.Invalid = fmt.Sprintf("fakeupstream: scenario %q needs a duration argument such as [[slow:50ms]]", m[0])
		}
		sc.Delay = d
	case KindHTTPError:
		st, err := strconv.Atoi(arg)
		if err != nil || st < 400 || st > 599 {
			sc.Invalid = fmt.Sprintf("fakeupstream: scenario %q needs a status 400-599 such as [[http_error:429]]", m[0])
		}
		sc.Status = st
	case KindFailed, KindErrorFlat, KindErrorNested:
		sc.Code = arg
	case KindCut:
		switch arg {
		case "":
		case "abort":
			sc.Abort = true
		default:
			sc.Invalid = fmt.Sprintf("fakeupstream: scenario %q takes no argument or \"abort\"", m[0])
		}
	default:
		if arg != "" {
			sc.Invalid = fmt.Sprintf("fakeupstream: scenario %q takes no argument", m[0])
		}
	}
	return sc, rest
}

// DefaultScript is the script used when none is set. If the last input item
// is a function_call_output or custom_tool_call_output it answers
// KindToolResults; otherwise it parses the token in the text of the last
// user message (ParseScenario).
func DefaultScript(r *Request) Scenario {
	items := r.items()
	if n := len(items); n > 0 && (items[n-1].Type == "function_call_output" || items[n-1].Type == "custom_tool_call_output") {
		return Scenario{Kind: KindToolResults}
	}
	sc, _ := ParseScenario(lastUserText(items))
	return sc
}

// lastUserText is the text of the last user message in items.
func lastUserText(items []inputItem) string {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Type == "message" && items[i].Role == "user" {
			return items[i].Text
		}
	}
	return ""
}

// trailingCallIDs lists the call ids of the tool outputs at the end of items.
func trailingCallIDs(items []inputItem) []string {
	var ids []string
	for i := len(items) - 1; i >= 0; i-- {
		t := items[i].Type
		if t != "function_call_output" && t != "custom_tool_call_output" {
			break
		}
		ids = append([]string{items[i].CallID}, ids...)
	}
	return ids
}

// itemSummary is one entry of the KindEchoItems text.
type itemSummary struct {
	Type      string   `json:"type"`
	Role      string   `json:"role,omitempty"`
	Phase     string   `json:"phase,omitempty"`
	ID        string   `json:"id,omitempty"`
	CallID    string   `json:"call_id,omitempty"`
	Name      string   `json:"name,omitempty"`
	Parts     []string `json:"parts,omitempty"`
	Encrypted bool     `json:"encrypted_content,omitempty"`
}

// echoItems renders the JSON summary of the input items for KindEchoItems.
func echoItems(items []inputItem) string {
	out := make([]itemSummary, len(items))
	for i, it := range items {
		out[i] = itemSummary{Type: it.Type, Role: it.Role, Phase: it.Phase, ID: it.ID,
			CallID: it.CallID, Name: it.Name, Parts: it.Parts, Encrypted: it.Encrypted != ""}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "[]"
	}
	return string(b)
}
