package reasoningcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// Outcome is a finished upstream response as the handler received it.
type Outcome struct {
	// Status is the Responses status: completed, incomplete, failed, ...
	Status string
	// Model is the response's model, the snapshot (e.g.
	// "gpt-5.2-2025-12-11").
	Model string
	// Output is the terminal copy of the output items
	// (response.completed's output, or the JSON body's output).
	Output []json.RawMessage
	// DoneItems are the response.output_item.done copies indexed by
	// output_index (streams only; nil for a JSON body).
	DoneItems []json.RawMessage
	// Sent is exactly what the client received.
	Sent Sent
	// RecordExceeded reports that the recording stopped keeping output
	// items at the entry allowance, or because Session.GrowRecord
	// refused them, while it accumulated them: the output is not known,
	// so its position is poisoned (record_over_budget).
	RecordExceeded bool
}

// Sent is what the client received, in Chat terms.
type Sent struct {
	// Content is the assistant text sent to the client.
	Content string
	// Refusal is the refusal text sent to the client.
	Refusal string
	// ToolCalls are the tool calls sent to the client, in order.
	ToolCalls []ToolCall
}

// ToolCall is one tool call sent to the client.
type ToolCall struct {
	// ID, Name and Arguments are the call's id, function name and
	// arguments exactly as sent.
	ID, Name, Arguments string
	// Custom marks an upstream custom_tool_call sent to the client as a
	// function call (Arguments is its input).
	Custom bool
}

// outItem is what record reads of an output item.
type outItem struct {
	Type             string  `json:"type"`
	ID               string  `json:"id"`
	Role             string  `json:"role"`
	EncryptedContent *string `json:"encrypted_content"`
	Content          []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Input     string `json:"input"`
}

// verdict is recording's decision about one output.
type verdict struct {
	poison    string // non-empty: the outcome is unknown; poison the position
	observe   bool   // commit an observation
	admit     bool   // with a payload
	endDigest string
	envFP     string
	why       string // log code when observed but not admitted
}

// Complete records the finished upstream response and moves the intent to
// delivery. Call it before writing the terminal chunk or the JSON body: it
// returns once the ledger has committed. It never makes an otherwise valid
// response fail: problems with the recording (a projection that does not
// match what the client received, drifting copies, an unpredictable
// envelope) become a start-poison marker at the request's position. A
// returned error only reports that the ledger could not commit the
// observation or the poison; the handler may still deliver, because the
// session then never resolves the intent cleanly: Delivered and Release
// poison the position, and if that fails too the intent stays unresolved
// until Sweep or the next startup poisons it. Complete runs at most once
// per session; on a pass-through session it does nothing.
func (s *Session) Complete(ctx context.Context, out Outcome) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.completed || s.intent == 0 {
		return nil
	}
	s.completed = true
	e := s.e
	if s.replayed > 0 {
		e.counters.replaySuccesses.Add(1)
	}
	v, payload := s.judge(&out)
	if v.poison != "" {
		s.log.Debug("reasoning cache", zap.String("reason", v.poison))
		err := e.store.PoisonIntent(ctx, s.intent, v.poison)
		if err != nil && !ledger.IsReason(err, ledger.ReasonIntentMissing) {
			s.unrecorded = v.poison
			return fmt.Errorf("reasoningcache: complete: %w", err)
		}
		if err == nil {
			e.counters.poisoned("unrecordable", 1)
		}
		s.intent = 0
		return nil
	}
	if !v.observe {
		s.log.Debug("reasoning cache", zap.String("reason", v.why))
		return nil
	}
	req := ledger.CommitObservationRequest{
		IntentID: s.intent, EndDigest: v.endDigest, EnvelopeFP: v.envFP,
		PayloadFP: hashHex(payload), OutputHash: outputHash(&out.Sent, payload),
		Replayable: v.admit, ModelSnapshot: out.Model, MoveToDelivery: true,
	}
	if len(req.ModelSnapshot) > 256 {
		req.ModelSnapshot, req.Replayable = "", false
	}
	if req.Replayable {
		req.Payload = payload
	}
	res, err := e.store.CommitObservation(ctx, req)
	if err != nil {
		if ledger.IsReason(err, ledger.ReasonIntentMissing) {
			s.intent = 0 // swept meanwhile: its position is poisoned already
			return nil
		}
		s.unrecorded = "commit_failed"
		s.log.Debug("reasoning cache", zap.String("reason", "commit_failed"))
		return fmt.Errorf("reasoningcache: complete: %w", err)
	}
	e.counters.committed(res, len(req.Payload))
	reason := string(res.Outcome)
	if !v.admit && res.Outcome == ledger.OutcomeStored {
		reason = "observed_" + v.why
	}
	s.log.Debug("reasoning cache", zap.String("reason", reason))
	return nil
}

// judge checks the recording and predicts the client's next envelope. It
// returns the payload (the terminal output array) with the verdict.
func (s *Session) judge(out *Outcome) (verdict, []byte) {
	e := s.e
	var v verdict
	if out.RecordExceeded || !s.chargeOutcome(out, arrayLen(out.Output)) {
		// stopped at the entry allowance, or the memory budget could not
		// hold it: the output is not known
		v.poison = "record_over_budget"
		return v, nil
	}
	switch out.Status {
	case "completed":
	case "incomplete":
		// The design: failed or incomplete output poisons its position
		// (a cut-off answer is not one the model would give again).
		v.poison = "incomplete"
		return v, nil
	default:
		v.poison = "unknown_outcome"
		return v, nil
	}
	payload := joinArray(out.Output)
	items := make([]outItem, len(out.Output))
	for i, raw := range out.Output {
		if json.Unmarshal(raw, &items[i]) != nil {
			v.poison = "record_invalid"
			return v, nil
		}
	}
	if out.DoneItems != nil {
		if r := checkDoneCopies(out.Output, out.DoneItems, items); r != "" {
			v.poison = r
			return v, nil
		}
	}
	visible, supported, reasoning := project(items)
	if !sameSent(&visible, &out.Sent) {
		v.poison = "projection_mismatch"
		return v, nil
	}
	if visible.Refusal != "" {
		// How a client echoes a refusal is not known: never guess.
		v.poison = "refusal_unpredictable"
		return v, nil
	}
	if visible.Content == "" && len(visible.ToolCalls) == 0 {
		// Nothing visible: the client has no envelope another output
		// could be confused with.
		v.why = "empty_output"
		return v, nil
	}
	envs, r := predict(s.shape, &visible)
	if r != "" {
		v.poison = r
		return v, nil
	}
	b, err := s.d.Extend(envs...)
	if err != nil {
		v.poison = "prediction_refused"
		return v, nil
	}
	// Observation first: whether the payload fits decides only admission.
	v.observe, v.endDigest, v.envFP = true, b.EndDigest.String(), b.Fingerprint.String()
	switch {
	case int64(len(payload)) > min(e.cfg.EntryAllowance, e.store.MaxPayloadBytes()):
		v.why = "record_over_budget"
	case !supported:
		v.why = "unsupported_item"
	case !reasoning:
		v.why = "no_reasoning"
	default:
		v.admit = true
	}
	return v, payload
}

// project computes what the original output shows a Chat client: the
// concatenated output_text of message items, their refusal parts and the
// tool calls in order. supported is false when an item or part is one the
// relay does not replay; reasoning reports at least one reasoning item and
// every reasoning item carrying an id and non-empty ciphertext (an item
// without ciphertext cannot be replayed under store:false: the upstream
// answers 404).
func project(items []outItem) (visible Sent, supported, reasoning bool) {
	supported = true
	seen, complete := false, true
	defer func() { reasoning = seen && complete }()
	for _, it := range items {
		switch it.Type {
		case "reasoning":
			seen = true
			if it.EncryptedContent == nil || *it.EncryptedContent == "" || it.ID == "" {
				complete = false
			}
		case "message":
			if it.Role != "assistant" {
				supported = false
			}
			for _, part := range it.Content {
				switch part.Type {
				case "output_text":
					visible.Content += part.Text
				case "refusal":
					visible.Refusal += part.Refusal
				default:
					supported = false
				}
			}
		case "function_call":
			visible.ToolCalls = append(visible.ToolCalls, ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
		case "custom_tool_call":
			visible.ToolCalls = append(visible.ToolCalls, ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Input, Custom: true})
		default:
			supported = false
		}
	}
	return visible, supported, reasoning
}

func sameSent(a, b *Sent) bool {
	if a.Content != b.Content || a.Refusal != b.Refusal || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i] != b.ToolCalls[i] {
			return false
		}
	}
	return true
}

// checkDoneCopies accepts the output_item.done copies only when each
// matches its terminal copy: for reasoning items both ciphertexts are
// non-empty, the ids are equal and every other field is equal (the
// ciphertext bytes may differ; the terminal copy is kept); every other
// item is equal as a whole.
func checkDoneCopies(terminal, done []json.RawMessage, items []outItem) string {
	if len(done) != len(terminal) {
		return "done_copy_mismatch"
	}
	for i := range terminal {
		if len(done[i]) == 0 {
			return "done_copy_missing"
		}
		t := items[i]
		if bytes.Equal(terminal[i], done[i]) && isObject(done[i]) {
			// the same bytes: equal as a whole; a reasoning item still
			// needs its id and ciphertext
			if t.Type == "reasoning" && (t.ID == "" || t.EncryptedContent == nil || *t.EncryptedContent == "") {
				return "done_copy_mismatch"
			}
			continue
		}
		var d outItem
		if json.Unmarshal(done[i], &d) != nil {
			return "done_copy_invalid"
		}
		if t.Type == "reasoning" || d.Type == "reasoning" {
			if t.Type != d.Type || t.ID == "" || t.ID != d.ID ||
				t.EncryptedContent == nil || d.EncryptedContent == nil ||
				*t.EncryptedContent == "" || *d.EncryptedContent == "" {
				return "done_copy_mismatch"
			}
			if !equalExcept(terminal[i], done[i], "encrypted_content") {
				return "done_copy_mismatch"
			}
			continue
		}
		if !equalExcept(terminal[i], done[i], "") {
			return "done_copy_mismatch"
		}
	}
	return ""
}

// isObject reports whether a valid JSON value is an object (not null).
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// equalExcept compares two JSON objects as values, ignoring member skip.
func equalExcept(a, b json.RawMessage, skip string) bool {
	decode := func(raw json.RawMessage) (map[string]any, bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) != nil || m == nil {
			return nil, false
		}
		if skip != "" {
			delete(m, skip)
		}
		return m, true
	}
	ma, okA := decode(a)
	mb, okB := decode(b)
	return okA && okB && reflect.DeepEqual(ma, mb)
}

// arrayLen is the length of joinArray(items).
func arrayLen(items []json.RawMessage) int64 {
	n := int64(2)
	for _, it := range items {
		n += int64(len(it)) + 1
	}
	return n
}

// joinArray is the JSON array of the items, each kept byte for byte.
func joinArray(items []json.RawMessage) []byte {
	b := make([]byte, 0, arrayLen(items))
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

func hashHex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// outputHash identifies an output for repeat detection: what the client
// received and the original payload, framed. The same visible output with
// a different payload is a different output (an end conflict).
func outputHash(sent *Sent, payload []byte) string {
	h := sha256.New()
	frame := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	frame("caddy-reasoning-relay/output/v1")
	frame(sent.Content)
	frame(sent.Refusal)
	for _, c := range sent.ToolCalls {
		custom := "function"
		if c.Custom {
			custom = "custom"
		}
		frame(c.ID)
		frame(c.Name)
		frame(c.Arguments)
		frame(custom)
	}
	frame(string(payload))
	return hex.EncodeToString(h.Sum(nil))
}
